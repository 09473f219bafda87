"""``tensor/ops/math_extra.py``: hypot, fmod, lerp, copysign, xlogy, logaddexp(2), nan_to_num,
logit and atan2, checked against torch (values, dtypes and gradients at their edge cases)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

NAN, INF = math.nan, math.inf


def _grads(lib, fn, *values):
    """The gradients of ``fn(*inputs).sum()`` w.r.t. float64 leaves holding ``values``."""
    leaves = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in values]
    fn(*leaves).sum().backward()
    return [leaf.grad.numpy() for leaf in leaves]


def _same(ours, theirs, **tol):
    """``ours`` has torch's ``theirs``'s dtype and values (bfloat16 compared in float64)."""
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    if theirs.is_complex():
        assert_close(ours, theirs.numpy(), **tol)
    else:
        assert_close(ours.double(), theirs.double().numpy(), **tol)


# (id, call on a library): each is compared with torch's result, dtype first.
CALLS = [
    ("hypot_no_overflow", lambda m: m.hypot(m.tensor([1e20, 1e-30, 3e38]), m.tensor([1e20, 1e-30, 1.0]))),
    ("hypot_float16", lambda m: m.hypot(m.tensor([3.0], dtype=m.float16), m.tensor([4.0], dtype=m.float16))),
    ("hypot_promotes", lambda m: m.hypot(m.tensor([3.0]), m.tensor([4.0], dtype=m.float64))),
    ("fmod_inf_divisor", lambda m: m.fmod(m.tensor([5.0, -5.0]), INF)),
    ("fmod_large_dividend", lambda m: m.fmod(m.tensor([1e30], dtype=m.float64), 3.3)),
    ("fmod_int", lambda m: m.fmod(m.tensor([5, -5]), 3)),
    ("fmod_int_by_float", lambda m: m.fmod(m.tensor([5, -5]), 2.5)),
    ("fmod_bfloat16", lambda m: m.fmod(m.tensor([5.0], dtype=m.bfloat16), 3)),
    ("lerp_weight_one", lambda m: m.lerp(m.tensor([1e8]), m.tensor([1.0]), 1.0)),
    ("lerp_tensor_weight", lambda m: m.lerp(m.tensor([1e8, 1.0]), m.tensor([1.0, 3.0]), m.tensor([1.0, 0.25]))),
    ("copysign_promotes", lambda m: m.copysign(m.tensor([1.0]), m.tensor([-1.0], dtype=m.float64))),
    ("copysign_float16", lambda m: m.copysign(m.tensor([1.0], dtype=m.float16), m.tensor([-1.0], dtype=m.float16))),
    ("copysign_int", lambda m: m.copysign(m.tensor([1, 2]), m.tensor([-1]))),
    ("copysign_negative_zero", lambda m: m.copysign(m.tensor([1.0, 2.0]), m.tensor([-0.0, 0.0]))),
    ("xlogy_float16_scalar", lambda m: m.xlogy(m.tensor([2.0], dtype=m.float16), 3)),
    ("xlogy_scalar_first", lambda m: m.xlogy(2.0, m.tensor([3.0], dtype=m.float16))),
    ("xlogy_int8_large_scalar", lambda m: m.xlogy(m.tensor([1, 2], dtype=m.int8), 1000)),
    ("xlogy_nan", lambda m: m.xlogy(m.tensor([0.0, 1.0]), m.tensor([NAN, 0.0]))),
    ("logaddexp2_float16_int", lambda m: m.logaddexp2(m.tensor([2.0], dtype=m.float16), m.tensor([2]))),
    ("logaddexp_complex", lambda m: m.logaddexp(m.tensor([1.0, 0.5]), m.tensor([1 + 1j, 2.0]))),
    ("logaddexp_far_apart", lambda m: m.logaddexp(m.tensor([-1000.0, 1e30]), m.tensor([-1000.0, 1.0]))),
    ("nan_to_num_bfloat16", lambda m: m.nan_to_num(m.tensor([NAN, INF, -INF], dtype=m.bfloat16))),
    ("nan_to_num_complex", lambda m: m.nan_to_num(m.tensor([complex(NAN, 1), complex(INF, 0)]))),
    ("logit_uint8", lambda m: m.logit(m.tensor([2], dtype=m.uint8))),
    ("logit_bool", lambda m: m.logit(m.tensor([True, False]))),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_values_and_dtypes_match_torch(torch, call):
    with np.errstate(invalid="ignore", divide="ignore"):
        _same(call(tensor), call(torch), rtol=1e-6, atol=0)


# (id, function of a library, inputs): gradients compared with torch's.
GRADIENTS = [
    ("atan2_at_origin", lambda m: m.atan2, ([0.0, 1.0], [0.0, 2.0])),
    ("hypot", lambda m: m.hypot, ([3.0, 1e200], [4.0, 1e200])),
    ("fmod", lambda m: m.fmod, ([5.0, -5.5], [3.0, 2.0])),
    ("copysign_at_zero", lambda m: m.copysign, ([0.0, -2.0, 3.0], [-1.0, 1.0, -0.0])),
    ("lerp_scalar_weight", lambda m: lambda a, b: m.lerp(a, b, 0.7), ([1.0, 2.0], [3.0, 5.0])),
    ("lerp_tensor_weight", lambda m: m.lerp, ([1.0, 2.0], [3.0, 5.0], [0.2, 0.7])),
    ("logaddexp", lambda m: m.logaddexp, ([1.0, 3.0], [2.0, -1.0])),
]


@pytest.mark.parametrize("fn,values", [g[1:] for g in GRADIENTS], ids=[g[0] for g in GRADIENTS])
def test_gradients_match_torch(torch, fn, values):
    for ours, theirs in zip(_grads(tensor, fn(tensor), *values), _grads(torch, fn(torch), *values)):
        assert_close(ours, theirs, rtol=1e-12, atol=0)


def test_isclose_on_complex_compares_the_modulus_of_the_difference(torch):
    a, b = [0.5 + 3j, 1 + 0j, complex("nan")], [1.5 + 2.5j, 1.9 + 0j, complex("nan")]
    for equal_nan in (False, True):
        ours = tensor.isclose(tensor.tensor(a), tensor.tensor(b), atol=1.0, equal_nan=equal_nan)
        theirs = torch.isclose(torch.tensor(a), torch.tensor(b), atol=1.0, equal_nan=equal_nan)
        assert ours.tolist() == theirs.tolist()
    assert not tensor.allclose(tensor.tensor(a[:1]), tensor.tensor(b[:1]), atol=1.0)


def test_addcdiv_takes_complex_operands(torch):
    ours = tensor.tensor([1 + 1j]).addcdiv(tensor.tensor([1 + 1j]), tensor.tensor([2 + 0j]), value=2)
    theirs = torch.tensor([1 + 1j]).addcdiv(torch.tensor([1 + 1j]), torch.tensor([2 + 0j]), value=2)
    assert ours.tolist() == theirs.tolist()
    with pytest.raises(RuntimeError, match="Integer division"):
        tensor.tensor([1]).addcdiv(tensor.tensor([True]), tensor.tensor([2]))


@pytest.mark.parametrize("values", [[1.5 + 1j], [True], [3]])
def test_frac_of_a_non_float_tensor_is_not_implemented(torch, values):
    with pytest.raises(NotImplementedError):
        torch.tensor(values).frac()
    with pytest.raises(NotImplementedError, match="frac_cpu"):
        tensor.tensor(values).frac()
