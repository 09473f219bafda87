"""Shared by the linalg tests against torch: random real/complex arrays and a gradient oracle."""

from __future__ import annotations

import numpy as np

import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(16)


def random(*shape, complex_: bool = False) -> np.ndarray:
    """A standard normal float64 (or complex128) array."""
    a = RNG.standard_normal(shape)
    return a + 1j * RNG.standard_normal(shape) if complex_ else a


def _weighted_sum(out, weights):
    product = out * weights
    return product.real.sum() if product.is_complex() else product.sum()


def grads_match(torch, ours_fn, torch_fn, arrays, atol: float = 1e-10) -> None:
    """Assert both functions' input gradients agree for one random real loss ``sum(re(out * w))``
    over all their (tuple of) floating outputs: PyTorch's complex gradient convention included."""
    ours = [tensor.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    outs, touts = ours_fn(*ours), torch_fn(*theirs)
    outs, touts = (outs, touts) if isinstance(outs, tuple) else ((outs,), (touts,))
    loss, tloss = 0, 0
    for out, tout in zip(outs, touts, strict=True):
        w = random(*tout.shape, complex_=tout.is_complex())
        loss = loss + _weighted_sum(out, tensor.tensor(w))
        tloss = tloss + _weighted_sum(tout, torch.tensor(w))
    loss.backward()
    tloss.backward()
    for a, t in zip(ours, theirs, strict=True):
        assert_close(a.grad, t.grad.resolve_conj().numpy(), atol=atol, rtol=1e-8)
