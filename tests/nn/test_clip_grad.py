"""``nn.utils.clip_grad``: total norms in torch's dtypes (per-tensor norms, float32 accumulation
for float16/bfloat16, real norms of complex gradients), compared with torch."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor

INF = float("inf")


def _params(lib, parameter, grads):
    params = []
    for values, dtype in grads:
        p = parameter(lib.zeros(len(values), dtype=getattr(lib, dtype)))
        p.grad = lib.tensor(values, dtype=getattr(lib, dtype))
        params.append(p)
    return params


CASES = [
    ([([300.0, 300.0], "float16")], 2.0),  # the squares overflow float16
    ([([3e4, 3e4, 3e4], "float16")], 2.0),  # the norm itself overflows: inf, as torch
    ([([1e-4, 1e-4], "float16")], 2.0),  # the squares underflow float16
    ([([0.5, 0.5], "float16"), ([1e5, 0.0], "float32")], 2.0),  # promoted: float32
    ([([300.0, -200.0], "bfloat16")], 2.0),
    ([([3 + 4j, 0j], "complex64")], 2.0),
    ([([3 + 4j, 0j], "complex64")], INF),
    ([([3 + 4j, 1j], "complex128"), ([2.0], "float32")], -INF),
    ([([300.0, 300.0], "float16")], 1.0),
]


@pytest.mark.parametrize(("grads", "norm_type"), CASES, ids=str)
def test_clip_grad_norm_matches_torch(grads, norm_type, torch):
    ours = _params(tensor, nn.Parameter, grads)
    theirs = _params(torch, torch.nn.Parameter, grads)
    ours_norm = nn.utils.clip_grad_norm_(ours, 1.0, norm_type)
    torch_norm = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type)
    assert str(ours_norm.dtype).split(".")[-1] == str(torch_norm.dtype).split(".")[-1]
    np.testing.assert_allclose(ours_norm.float().numpy(), torch_norm.float().numpy(), rtol=1e-3)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.to(tensor.complex128 if a.is_complex() else tensor.float64).numpy(),
                                   b.grad.to(torch.complex128 if b.is_complex() else torch.float64).numpy(),
                                   rtol=2e-3)
