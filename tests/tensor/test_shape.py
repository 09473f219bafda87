"""Shape ops: reshape/view, permute/transpose, squeeze/unsqueeze, expand, flatten, cat/stack, split & co.

Forward values, shapes and dtypes are checked against numpy on every device; gradients with float64
``gradcheck`` (and ``gradgradcheck`` for a subset); a table of ops is compared with torch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close, to_numpy

RNG = np.random.default_rng(0)


def _array(shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _leaf(shape, device="cpu"):
    return tensor.tensor(_array(shape), device=device, requires_grad=True)


# (name, input shape, function on our tensor, function on a numpy array)
FORWARD_CASES = [
    ("reshape", (2, 3, 4), lambda t: t.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("reshape_-1", (2, 3, 4), lambda t: t.reshape(-1, 4), lambda a: a.reshape(-1, 4)),
    ("reshape_tuple", (2, 3, 4), lambda t: t.reshape((3, -1)), lambda a: a.reshape(3, -1)),
    ("reshape_0d", (), lambda t: t.reshape(1, 1), lambda a: a.reshape(1, 1)),
    ("reshape_to_0d", (1, 1), lambda t: t.reshape(()), lambda a: a.reshape(())),
    ("reshape_empty", (0, 3), lambda t: t.reshape(3, 0), lambda a: a.reshape(3, 0)),
    ("reshape_noncontig", (3, 4), lambda t: t.T.reshape(-1), lambda a: a.T.reshape(-1)),
    ("view", (2, 3, 4), lambda t: t.view(6, 4), lambda a: a.reshape(6, 4)),
    ("view_-1", (2, 3, 4), lambda t: t.view(2, -1), lambda a: a.reshape(2, -1)),
    ("permute", (2, 3, 4), lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute_neg", (2, 3, 4), lambda t: t.permute(-1, -3, -2), lambda a: a.transpose(2, 0, 1)),
    ("transpose", (2, 3, 4), lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose_0d", (), lambda t: t.transpose(0, -1), lambda a: a),
    ("T", (2, 3, 4), lambda t: t.T, lambda a: a.T),
    ("mT", (2, 3, 4), lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    ("t", (3, 4), lambda t: t.t(), lambda a: a.T),
    ("squeeze_all", (1, 3, 1, 2), lambda t: t.squeeze(), lambda a: a.squeeze()),
    ("squeeze_dim", (1, 3, 1, 2), lambda t: t.squeeze(2), lambda a: a.squeeze(2)),
    ("squeeze_non1", (1, 3, 1, 2), lambda t: t.squeeze(1), lambda a: a),
    ("squeeze_tuple", (1, 3, 1, 2), lambda t: t.squeeze((0, 2)), lambda a: a.squeeze((0, 2))),
    ("squeeze_0d", (), lambda t: t.squeeze(), lambda a: a),
    ("unsqueeze", (3, 2), lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    ("unsqueeze_neg", (3, 2), lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    ("unsqueeze_0d", (), lambda t: t.unsqueeze(0), lambda a: a[None]),
    ("expand", (3, 1), lambda t: t.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4))),
    ("expand_-1", (3, 1), lambda t: t.expand(-1, 5), lambda a: np.broadcast_to(a, (3, 5))),
    ("expand_0d", (), lambda t: t.expand(2, 2), lambda a: np.broadcast_to(a, (2, 2))),
    ("expand_empty", (1, 3), lambda t: t.expand(0, 3), lambda a: np.broadcast_to(a, (0, 3))),
    ("flatten", (2, 3, 4), lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten_range", (2, 3, 4, 5), lambda t: t.flatten(1, 2), lambda a: a.reshape(2, 12, 5)),
    ("flatten_0d", (), lambda t: t.flatten(), lambda a: a.reshape(1)),
    ("flatten_noncontig", (3, 4), lambda t: t.T.flatten(), lambda a: a.T.reshape(-1)),
    ("contiguous", (3, 4), lambda t: t.T.contiguous(), lambda a: np.ascontiguousarray(a.T)),
    ("movedim", (2, 3, 4), lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1)),
    ("movedim_fn", (2, 3, 4), lambda t: tensor.movedim(t, 2, 0), lambda a: np.moveaxis(a, 2, 0)),
    ("narrow", (5, 4), lambda t: t.narrow(0, 1, 3), lambda a: a[1:4]),
    ("narrow_neg_start", (5, 4), lambda t: t.narrow(1, -2, 2), lambda a: a[:, 2:4]),
    ("narrow_empty", (5, 4), lambda t: t.narrow(1, 4, 0), lambda a: a[:, 4:4]),
    ("select", (3, 4, 5), lambda t: t.select(1, 2), lambda a: a[:, 2]),
    ("select_neg", (3, 4, 5), lambda t: t.select(-1, -1), lambda a: a[..., -1]),
    ("cat_fn", (2, 3), lambda t: tensor.cat([t, t * 2], 1), lambda a: np.concatenate([a, a * 2], 1)),
    ("cat_neg_dim", (2, 3), lambda t: tensor.cat([t, t], -2), lambda a: np.concatenate([a, a], 0)),
    ("cat_empty_part", (2, 3), lambda t: tensor.cat([t, t[:0]]), lambda a: a),
    ("stack", (2, 3), lambda t: tensor.stack([t, t + 1]), lambda a: np.stack([a, a + 1])),
    ("stack_last", (2, 3), lambda t: tensor.stack([t, t + 1], -1), lambda a: np.stack([a, a + 1], -1)),
    ("stack_0d", (), lambda t: tensor.stack([t, t, t]), lambda a: np.stack([a, a, a])),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("name,shape,fn,np_fn", FORWARD_CASES, ids=[c[0] for c in FORWARD_CASES])
def test_shape_op_matches_numpy(device, name, shape, fn, np_fn, dtype):
    a = (_array(shape) * 10).astype(dtype)
    assert_close(fn(tensor.tensor(a, device=device)), np_fn(a))


# (name, input shape, differentiable function); each is gradchecked, those marked True also gradgradchecked.
GRAD_CASES = [
    ("reshape", (2, 3, 4), lambda t: t.reshape(4, -1), True),
    ("reshape_noncontig", (3, 4), lambda t: t.T.reshape(-1), True),
    ("view", (2, 3, 4), lambda t: t.view(6, 4) * 2, False),
    ("permute", (2, 3, 4), lambda t: t.permute(1, 2, 0), True),
    ("transpose", (2, 3, 4), lambda t: t.transpose(-1, 0), False),
    ("mT", (2, 3, 4), lambda t: t.mT, False),
    ("squeeze", (1, 3, 1), lambda t: t.squeeze(), False),
    ("unsqueeze", (3, 2), lambda t: t.unsqueeze(0), False),
    ("expand", (3, 1), lambda t: t.expand(2, 3, 4), True),
    ("expand_0d", (), lambda t: t.expand(3), False),
    ("flatten", (2, 3, 4), lambda t: t.flatten(0, 1), False),
    ("contiguous", (3, 4), lambda t: t.T.contiguous(), False),
    ("movedim", (2, 3, 4), lambda t: t.movedim(2, 0), False),
    ("narrow", (5, 4), lambda t: t.narrow(0, 1, 3), False),
    ("select", (3, 4), lambda t: t.select(1, 2), False),
    ("cat", (2, 3), lambda t: tensor.cat([t, t * t, t[:1]], 0), True),
    ("stack", (2, 3), lambda t: tensor.stack([t, t * 3], 1), False),
    ("split_int", (5, 2), lambda t: tensor.cat([p * (i + 1) for i, p in enumerate(t.split(2))]), True),
    ("split_sizes", (6, 2), lambda t: t.split([1, 5])[1] * 2, False),
    ("chunk", (5, 2), lambda t: t.chunk(2, 0)[1], False),
    ("unbind", (3, 2), lambda t: t.unbind(1)[0] * t.unbind(1)[1], True),
]


@pytest.mark.parametrize("name,shape,fn,second", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_shape_op_gradcheck(name, shape, fn, second):
    x = _leaf(shape)
    assert autograd.gradcheck(fn, (x,))
    if second:
        # a product makes the second derivative non-trivial
        assert autograd.gradgradcheck(lambda t: fn(t) * fn(t), (x,))


def test_view_shares_storage_and_keeps_dtype(device):
    x = tensor.arange(12, device=device)
    v = x.view(3, 4)
    assert v.dtype is tensor.int64 and v.shape == (3, 4)
    v[1, 1] = 100
    assert x[5].item() == 100


def test_view_on_non_contiguous_raises_and_points_to_reshape(device):
    x = tensor.tensor(_array((3, 4)), device=device).T
    with pytest.raises(RuntimeError, match=r"view size is not compatible.*\.reshape"):
        x.view(12)


def test_reshape_of_non_contiguous_copies(device):
    base = tensor.tensor(_array((3, 4)), device=device)
    r = base.T.reshape(12)
    r[0] = 123.0
    assert base[0, 0].item() != 123.0


def test_reshape_contiguous_is_a_view(device):
    base = tensor.zeros(2, 6, device=device)
    base.reshape(3, 4)[0, 0] = 1.0
    assert base[0, 0].item() == 1.0


@pytest.mark.parametrize("method", ["view", "reshape"])
@pytest.mark.parametrize("shape,pattern", [
    ((5, 3), r"shape '\[5, 3\]' is invalid for input of size 12"),
    ((-1, 5), r"shape '\[-1, 5\]' is invalid for input of size 12"),
    ((-1, -1), "only one dimension can be inferred"),
    ((-2, 6), "invalid shape dimension"),
])
def test_view_invalid_size(device, method, shape, pattern):
    x = tensor.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match=pattern):
        getattr(x, method)(*shape)


def test_expand_error_names_sizes(device):
    x = tensor.zeros(3, 2, device=device)
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match the existing "
                                           r"size \(2\) at non-singleton dimension 1.*\[3, 4\].*\[3, 2\]"):
        x.expand(3, 4)
    with pytest.raises(RuntimeError, match=r"number of sizes provided \(1\).*dimensions in the tensor \(2\)"):
        x.expand(6)


def test_permute_error(device):
    with pytest.raises(RuntimeError, match=r"not a permutation"):
        tensor.zeros(2, 3, device=device).permute(0, 0)
    with pytest.raises(IndexError, match="out of range"):
        tensor.zeros(2, 3, device=device).transpose(0, 2)


def test_cat_promotes_dtypes(device):
    a = tensor.tensor([[1, 2]], device=device)
    b = tensor.tensor([[0.5, 1.5]], dtype=tensor.float32, device=device)
    c = tensor.tensor([[True, False]], device=device)
    out = tensor.cat([a, b, c])
    assert out.dtype is tensor.float32
    assert_close(out, np.array([[1, 2], [0.5, 1.5], [1, 0]], dtype=np.float32))
    assert tensor.cat([c, a]).dtype is tensor.int64


def test_cat_mismatched_shapes(device):
    a, b = tensor.zeros(2, 3, device=device), tensor.zeros(2, 4, device=device)
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 0.*"
                                           r"\[2, 3\].*\[2, 4\].*tensor number 1"):
        tensor.cat([a, b])
    with pytest.raises(ValueError, match="non-empty"):  # torch's exception type
        tensor.cat([])


def test_stack_mismatched_shapes(device):
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2\] at "
                                           r"entry 0 and \[3\] at entry 1"):
        tensor.stack([tensor.zeros(2, device=device), tensor.zeros(3, device=device)])


@pytest.mark.parametrize("arg,dim,expected_sizes", [
    (2, 0, [2, 2, 1]),
    (5, 0, [5]),
    (10, 0, [5]),
    ([1, 3, 1], 0, [1, 3, 1]),
    ([0, 5], 0, [0, 5]),
    (1, 1, [1, 1]),
])
def test_split(device, arg, dim, expected_sizes):
    a = _array((5, 2))
    parts = tensor.tensor(a, device=device).split(arg, dim)
    assert [p.shape[dim] for p in parts] == expected_sizes
    for p, e in zip(parts, np.split(a, np.cumsum(expected_sizes)[:-1], axis=dim)):
        assert_close(p, e)


def test_split_errors(device):
    x = tensor.zeros(5, device=device)
    with pytest.raises(RuntimeError, match=r"split_sizes to sum exactly to 5.*\[2, 2\]"):
        x.split([2, 2])
    with pytest.raises(RuntimeError, match="split_size"):
        x.split(0)


@pytest.mark.parametrize("size,chunks,expected_sizes", [
    (6, 3, [2, 2, 2]), (5, 2, [3, 2]), (2, 4, [1, 1]), (7, 3, [3, 3, 1]),
])
def test_chunk(device, size, chunks, expected_sizes):
    parts = tensor.arange(size, device=device).chunk(chunks)
    assert [p.numel() for p in parts] == expected_sizes
    assert_close(tensor.cat(parts), np.arange(size))


def test_chunk_error(device):
    with pytest.raises(RuntimeError, match="greater than 0"):
        tensor.zeros(3, device=device).chunk(0)


def test_unbind(device):
    a = _array((3, 4))
    parts = tensor.tensor(a, device=device).unbind(1)
    assert len(parts) == 4
    for i, p in enumerate(parts):
        assert_close(p, a[:, i])


def test_narrow_out_of_range(device):
    with pytest.raises(RuntimeError, match=r"start \(3\) \+ length \(3\) exceeds dimension size \(5\)"):
        tensor.zeros(5, device=device).narrow(0, 3, 3)


def test_views_of_non_contiguous_input(device):
    a = _array((4, 3, 2))
    x = tensor.tensor(a, device=device).permute(2, 0, 1)  # non-contiguous
    assert not x.is_contiguous()
    assert_close(x.unsqueeze(1).squeeze(1), a.transpose(2, 0, 1))
    assert_close(x.narrow(2, 1, 2).mT, a.transpose(2, 0, 1)[:, :, 1:].swapaxes(-1, -2))
    assert_close(tensor.cat([x, x], 2), np.concatenate([a.transpose(2, 0, 1)] * 2, 2))


# (name, shape, fn(module, t)) run identically on torch and on tensor.
TORCH_CASES = [
    ("reshape", (2, 3, 4), lambda m, t: t.reshape(-1, 2)),
    ("permute_sum", (2, 3, 4), lambda m, t: (t.permute(2, 0, 1) * m.arange(4.0).reshape(4, 1, 1)).sum()),
    ("expand", (3, 1), lambda m, t: (t.expand(2, 3, 5) * 2).sum()),
    ("cat_split", (4, 3), lambda m, t: m.cat(t.split([1, 3])[::-1], 0) * m.arange(12.0).reshape(4, 3)),
    ("stack_unbind", (3, 2), lambda m, t: m.stack(t.unbind(0)[1:], 1)),
    ("chunk", (5, 2), lambda m, t: t.chunk(3)[-1] * 3),
    ("flatten_movedim", (2, 3, 4), lambda m, t: t.movedim(1, 2).flatten(1) * m.arange(12.0)),
    ("squeeze_unsqueeze", (1, 3, 1), lambda m, t: t.squeeze().unsqueeze(-1).expand(3, 2)),
    # the sizes by keyword, as PyTorch's parser takes them
    ("permute_dims_keyword", (2, 3, 4), lambda m, t: t.permute(dims=(2, 0, 1)) * m.arange(4.0).reshape(4, 1, 1)),
    ("module_permute_dims_keyword", (2, 3, 4), lambda m, t: m.permute(t, dims=(1, 0, 2)) * 2),
    ("reshape_shape_keyword", (2, 3, 4), lambda m, t: t.reshape(shape=(4, -1)) * m.arange(6.0)),
    ("view_size_keyword", (2, 3, 4), lambda m, t: t.view(size=[6, 4]) * 3),
    ("expand_size_keyword", (3, 1), lambda m, t: (t.expand(size=(2, 3, 5)) * 2).sum()),
    ("split_size_keyword", (5, 2), lambda m, t: t.split(split_size=2)[-1] * 3),
]


@pytest.mark.parametrize("name,shape,fn", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_shape_op_matches_torch(torch, name, shape, fn):
    a = _array(shape)
    ours, theirs = tensor.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out, ref = fn(tensor, ours), fn(torch, theirs)
    assert_close(out, ref.detach().numpy())
    out.backward(tensor.ones_like(out))
    ref.backward(torch.ones_like(ref))
    assert_close(ours.grad, theirs.grad.numpy())
    assert to_numpy(ours.grad).dtype == np.float64


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t: t.reshape(3, 2, shape=(3, 2)), "reshape() got multiple values for argument 'shape'"),
        (lambda t: t.permute(1, 0, dims=(1, 0)), "permute() got multiple values for argument 'dims'"),
        (lambda t: t.view(6, size=(6,)), "view() got multiple values for argument 'size'"),
        (lambda t: t.expand(2, 3, size=(2, 3)), "expand() got multiple values for argument 'size'"),
        (lambda t: t.split(), "got neither"),
        (lambda t: t.split(1, split_size=1), "got both"),
    ],
)
def test_sizes_given_twice_or_not_at_all_raise_type_error(call, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        call(tensor.ones(2, 3))


# ------------------------------------------------------------------ regressions found by the torch fuzz

def test_cat_skips_legacy_empty_1d_tensors(torch):
    for lib in (tensor, torch):
        acc = lib.tensor([], dtype=lib.float64)
        out = lib.cat([acc, lib.ones(2, 3), lib.zeros(0)], 1)
        assert tuple(out.shape) == (2, 3) and out.dtype == lib.float64  # the skipped ones still promote
        assert tuple(lib.cat([lib.zeros(0), lib.zeros(0)], dim=1).shape) == (0,)
        assert tuple(lib.hstack([lib.zeros(0), lib.ones(3)]).shape) == (3,)
        with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
            lib.cat([lib.tensor(1.0)])


def test_chunk_and_split_of_empty_dims(torch):
    for lib in (tensor, torch):
        assert len(lib.zeros(0, 3).chunk(2)) == 2
        assert [tuple(p.shape) for p in lib.zeros(0, 3).split(0)] == [(0, 3)]
        with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
            lib.zeros(3).split(0)
        with pytest.raises(RuntimeError, match="at least a 1-dimensional tensor"):
            lib.tensor(1.0).chunk(2)


def test_narrow_errors_match_torch(torch):
    for lib in (tensor, torch):
        with pytest.raises(RuntimeError, match="cannot be applied to a 0-dim tensor"):
            lib.tensor(1.0).narrow(0, 0, 1)
        with pytest.raises(IndexError, match="start out of range"):
            lib.zeros(3).narrow(0, 4, 0)
        assert tuple(lib.zeros(3).narrow(0, -3, 3).shape) == (3,)


@pytest.mark.parametrize("dtype", ["int32", "float64", "int8", "float16", "bool", "complex64"])
def test_view_as_dtype_matches_torch(torch, dtype):
    base = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    ours = tensor.tensor(base).view(getattr(tensor, dtype))
    theirs = torch.tensor(base).view(getattr(torch, dtype))
    assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert ours.numpy().tobytes() == theirs.numpy().tobytes()


def test_view_as_dtype_shares_memory_and_checks_layout(torch):
    x = tensor.zeros(4)
    x.view(tensor.int32)[0] = 1065353216  # the bits of 1.0
    assert x[0].item() == 1.0
    assert not tensor.arange(4.0, requires_grad=True).view(tensor.int32).requires_grad
    for make in (lambda m: m.arange(6.0).reshape(2, 3).view(m.float64),
                 lambda m: m.arange(6.0).reshape(2, 3).t().view(m.float64),
                 lambda m: m.arange(6.0).reshape(2, 3)[:, 1:].view(m.float64),
                 lambda m: m.tensor(1.0).view(m.float64)):
        with pytest.raises(RuntimeError):
            make(torch)
        with pytest.raises(RuntimeError):
            make(tensor)


def test_flip_tile_take_dims_as_varargs(torch):
    for lib in (tensor, torch):
        a = lib.arange(6.0).reshape(2, 3)
        assert a.flip(0, 1).tolist() == [[5, 4, 3], [2, 1, 0]]
        assert a.flip(dims=(1,)).tolist() == [[2, 1, 0], [5, 4, 3]]
        assert lib.arange(3.0).tile(2).tolist() == [0, 1, 2, 0, 1, 2]
        assert tuple(lib.zeros(2, 3).tile(2, 1).shape) == (4, 3)
        assert tuple(lib.tensor(2.0).tile(3).shape) == (3,)
        with pytest.raises(RuntimeError, match="appears multiple times"):
            lib.zeros(3).flip(0, 0)
        with pytest.raises(RuntimeError, match="appears multiple times"):
            lib.zeros(1, 2, 1).squeeze((0, 0))


def test_unfold_is_a_view(torch):
    for lib in (tensor, torch):
        a = lib.arange(10.0)[2:].reshape(2, 4)
        windows = a.unfold(1, 2, 1)
        assert windows.stride() == (4, 1, 1) and windows.storage_offset() == 2
        windows[0, 1, 1] = 100.0
        assert a[0, 2].item() == 100.0
    leaf = tensor.tensor(RNG.standard_normal((3, 7)), requires_grad=True)
    assert autograd.gradcheck(lambda t: t.unfold(1, 3, 2) * 2, (leaf,))
    assert autograd.gradgradcheck(lambda t: t.t().unfold(0, 3, 1) ** 2, (leaf,))


def test_movedim_checks_repeats_and_takes_0d(torch):
    for lib in (tensor, torch):
        with pytest.raises(RuntimeError, match="repeated dim in `destination`"):
            lib.zeros(2, 3, 4).movedim((0, 1), (1, 1))
        with pytest.raises(RuntimeError, match="repeated dim in `source`"):
            lib.zeros(2, 3, 4).movedim((0, 0), (1, 2))
        assert lib.movedim(lib.tensor(1.0), 0, 0).shape == ()


def test_shape_op_argument_checks_match_torch(torch):
    for lib in (tensor, torch):
        with pytest.raises(IndexError):
            lib.flatten(lib.tensor(1.0), 1)
        with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
            lib.zeros(0, 3).unflatten(1, (2, 2))
        assert tuple(lib.zeros(0, 4).unflatten(1, (2, -1)).shape) == (0, 2, 2)
        with pytest.raises(RuntimeError, match="0D or 1D tensor"):
            lib.meshgrid(lib.arange(6).reshape(2, 3), lib.arange(2), indexing="ij")
        with pytest.raises(RuntimeError, match="same dtype"):
            lib.meshgrid(lib.arange(2), lib.arange(2.0), indexing="ij")
        with pytest.raises(RuntimeError, match="repeats must be 0-dim or 1-dim tensor"):
            lib.repeat_interleave(lib.tensor([1.0, 2.0]), lib.tensor([[1, 2]]))


def test_broadcast_to_takes_sizes_one_by_one_as_the_method_does(torch):
    assert tuple(torch.ones(3).broadcast_to(2, 3).shape) == tensor.ones(3).broadcast_to(2, 3).shape == (2, 3)
    assert tensor.broadcast_to(tensor.ones(3), size=[2, 3]).shape == (2, 3)
    with pytest.raises(TypeError, match="multiple values"):
        tensor.broadcast_to(tensor.ones(3), (2, 3), size=(2, 3))
