"""A deterministic problem shared by the optimizer tests: a few parameters (matrix, vector,
0-d scalar, a non-contiguous transposed matrix, and one that never gets a gradient) and the
gradient of a weighted quadratic loss, computed by each framework from its own parameters."""

from __future__ import annotations

import numpy as np

import nn
import tensor

SHAPES = [(4, 3), (5,), (), (3, 2)]


def initial_arrays(dtype: str, seed: int = 0) -> list[np.ndarray]:
    """Starting values of the parameters, plus the one that gets no gradient (last)."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    arrays.append(rng.standard_normal(3).astype(dtype))
    return arrays


def _targets(dtype: str) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1234)
    return [(rng.uniform(0.2, 3.0, shape).astype(dtype), rng.standard_normal(shape).astype(dtype))
            for shape in SHAPES]


def ours_params(arrays: list[np.ndarray], device: str) -> list[nn.Parameter]:
    """Our parameters; the fourth is stored transposed (non-contiguous)."""
    params = []
    for i, a in enumerate(arrays):
        if i == 3:
            params.append(nn.Parameter(tensor.tensor(np.ascontiguousarray(a.T), device=device).t()))
        else:
            params.append(nn.Parameter(tensor.tensor(a, device=device)))
    return params


def torch_params(torch, arrays: list[np.ndarray]):
    """The same parameters in torch."""
    return [torch.nn.Parameter(torch.tensor(a)) for a in arrays]


def set_ours_grads(params, sign: float = 1.0) -> None:
    """grad = 2 c (p - t) (+ a cubic term, so the gradient is not linear) for all but the last param.

    ``sign=-1`` gives the gradient of the negated loss (for ``maximize``, so it stays bounded).
    """
    dtype = str(params[0].dtype).split(".")[-1]
    for p, (c, t) in zip(params, _targets(dtype)):
        x = p.detach() - tensor.tensor(t, device=p.device)
        p.grad = (2 * tensor.tensor(c, device=p.device) * x + 0.1 * x * x * x) * sign


def set_torch_grads(torch, params, sign: float = 1.0) -> None:
    """The same gradient in torch."""
    dtype = str(params[0].dtype).split(".")[-1]
    for p, (c, t) in zip(params, _targets(dtype)):
        x = p.detach() - torch.tensor(t)
        p.grad = (2 * torch.tensor(c) * x + 0.1 * x * x * x) * sign


def to_numpy(t) -> np.ndarray:
    """A host copy of a tensor of either framework."""
    if isinstance(t, tensor.Tensor):
        return t.detach().cpu().numpy()
    return t.detach().cpu().numpy()


def assert_arrays_close(actual, expected, rtol: float, atol: float, message: str = "") -> None:
    """Values agree within ``rtol``, with ``atol`` at least ``rtol`` times the largest magnitude
    (rounding differences in a sum are relative to its terms, not to a small result)."""
    actual, expected = to_numpy(actual), to_numpy(expected)
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=max(atol, rtol * scale), err_msg=message)


def assert_params_close(ours, theirs, rtol: float, atol: float, message: str = "") -> None:
    """Every parameter of ours equals torch's within the tolerance."""
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_arrays_close(a, b, rtol, atol, f"param {i} {message}")
