"""PyTorch's type promotion for every pair of our dtypes, checked against torch itself.

For each pair: ``promote_types``; the result dtype of ``add`` and ``mul`` on tensor-tensor,
tensor-0d and 0d-tensor operands; and tensor-Python-scalar. float8 types refuse promotion with
any other dtype (RuntimeError), as in PyTorch.
"""

from __future__ import annotations

import itertools

import pytest

import tensor

NAMES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
SCALARS = (True, 2, 2.5, 1j)
PAIRS = list(itertools.product(NAMES, NAMES))


def _ours(name: str) -> tensor.dtype:
    return getattr(tensor, name)


def _operands(name: str, dims: bool, torch=None):
    # 1 (True for bool): a value every dtype holds exactly
    shape = (2,) if dims else ()
    if torch is None:
        return tensor.ones(shape, dtype=_ours(name))
    return torch.ones(shape, dtype=getattr(torch, name))


def _torch_name(torch_dtype) -> str:
    # torch's complex32 (ComplexHalf: float16 with a 0-d complex) is a dtype we do not have; we
    # give the narrowest complex dtype we have instead
    name = str(torch_dtype).removeprefix("torch.")
    return "complex64" if name == "complex32" else name


@pytest.mark.parametrize("a, b", PAIRS)
def test_promote_types_and_op_results_match_torch(torch, a, b):
    assert tensor.promote_types(_ours(a), _ours(b)).name == _torch_name(
        torch.promote_types(getattr(torch, a), getattr(torch, b))
    )
    for a_dims, b_dims in ((True, True), (True, False), (False, True), (False, False)):
        expected = torch.result_type(_operands(a, a_dims, torch), _operands(b, b_dims, torch))
        x, y = _operands(a, a_dims), _operands(b, b_dims)
        assert tensor.result_type(x, y).name == _torch_name(expected), (a, a_dims, b, b_dims)
        assert (x + y).dtype.name == _torch_name(expected), (a, a_dims, b, b_dims)
        if "bool" not in (a, b):
            assert (x * y).dtype.name == _torch_name(expected), (a, a_dims, b, b_dims)


@pytest.mark.parametrize("name", NAMES)
def test_tensor_with_python_scalar_matches_torch(torch, name):
    for scalar in SCALARS:
        expected = torch.result_type(_operands(name, True, torch), scalar)
        ours = _operands(name, True)
        assert tensor.result_type(ours, scalar).name == _torch_name(expected), (name, scalar)
        assert tensor.result_type(scalar, ours).name == _torch_name(expected), (name, scalar)
        theirs = _operands(name, True, torch)
        for op in (lambda x, s: x + s, lambda x, s: s * x, lambda x, s: x == s):
            assert op(ours, scalar).dtype.name == _torch_name(op(theirs, scalar).dtype), (name, scalar)


def test_operators_match_torch(torch):
    """Shifts, in-place floor division and remainder (updating aliases and views), a scalar on the
    left of a true division (no integer wrap-around first) and complex Python scalars."""
    for lib in (tensor, torch):
        a = lib.tensor([5.0, 7.0])
        alias, view = a, a[:1]
        a //= 2
        b = lib.tensor([5, 7])
        b %= 3
        c = lib.tensor([1, 2])
        c <<= 2
        c |= 1
        c >>= 1
        results = [alias, view, b, c, lib.tensor([1, 2]) << 2, 1 << lib.tensor([3]), 16 >> lib.tensor([2]),
                   -2 / lib.tensor([2], dtype=lib.uint8), -300 / lib.tensor([2], dtype=lib.int8),
                   lib.tensor([1.0, 2.0]) * 1j, 1j - lib.tensor([1, 2]), lib.tensor([1 + 1j]) / 2j]
        if lib is tensor:
            ours = [r.tolist() for r in results]
        else:
            assert ours == [r.tolist() for r in results]
        with pytest.raises(RuntimeError, match="can't be cast"):
            d = lib.tensor([1, 2])
            d //= 2.5


def test_result_type_of_two_python_numbers_matches_torch(torch):
    for a, b in itertools.product(SCALARS, SCALARS):
        assert tensor.result_type(a, b).name == _torch_name(torch.result_type(a, b)), (a, b)


@pytest.mark.parametrize("f8", FLOAT8)
def test_float8_refuses_promotion_as_torch(torch, f8):
    for other in (*NAMES, *(n for n in FLOAT8 if n != f8)):
        with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
            torch.promote_types(getattr(torch, f8), getattr(torch, other))
        with pytest.raises(RuntimeError, match=f"Promotion for Float8 Types is not supported.*{other}"):
            tensor.promote_types(_ours(f8), _ours(other))
    assert tensor.promote_types(_ours(f8), _ours(f8)) is _ours(f8)
