"""``tensor/ops/more_ops.py``: rsub, float_power, ldexp, fmax/fmin, the split helpers and
std_mean/var_mean, checked against torch (values, dtypes, shapes, gradients and errors)."""

from __future__ import annotations

import math

import pytest

import tensor
from tests.helpers import assert_close

NAN = math.nan
# (id, call on a library): each is compared with torch's result, dtype first.
CALLS = [
    ("rsub_uint8_float", lambda m: m.rsub(m.tensor([2], dtype=m.uint8), -1.5)),
    ("rsub_uint8_int_wraps", lambda m: m.rsub(m.tensor([2], dtype=m.uint8), -1)),
    ("rsub_alpha", lambda m: m.rsub(m.tensor([1, 2]), 1.5, alpha=2)),
    ("float_power_complex", lambda m: m.float_power(m.tensor([1 + 1j, 2.0]), 2)),
    ("float_power_scalar_base", lambda m: m.float_power(2, m.tensor([1, 2]))),
    ("float_power_negative", lambda m: m.float_power(m.tensor([1, 2]), m.tensor([-1, 2]))),
    ("ldexp_float16", lambda m: m.ldexp(m.tensor([1.0], dtype=m.float16), m.tensor([2]))),
    ("ldexp_promotes", lambda m: m.ldexp(m.tensor([1.0]), m.tensor([2.0], dtype=m.float64))),
    ("ldexp_int", lambda m: m.ldexp(m.tensor([1]), m.tensor([2]))),
    ("fmax_nan", lambda m: m.fmax(m.tensor([1.0, NAN, NAN]), m.tensor([NAN, 2.0, NAN]))),
    ("fmin_promotes", lambda m: m.fmin(m.tensor([1, 5]), m.tensor([2.0, 3.0], dtype=m.float64))),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_values_and_dtypes_match_torch(torch, call):
    ours, theirs = call(tensor), call(torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours, theirs.numpy(), rtol=1e-6, atol=0)


def test_rsub_of_bool_raises_as_sub():
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        tensor.rsub(tensor.tensor([True]), 1)


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_gradient_goes_to_input_at_ties(torch, name):
    a, b = [1.0, 2.0, NAN, 1.0], [1.0, 0.0, 3.0, NAN]
    grads = []
    for lib in (tensor, torch):
        x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        y = lib.tensor(b, dtype=lib.float64, requires_grad=True)
        getattr(lib, name)(x, y).sum().backward()
        grads.append((x.grad.numpy(), y.grad.numpy()))
    (ours_x, ours_y), (theirs_x, theirs_y) = grads
    assert_close(ours_x, theirs_x)
    assert_close(ours_y, theirs_y)


# Split calls on x = arange(6).reshape(2, 3) and y = arange(4): piece shapes, or the error's type and text.
SPLITS = [
    "x.hsplit(3)", "x.hsplit([1])", "x.hsplit(2)", "L.zeros(4).hsplit(3)", "L.zeros(4).hsplit(2)",
    "L.tensor(1.).hsplit(1)", "L.arange(6.).vsplit(2)", "L.zeros(2, 4).vsplit(0)", "L.zeros(2, 4).hsplit(-1)",
    "L.zeros(3).dsplit(2)",
    "L.zeros(2, 2, 4).dsplit(3)", "y.tensor_split(L.tensor(2))", "y.tensor_split(L.tensor([1, 2]))",
    "y.tensor_split([-1, 1])", "y.tensor_split([3, 1])", "y.tensor_split([-10, 10])", "y.tensor_split(indices=[1])",
    "y.tensor_split(sections=3)", "y.tensor_split(tensor_indices_or_sections=L.tensor(2))",
    "L.tensor_split(y, 3, dim=0)", "y.tensor_split(0)", "y.tensor_split(L.tensor([[1]]))",
    "y.tensor_split(L.tensor([1.]))", "L.tensor(1.).tensor_split(2)",
]


def _split(lib, code):
    x, y = lib.arange(6.0).reshape(2, 3), lib.arange(4.0)
    try:
        return [tuple(p.shape) for p in eval(code, {"L": lib, "x": x, "y": y})]
    except Exception as exc:  # noqa: BLE001 - the error is what is compared
        return type(exc).__name__, str(exc).replace("tensor.", "torch.")


@pytest.mark.parametrize("code", SPLITS)
def test_split_helpers_match_torch(torch, code):
    assert _split(tensor, code) == _split(torch, code)


def test_split_pieces_hold_python_slices_of_the_input():
    y = tensor.arange(4.0)
    assert [p.tolist() for p in y.tensor_split([-1, 1])] == [[0.0, 1.0, 2.0], [], [1.0, 2.0, 3.0]]


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
@pytest.mark.parametrize("args,kwargs", [
    ((1, False), {}), ((False,), {}), ((), {"unbiased": False}), ((1, True, True), {}),
    ((), {"dim": 1, "keepdim": True, "correction": 0}),
], ids=["dim_unbiased", "unbiased_alone", "unbiased_keyword", "keepdim", "correction"])
def test_std_mean_and_var_mean_take_unbiased_as_torch(torch, name, args, kwargs):
    data = torch.randn(3, 4, dtype=torch.float64)
    ours = getattr(tensor, name)(tensor.tensor(data.numpy()), *args, **kwargs)
    theirs = getattr(torch, name)(data, *args, **kwargs)
    for o, t in zip(ours, theirs):
        assert_close(o, t.numpy(), rtol=1e-12, atol=0)


def test_take_along_dim_counts_negative_indices_from_the_end_of_its_dim(torch):
    for lib in (tensor, torch):
        x = lib.arange(6.0).reshape(2, 3)
        got = [lib.take_along_dim(x, lib.tensor([[-1], [0]]), 1).tolist(),
               lib.take_along_dim(x, lib.tensor([[-1, 0, 1]]), 0).tolist()]
        if lib is tensor:
            ours = got
        with pytest.raises(RuntimeError, match="out of bounds"):
            lib.take_along_dim(x, lib.tensor([-1, 2]))  # flattened: no wrapping, as torch
    assert ours == got
