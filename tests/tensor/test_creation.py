"""Creation functions: tensor() dtype inference, zeros/ones/empty/full/arange/linspace/eye,
the *_like and new_* families, and the default dtype."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

# (data, expected dtype, expected shape) -- tensor() infers like torch.tensor.
INFERENCE_CASES = [
    ([1.0, 2.0], tensor.float32, (2,)),
    ([1, 2], tensor.int64, (2,)),
    ([1, 2.5], tensor.float32, (2,)),
    ([True, False], tensor.bool, (2,)),
    (1.5, tensor.float32, ()),
    (3, tensor.int64, ()),
    (True, tensor.bool, ()),
    ([], tensor.float32, (0,)),
    ([[], []], tensor.float32, (2, 0)),
    (np.array([1.0, 2.0]), tensor.float64, (2,)),
    (np.array([1, 2], dtype=np.int32), tensor.int32, (2,)),
    (np.array([1.0], dtype=np.float16), tensor.float16, (1,)),
    (np.array([1, 2], dtype=np.uint8), tensor.uint8, (2,)),
    (np.float64(1.5), tensor.float64, ()),
    ([[1, 2], [3, 4]], tensor.int64, (2, 2)),
]


@pytest.mark.parametrize(("data", "dtype", "shape"), INFERENCE_CASES)
def test_tensor_infers_dtype_like_torch(device, data, dtype, shape):
    t = tensor.tensor(data, device=device)
    assert t.dtype is dtype
    assert t.shape == shape
    assert t.device.type == device


@pytest.mark.parametrize(("data", "dtype", "shape"), INFERENCE_CASES)
def test_tensor_dtype_inference_agrees_with_torch(torch, data, dtype, shape):
    assert str(torch.tensor(data).dtype) == f"torch.{dtype.name}"


def test_tensor_copies_its_input():
    source = np.array([1.0, 2.0])
    t = tensor.tensor(source)
    source[0] = 100.0
    assert t[0].item() == 1.0


def test_tensor_from_tensor_copies_and_casts(device):
    a = tensor.tensor([1.5, 2.5], device=device, requires_grad=True)
    b = tensor.tensor(a, dtype=tensor.int32)
    assert b.dtype is tensor.int32 and not b.requires_grad
    assert_close(b, np.array([1, 2], np.int32))
    c = tensor.tensor(a)
    assert c.data_ptr() != a.data_ptr()


@pytest.mark.parametrize(("bad", "error", "message"), [
    ([[1, 2], [3]], ValueError, "ragged"),
    ("abc", TypeError, "Could not infer dtype of str"),
    ([object()], TypeError, "Could not infer dtype"),
])
def test_tensor_rejects_bad_data(bad, error, message):
    with pytest.raises(error, match=message):
        tensor.tensor(bad)


def test_explicit_dtype_and_requires_grad(device):
    t = tensor.tensor([1, 2], dtype=tensor.float64, device=device, requires_grad=True)
    assert t.dtype is tensor.float64 and t.requires_grad and t.is_leaf


# ------------------------------------------------------------ filled tensors
FILLED_CASES = [
    ("zeros", lambda d: tensor.zeros(2, 3, device=d), np.zeros((2, 3), np.float32)),
    ("zeros-tuple", lambda d: tensor.zeros((2, 3), device=d), np.zeros((2, 3), np.float32)),
    ("ones-int", lambda d: tensor.ones(4, dtype=tensor.int64, device=d), np.ones(4, np.int64)),
    ("ones-0d", lambda d: tensor.ones((), device=d), np.ones((), np.float32)),
    ("zeros-empty", lambda d: tensor.zeros(0, 5, device=d), np.zeros((0, 5), np.float32)),
    ("full-float", lambda d: tensor.full((2,), 1.5, device=d), np.full(2, 1.5, np.float32)),
    ("full-int", lambda d: tensor.full((2,), 7, device=d), np.full(2, 7, np.int64)),
    ("full-bool", lambda d: tensor.full((2,), True, device=d), np.full(2, True)),
    ("full-dtype", lambda d: tensor.full((1, 2), 3, dtype=tensor.float64, device=d), np.full((1, 2), 3.0)),
    ("eye", lambda d: tensor.eye(3, device=d), np.eye(3, dtype=np.float32)),
    ("eye-rect", lambda d: tensor.eye(2, 3, dtype=tensor.int32, device=d), np.eye(2, 3, dtype=np.int32)),
    ("linspace", lambda d: tensor.linspace(0, 1, 5, device=d), np.linspace(0, 1, 5, dtype=np.float32)),
    ("linspace-1", lambda d: tensor.linspace(2, 3, 1, device=d), np.array([2.0], np.float32)),
    ("linspace-0", lambda d: tensor.linspace(2, 3, 0, device=d), np.zeros(0, np.float32)),
    ("arange-int", lambda d: tensor.arange(5, device=d), np.arange(5)),
    ("arange-start", lambda d: tensor.arange(2, 6, device=d), np.arange(2, 6)),
    ("arange-neg-step", lambda d: tensor.arange(5, 0, -2, device=d), np.array([5, 3, 1])),
    ("arange-float", lambda d: tensor.arange(0.0, 1.0, 0.25, device=d),
     np.arange(0, 1, 0.25, dtype=np.float32)),
    ("arange-float-neg", lambda d: tensor.arange(1.0, -1.0, -0.5, device=d),
     np.array([1.0, 0.5, 0.0, -0.5], np.float32)),
    ("arange-dtype", lambda d: tensor.arange(3, dtype=tensor.float64, device=d), np.arange(3.0)),
    ("arange-empty", lambda d: tensor.arange(3, 3, device=d), np.arange(0)),
]


@pytest.mark.parametrize(("name", "make", "expected"), FILLED_CASES, ids=[c[0] for c in FILLED_CASES])
def test_filled_creation(device, name, make, expected):
    t = make(device)
    assert t.device.type == device
    assert_close(t, expected)


def test_arange_float_step_length_matches_torch(torch):
    for args in [(0, 1, 0.1), (0.0, 2.0, 0.3), (-1.0, 1.0, 0.7), (1, 2.5, 0.5)]:
        assert tensor.arange(*args).shape == tuple(torch.arange(*args).shape), args
        assert_close(tensor.arange(*args), torch.arange(*args).numpy())


def test_empty_has_shape_and_dtype(device):
    t = tensor.empty(2, 3, dtype=tensor.int32, device=device)
    assert t.shape == (2, 3) and t.dtype is tensor.int32


@pytest.mark.parametrize(("args", "message"), [
    ((0, 5, 0), "arange\\(\\): step must be nonzero"),
    ((0, 5, -1), "upper bound and larger bound inconsistent with step sign"),
    ((5, 0, 1), "upper bound and larger bound inconsistent with step sign"),
])
def test_arange_bad_step_raises(args, message):
    with pytest.raises(RuntimeError, match=message):
        tensor.arange(*args)


def test_negative_size_raises():
    with pytest.raises(RuntimeError, match="negative dimension"):
        tensor.zeros(2, -1)


def test_negative_linspace_steps_raises():
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        tensor.linspace(0, 1, -1)


# ------------------------------------------------------------ *_like and new_*
def test_like_functions_copy_shape_dtype_device(device):
    base = tensor.ones(2, 3, dtype=tensor.float64, device=device)
    for fn, fill in [(tensor.zeros_like, 0.0), (tensor.ones_like, 1.0)]:
        out = fn(base)
        assert_close(out, np.full((2, 3), fill))
        assert out.device == base.device
    assert_close(tensor.full_like(base, 4), np.full((2, 3), 4.0))
    empty = tensor.empty_like(base)
    assert empty.shape == (2, 3) and empty.dtype is tensor.float64
    assert tensor.zeros_like(base, dtype=tensor.int32).dtype is tensor.int32
    assert tensor.ones_like(base, requires_grad=True).requires_grad


def test_like_functions_do_not_inherit_requires_grad(device):
    base = tensor.ones(2, device=device, requires_grad=True)
    assert not tensor.zeros_like(base).requires_grad


def test_new_functions_use_self_dtype_and_device(device):
    base = tensor.ones(1, dtype=tensor.float64, device=device)
    assert_close(base.new_zeros(2, 3), np.zeros((2, 3)))
    assert_close(base.new_ones((2,)), np.ones(2))
    assert_close(base.new_full((2,), 7), np.full(2, 7.0))
    assert_close(base.new_tensor([1, 2]), np.array([1.0, 2.0]))
    assert base.new_empty(4).shape == (4,)
    assert base.new_zeros(2, dtype=tensor.int64).dtype is tensor.int64
    for t in (base.new_zeros(1), base.new_ones(1), base.new_tensor([1])):
        assert t.device == base.device


# ------------------------------------------------------------ default dtype
def test_set_default_dtype_changes_float_creation():
    assert tensor.get_default_dtype() is tensor.float32
    try:
        tensor.set_default_dtype(tensor.float64)
        assert tensor.get_default_dtype() is tensor.float64
        assert tensor.tensor([1.5]).dtype is tensor.float64
        assert tensor.zeros(2).dtype is tensor.float64
        assert tensor.arange(0.0, 1.0, 0.5).dtype is tensor.float64
        assert tensor.rand(2).dtype is tensor.float64
        assert tensor.tensor([1]).dtype is tensor.int64, "ints are unaffected"
        assert (tensor.tensor([1]) / 2).dtype is tensor.float64
    finally:
        tensor.set_default_dtype(tensor.float32)
    assert tensor.tensor([1.5]).dtype is tensor.float32


def test_set_default_dtype_rejects_non_float():
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        tensor.set_default_dtype(tensor.int64)
    assert tensor.get_default_dtype() is tensor.float32


def test_as_tensor_shares_numpy_memory():
    source = np.array([1.0, 2.0])
    t = tensor.as_tensor(source)
    source[0] = 5.0
    assert t[0].item() == 5.0
    assert tensor.as_tensor(source, dtype=tensor.float32).dtype is tensor.float32


# ------------------------------------------------------------------ regressions found by the torch fuzz

@pytest.mark.parametrize("make", [
    lambda m: m.tensor([np.float64(0.1), np.float64(0.2)]),
    lambda m: m.tensor([m.tensor(0.1, dtype=m.float64)]),
    lambda m: m.tensor([[np.float64(1.0)], [2.0]]),
    lambda m: m.tensor([1j, np.float64(1.0)]),
    lambda m: m.tensor([np.float32(1.0), 2.0]),
    lambda m: m.tensor([np.int32(1), np.int32(2)]),
    lambda m: m.tensor([1.0, 2.0]),
], ids=["np_float64", "tensor_float64", "nested", "complex", "np_float32", "np_int32", "python"])
def test_tensor_keeps_the_dtype_of_typed_items(torch, make):
    ours, theirs = make(tensor), make(torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours, theirs.numpy())


@pytest.mark.parametrize("data,dtype", [
    ([1, 2**40], "int32"), ([float("nan")], "int32"), ([300], "uint8"), ([-129], "int8"),
    ([float("inf")], "int64"), ([3e9], "int32"), ([2.0**31], "int32"), (2**40, "int32"), ([-256], "uint8"),
])
def test_tensor_refuses_numbers_an_integer_dtype_cannot_hold(torch, data, dtype):
    for lib in (tensor, torch):
        with pytest.raises(RuntimeError, match=f"cannot be converted to type {dtype} without overflow"):
            lib.tensor(data, dtype=getattr(lib, dtype))


def test_tensor_integer_dtype_truncates_and_wraps_like_torch(torch):
    for data, dtype in (([1.5, -2.7], "int32"), ([-1, -255], "uint8"), ([-2.0**31], "int32")):
        assert tensor.tensor(data, dtype=getattr(tensor, dtype)).tolist() == \
            torch.tensor(data, dtype=getattr(torch, dtype)).tolist()
    assert tensor.tensor(np.array([2**40]), dtype=tensor.int32).tolist() == [0]  # arrays are cast, as in torch


@pytest.mark.parametrize("make", [
    lambda m: m.arange(m.tensor(5.0)),
    lambda m: m.arange(m.tensor(5)),
    lambda m: m.arange(m.tensor(1), 4.5),
    lambda m: m.arange(np.float32(2.5)),
    lambda m: m.arange(0.5, 3.7, 1, dtype=m.int64),
    lambda m: m.arange(-0.5, 5, 1.5, dtype=m.int64),
])
def test_arange_scalar_arguments_like_torch(torch, make):
    ours, theirs = make(tensor), make(torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


def test_arange_step_truncated_to_zero_and_eye_sizes(torch):
    for lib in (tensor, torch):
        with pytest.raises(ValueError, match="step must be nonzero"):
            lib.arange(0, 1, 0.25, dtype=lib.int64)
        with pytest.raises(TypeError):
            lib.arange(lib.tensor([5.0]))
        with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
            lib.eye(-1)


@pytest.mark.parametrize("call", [
    lambda L: L.tensor([1, 2], dtype=float).dtype, lambda L: L.zeros(2, dtype=float).dtype,
    lambda L: L.ones(2, dtype=L.int32).to(float).dtype, lambda L: L.ones(2).sum(dtype=float).dtype,
    lambda L: L.zeros(2, dtype=complex).dtype, lambda L: L.ones(2).to(complex).dtype,
    lambda L: L.promote_types(L.float32, float), lambda L: L.can_cast(L.float32, float), lambda L: L.finfo(float).bits,
])
def test_python_types_as_dtypes_are_torchs(torch, call):
    assert str(call(tensor)).removeprefix("tensor.") == str(call(torch)).removeprefix("torch.")


@pytest.mark.parametrize("call", [
    lambda L: tuple(L.Tensor().shape), lambda L: tuple(L.Tensor(3).shape), lambda L: tuple(L.Tensor(2, 3).shape),
    lambda L: tuple(L.Tensor(np.int64(3)).shape), lambda L: tuple(L.Tensor(L.Size([2, 3])).shape),
    lambda L: L.Tensor((2, 3)).tolist(), lambda L: L.Tensor([1, 2]).dtype, lambda L: L.Tensor(np.ones(2)).dtype,
    lambda L: L.Tensor(L.tensor([1, 2])).dtype, lambda L: L.ones(2).type(L.DoubleTensor).dtype,
    lambda L: tuple(L.FloatTensor(np.int64(2), 3).shape), lambda L: tuple(L.ones(1).new(2, 3).shape),
])
def test_legacy_tensor_constructor_is_torchs(torch, call):
    assert str(call(tensor)).removeprefix("tensor.") == str(call(torch)).removeprefix("torch.")


def test_legacy_tensor_of_a_tensor_shares_its_storage():
    t = tensor.zeros(2)
    tensor.Tensor(t)[0] = 5
    assert t.tolist() == [5.0, 0.0]


@pytest.mark.parametrize("bad, error", [(2.5, TypeError), (True, TypeError), (-1, RuntimeError)])
def test_legacy_tensor_constructor_refuses_what_torch_does(torch, bad, error):
    for L in (tensor, torch):
        with pytest.raises(error):
            L.Tensor(bad)


@pytest.mark.parametrize("make", [
    lambda L: L.tensor(2**63), lambda L: L.tensor([2**63, 2**64 - 1]), lambda L: L.tensor([1 + 2j], dtype=L.float32),
    lambda L: L.tensor(1 + 2j, dtype=L.int64), lambda L: L.tensor([-0.7], dtype=L.uint8),
    lambda L: L.tensor([255.5], dtype=L.uint8), lambda L: L.tensor([127.5], dtype=L.int8),
])
def test_tensor_refuses_numbers_the_dtype_cannot_take(torch, make):
    with pytest.raises(Exception) as theirs:
        make(torch)
    with pytest.raises(theirs.type):
        make(tensor)


@pytest.mark.parametrize("make", [
    lambda L: L.tensor([-0.7], dtype=L.int8), lambda L: L.tensor([-1], dtype=L.uint8),
    lambda L: L.tensor([1 + 2j], dtype=L.bool), lambda L: L.tensor(np.complex128(1 + 2j), dtype=L.float32),
    lambda L: L.tensor(2**63 - 1),
])
def test_tensor_takes_numbers_torch_takes(torch, make):
    assert make(tensor).tolist() == make(torch).tolist()


@pytest.mark.parametrize("fill", [
    lambda L: L.tensor(1.5, dtype=L.float16), lambda L: L.tensor(1, dtype=L.int32), lambda L: L.tensor(1j),
    lambda L: np.float16(1.5), lambda L: np.int32(3),
])
def test_full_reads_a_tensor_or_numpy_fill_as_a_python_number(torch, fill):
    ours, theirs = tensor.full((2,), fill(tensor)), torch.full((2,), fill(torch))
    assert str(ours.dtype).removeprefix("tensor.") == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("make", [
    lambda lib: lib.full((2,), -1, dtype=lib.uint8),
    lambda lib: lib.full((2,), 300, dtype=lib.uint8),
    lambda lib: lib.full((2,), 1e6, dtype=lib.float16),
    lambda lib: lib.full((2,), -1.0, dtype=lib.uint8),
    lambda lib: lib.zeros(2, dtype=lib.uint8).new_full((2,), -2),
    lambda lib: lib.full_like(lib.zeros(2, dtype=lib.int8), 200),
])
def test_full_reads_its_fill_in_the_dtype_as_torch(make, torch):
    """-1 wraps to 255 for uint8 and out-of-range fills raise RuntimeError (numpy's OverflowError
    before), as fill_ and setitem do."""
    outcomes = []
    for lib in (tensor, torch):
        try:
            outcomes.append(make(lib).tolist())
        except RuntimeError:
            outcomes.append("RuntimeError")
    assert outcomes[0] == outcomes[1]


def _arange(m, *shape):
    return m.arange(float(np.prod(shape)), dtype=m.float32).reshape(shape)


# Inputs of the *_like factories (built the same way in both libraries), by their layout.
LIKE_INPUTS = {
    "transposed": lambda m: _arange(m, 3, 4).t(),
    "permuted_3d": lambda m: _arange(m, 2, 3, 4).permute(2, 0, 1),
    "permuted_4d": lambda m: _arange(m, 2, 3, 4, 5).permute(3, 2, 1, 0),
    "channels_last": lambda m: _arange(m, 2, 3, 4, 5).permute(0, 3, 1, 2),
    "expanded": lambda m: _arange(m, 3, 1).expand(3, 4),
    "expanded_transposed": lambda m: _arange(m, 1, 4).expand(3, 4).t(),
    "sliced": lambda m: _arange(m, 4, 6)[:, ::2],
    "sliced_transposed": lambda m: _arange(m, 4, 6).t()[::2],
    "sliced_channels_last": lambda m: _arange(m, 2, 3, 4, 10).permute(0, 3, 1, 2)[:, ::2],
    "0d": lambda m: m.tensor(1.5),
    "1d": lambda m: _arange(m, 5),
    "1d_strided": lambda m: _arange(m, 10)[::2],
    "size1_strided": lambda m: _arange(m, 10)[::5][:1],
    "size1_transposed": lambda m: _arange(m, 1, 3).t(),
    "unsqueezed_transposed": lambda m: _arange(m, 3, 4).t().unsqueeze(1),
    "empty_transposed": lambda m: _arange(m, 0, 3).t(),
    "contiguous": lambda m: _arange(m, 3, 4),
}
LIKE_FACTORIES = {
    "empty_like": lambda m, x: m.empty_like(x),
    "zeros_like": lambda m, x: m.zeros_like(x),
    "ones_like": lambda m, x: m.ones_like(x, dtype=m.float64),
    "full_like": lambda m, x: m.full_like(x, 2.5),
}


@pytest.mark.parametrize("factory", LIKE_FACTORIES.values(), ids=LIKE_FACTORIES.keys())
@pytest.mark.parametrize("make", LIKE_INPUTS.values(), ids=LIKE_INPUTS.keys())
def test_like_factories_preserve_strides_as_torch(torch, make, factory):
    source, reference = make(tensor), make(torch)
    assert source.stride() == reference.stride()
    ours, theirs = factory(tensor, source), factory(torch, reference)
    assert ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()
    if factory is not LIKE_FACTORIES["empty_like"]:
        assert_close(ours, theirs.numpy())


def test_like_factories_take_an_explicit_memory_format_as_torch(torch):
    for fmt in ("contiguous_format", "channels_last"):
        ours = tensor.zeros_like(LIKE_INPUTS["permuted_4d"](tensor), memory_format=getattr(tensor, fmt))
        theirs = torch.zeros_like(LIKE_INPUTS["permuted_4d"](torch), memory_format=getattr(torch, fmt))
        assert ours.stride() == theirs.stride(), fmt
    with pytest.raises(RuntimeError, match="required rank 4"):
        tensor.empty_like(LIKE_INPUTS["transposed"](tensor), memory_format=tensor.channels_last)
