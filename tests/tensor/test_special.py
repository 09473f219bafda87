"""``tensor.special`` (tensor/special.py, with erfcx's kernel in tensor/ops/special.py): erfcx in
the far tail, xlog1py with a Python number, ndtr/log_ndtr of bool and ndtri in float32."""

from __future__ import annotations

import math

import pytest

import tensor
from tests.helpers import assert_close

ERFCX_POINTS = [-30.0, -5.0, 0.0, 0.5, 2.0, 2.99, 3.0, 5.0, 10.0, 26.0, 30.0, 100.0, 1e10, 1e200,
                math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_erfcx_is_accurate_for_large_x(torch, dtype):
    ours = tensor.special.erfcx(tensor.tensor(ERFCX_POINTS, dtype=getattr(tensor, dtype)))
    theirs = torch.special.erfcx(torch.tensor(ERFCX_POINTS, dtype=getattr(torch, dtype)))
    assert ours.dtype.name == dtype
    assert_close(ours, theirs.numpy(), rtol=1e-13 if dtype == "float64" else 1e-6, atol=0)


def test_erfcx_gradient_matches_torch(torch):
    points = [-1.0, 0.5, 2.9, 3.1, 30.0]
    grads = []
    for lib in (tensor, torch):
        x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
        lib.special.erfcx(x).sum().backward()
        grads.append(x.grad.numpy())
    assert_close(grads[0], grads[1], rtol=1e-10, atol=0)


# (id, call on a library): each is compared with torch's result, dtype first.
CALLS = [
    ("xlog1py_scalar_other", lambda m: m.special.xlog1py(m.tensor([1.0, 2.0]), 2.0)),
    ("xlog1py_scalar_input", lambda m: m.special.xlog1py(2, m.tensor([1.0, 2.0]))),
    ("xlog1py_int", lambda m: m.special.xlog1py(m.tensor([1, 2]), m.tensor([1, 2]))),
    ("ndtr_bool", lambda m: m.special.ndtr(m.tensor([True, False]))),
    ("log_ndtr_bool", lambda m: m.special.log_ndtr(m.tensor([True, False]))),
    ("ndtri_float32_tail", lambda m: m.special.ndtri(m.tensor([1e-10, 0.3, 1 - 1e-7, 0.0, 1.0]))),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_values_and_dtypes_match_torch(torch, call):
    ours, theirs = call(tensor), call(torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours, theirs.numpy(), rtol=1e-6, atol=0)


BFLOAT16_FUNCTIONS = ["erf", "erfc", "erfinv", "digamma", "gammaln", "ndtr", "psi", "expit"]


@pytest.mark.parametrize("name", BFLOAT16_FUNCTIONS)
def test_bfloat16_input_gives_bfloat16_like_torch(torch, name):
    values = [-0.9, -0.3, 0.2, 0.7, 0.95] if name == "erfinv" else [0.3, 0.9, 1.7, 2.5, 4.0]
    x = tensor.tensor(values, dtype=tensor.bfloat16, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.bfloat16, requires_grad=True)
    ours, theirs = getattr(tensor.special, name)(x), getattr(torch.special, name)(tx)
    assert ours.dtype is tensor.bfloat16 and theirs.dtype == torch.bfloat16
    assert_close(ours.float(), theirs.float().detach().numpy(), rtol=1e-2, atol=1e-2)
    ours.float().sum().backward()
    theirs.float().sum().backward()
    assert x.grad.dtype is tensor.bfloat16
    assert_close(x.grad.float(), tx.grad.float().numpy(), rtol=2e-2, atol=2e-2)
