"""``tensor/ops/complex_ops.py``: ``angle`` of real inputs (its infinities, NaN, -0.0 and dtypes)."""

from __future__ import annotations

import math

import pytest

import tensor
from tests.helpers import assert_close


@pytest.mark.parametrize("values,dtype", [
    ([0.0, -0.0, -1.0, math.nan, math.inf, -math.inf], "float32"),
    ([0.0, -1.0, math.inf, -math.inf], "float16"),
    ([1.0, -2.0], "bfloat16"),
    ([0, -1, 3], "int64"),
    ([True, False], "bool"),
])
def test_angle_of_real_inputs_matches_torch(torch, values, dtype):
    ours = tensor.angle(tensor.tensor(values, dtype=getattr(tensor, dtype)))
    theirs = torch.angle(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours.double(), theirs.double().numpy())


def test_angle_of_real_inputs_has_a_zero_gradient():
    x = tensor.tensor([-1.0, 2.0, math.inf], requires_grad=True)
    tensor.angle(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("abs_dtype,angle_dtype", [
    ("int64", "float32"), ("float32", "int64"), ("float32", "float64"), ("float64", "float32"),
    ("float16", "float16"), ("bfloat16", "bfloat16"), ("float64", "float64"),
])
def test_polar_refuses_dtypes_as_torch(torch, abs_dtype, angle_dtype):
    results = []
    for lib in (tensor, torch):
        try:
            out = lib.polar(lib.ones(2, dtype=getattr(lib, abs_dtype)), lib.ones(2, dtype=getattr(lib, angle_dtype)))
            results.append(out.dtype.name if lib is tensor else str(out.dtype).removeprefix("torch."))
        except Exception as exc:  # noqa: BLE001 - the class is the result compared
            results.append(type(exc).__name__)
    assert results[0] == results[1]
