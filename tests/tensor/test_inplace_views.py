"""Views and in-place ops: shared storage, the version counter, and autograd through in-place writes.

Views share memory with their base in both directions (also across ``from_numpy`` / ``.numpy()``);
in-place ops give the same values as their out-of-place forms; autograd refuses stale saved tensors
and in-place writes to leaves with PyTorch's messages, and otherwise matches torch's gradients.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(3)
A34 = RNG.standard_normal((3, 4))

# (name, fn making a view of a (3, 4) tensor, the same view of a numpy array)
VIEW_CASES = [
    ("slice", lambda t: t[1:, ::2], lambda a: a[1:, ::2]),
    ("int", lambda t: t[1], lambda a: a[1]),
    ("view", lambda t: t.view(2, 6), lambda a: a.reshape(2, 6)),
    ("reshape", lambda t: t.reshape(12), lambda a: a.reshape(12)),
    ("T", lambda t: t.T, lambda a: a.T),
    ("permute_unsqueeze", lambda t: t.permute(1, 0).unsqueeze(0), lambda a: a.T[None]),
    ("narrow", lambda t: t.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    ("select", lambda t: t.select(1, 3), lambda a: a[:, 3]),
    ("split", lambda t: t.split(2, 1)[1], lambda a: a[:, 2:]),
    ("unbind", lambda t: t.unbind(0)[2], lambda a: a[2]),
    ("detach", lambda t: t.detach(), lambda a: a),
    ("chained", lambda t: t[:, 1:].T[::2], lambda a: a[:, 1:].T[::2]),
]


@pytest.mark.parametrize("name,make_view,np_view", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_view_sees_base_writes_and_base_sees_view_writes(device, name, make_view, np_view):
    base = tensor.tensor(A34, device=device)
    expected = A34.copy()
    view = make_view(base)
    base.add_(1.0)
    expected += 1.0
    assert_close(view, np_view(expected))
    view.mul_(-2.0)
    np_view(expected)[...] *= -2.0
    assert_close(base, expected)
    view.fill_(7.0)
    np_view(expected)[...] = 7.0
    assert_close(base, expected)
    assert view._version == base._version


def test_setitem_on_view_and_inplace_on_view_seen_through_base(device):
    base = tensor.zeros(3, 4, device=device)
    row = base[1]
    row[2] = 5.0
    base.T[0].copy_(tensor.tensor([1.0, 2.0, 3.0], device=device))
    expected = np.zeros((3, 4), np.float32)
    expected[1, 2] = 5.0
    expected[:, 0] = [1, 2, 3]
    assert_close(base, expected)
    assert_close(row, expected[1])


def test_from_numpy_is_zero_copy_both_ways():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tensor.from_numpy(array)
    array[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    t[1].add_(10.0)
    np.testing.assert_array_equal(array[1], [13.0, 14.0, 15.0])
    assert t.data_ptr() == array.ctypes.data


def test_numpy_shares_memory():
    t = tensor.zeros(2, 3)
    array = t.numpy()
    array[1, 1] = 3.0
    assert t[1, 1].item() == 3.0
    t.fill_(-1.0)
    assert (array == -1.0).all()
    assert np.shares_memory(t.T.numpy(), array)


def test_numpy_of_tensor_requiring_grad_refuses():
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        tensor.zeros(2, requires_grad=True).numpy()


# (name, fn applying the in-place op, equivalent numpy result)
INPLACE_CASES = [
    ("add_", lambda t: t.add_(tensor.tensor([1.0, 2, 3, 4], dtype=t.dtype, device=t.device)),
     lambda a: a + [1, 2, 3, 4]),
    ("add_scalar", lambda t: t.add_(2.5), lambda a: a + 2.5),
    ("sub_", lambda t: t.sub_(tensor.tensor([[1.0], [2], [3]], dtype=t.dtype, device=t.device)),
     lambda a: a - [[1], [2], [3]]),
    ("mul_", lambda t: t.mul_(3.0), lambda a: a * 3.0),
    ("div_", lambda t: t.div_(4.0), lambda a: a / 4.0),
    ("clamp_", lambda t: t.clamp_(-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)),
    ("clamp_min", lambda t: t.clamp_(min=0.0), lambda a: np.maximum(a, 0.0)),
    ("zero_", lambda t: t.zero_(), lambda a: np.zeros_like(a)),
    ("fill_", lambda t: t.fill_(1.5), lambda a: np.full_like(a, 1.5)),
    ("fill_0d", lambda t: t.fill_(tensor.tensor(-2.0, dtype=t.dtype, device=t.device)),
     lambda a: np.full_like(a, -2.0)),
    ("copy_", lambda t: t.copy_(tensor.arange(4.0, device=t.device)),
     lambda a: np.broadcast_to(np.arange(4.0), a.shape)),
    ("copy_cast", lambda t: t.copy_(tensor.ones(3, 4, dtype=tensor.int64, device=t.device)),
     lambda a: np.ones_like(a)),
    ("masked_fill_", lambda t: t.masked_fill_(t > 0, 0.0), lambda a: np.where(a > 0, 0.0, a)),
    ("index_put_", lambda t: t.index_put_(_on(t, [0, 2], [1, 1]), tensor.tensor(9.0, dtype=t.dtype, device=t.device)),
     lambda a: _set(a, ([0, 2], [1, 1]), 9.0)),
    ("index_put_acc", lambda t: t.index_put_(_on(t, [0, 0]), tensor.ones(4, dtype=t.dtype, device=t.device),
                                             accumulate=True), lambda a: _set(a, 0, a[0] + 2)),
    ("scatter_", lambda t: t.scatter_(1, *_on(t, [[3], [0], [1]]), 8.0),
     lambda a: _set(a, ([0, 1, 2], [3, 0, 1]), 8.0)),
    ("scatter_add_", lambda t: t.scatter_add_(0, *_on(t, [[2, 2, 2, 2]]),
                                              tensor.ones(1, 4, dtype=t.dtype, device=t.device)),
     lambda a: _set(a, 2, a[2] + 1)),
]


def _on(t, *indices):
    """Integer index tensors on ``t``'s device."""
    return tuple(tensor.tensor(i, device=t.device) for i in indices)


def _set(a, index, value):
    out = a.copy()
    out[index] = value
    return out


@pytest.mark.parametrize("name,fn,np_fn", INPLACE_CASES, ids=[c[0] for c in INPLACE_CASES])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_inplace_values(device, name, fn, np_fn, layout):
    if layout == "contiguous":
        t, a = tensor.tensor(A34, device=device), A34
    else:  # the same logical (3, 4) values held in a transposed (non-contiguous) tensor
        t, a = tensor.tensor(np.ascontiguousarray(A34.T), device=device).T, A34
    version = t._version
    out = fn(t)
    assert out is t
    assert t._version > version
    assert_close(t, np_fn(a))


def test_inplace_on_int_tensor_with_float_result_raises(device):
    t = tensor.tensor([1, 2, 3], device=device)
    with pytest.raises(RuntimeError,
                       match=r"result type float32 can't be cast to the desired output type int64"):
        t.add_(1.5)
    with pytest.raises(RuntimeError, match="result type .* can't be cast"):
        t.mul_(tensor.tensor([0.5], device=device))
    assert_close(t, np.array([1, 2, 3]))
    t.add_(tensor.tensor(True, device=device))  # bool -> int is allowed
    assert_close(t, np.array([2, 3, 4]))


def test_inplace_shape_must_not_grow(device):
    with pytest.raises(RuntimeError,
                       match=r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        tensor.zeros(3, device=device).add_(tensor.zeros(2, 3, device=device))


def test_writing_into_expanded_tensor_raises(device):
    expanded = tensor.zeros(3, 1, device=device).expand(3, 4)
    with pytest.raises(RuntimeError,
                       match="more than one element of the written-to tensor refers to a single"):
        expanded.add_(1.0)
    with pytest.raises(RuntimeError, match="more than one element"):
        expanded[0, 0] = 1.0


def test_modified_saved_tensor_raises_on_backward():
    w = tensor.tensor(A34, requires_grad=True)
    x = tensor.tensor(A34, requires_grad=True) * 1  # non-leaf
    y = x * w
    x.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been "
                                           "modified by an inplace operation"):
        y.sum().backward()


def test_modifying_through_a_view_also_invalidates():
    x = tensor.tensor(A34, requires_grad=True) * 1
    y = x.exp() * x
    x[0].zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_on_leaf_requiring_grad_raises():
    leaf = tensor.tensor(A34, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):
        leaf.add_(1.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf[0] = 1.0
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        leaf[0].mul_(2.0)
    view_leaf = tensor.tensor(A34).t().requires_grad_()  # a view made a leaf: its views count too
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        view_leaf[0].add_(1.0)
    view_leaf.detach()[0].add_(1.0)  # not through the leaf's history


def test_inplace_on_leaf_under_no_grad_is_allowed():
    leaf = tensor.tensor(A34, requires_grad=True)
    with tensor.no_grad():
        leaf.mul_(2.0)
        leaf[0] = 0.0
    expected = A34 * 2
    expected[0] = 0
    assert_close(leaf.detach(), expected)
    assert leaf.is_leaf and leaf.requires_grad


def _clone_mul_setitem(m, x, z, w):
    y = x.clone()
    y.mul_(2)
    y[0] = z
    return y


def _view_column_mul(m, x, z, w):
    b = x.clone()
    b[:, 0].mul_(3)
    return b * b


def _view_row_add(m, x, z, w):
    b = x.clone()
    v = b[1]
    v.add_(w)
    return b * b + v.sum()


def _both_view_writes(m, x, z, w):
    b = x * 1
    b[:, 0].mul_(3)
    v = b[1]
    v.add_(w)
    return b.tanh() * v


def _transposed_view_chain(m, x, z, w):
    b = x.clone()
    v = b.T[1:]
    v.mul_(w[:3])
    v.exp_()
    return b + 0


def _setitem_mask_and_index(m, x, z, w):
    b = x.clone()
    b[b > 0] = 0.0
    b[[0, 2], 1] = z[:2]
    b.masked_fill_(b < -1, 1.0)
    return b * x


def _stale_sibling_view(m, x, z, w):
    b = x.clone()
    column = b[:, 0]          # made before the in-place ops below
    b[0].mul_(2)              # through another view
    b.add_(w)                 # on the base itself
    return column * z[:3]


def _view_made_before_base_write(m, x, z, w):
    b = x * 1
    row = b[1:].T[2]
    b.mul_(z)
    return row.exp() + b.sum()


def _inplace_then_view_later(m, x, z, w):
    b = x.clone()
    b.mul_(w)
    v = b[:, 1:3]
    v.clamp_(-0.5, 0.5)
    return (v + 2).sum() + b.sum()


def _copy_and_index_put(m, x, z, w):
    b = x.clone()
    b[2].copy_(z)
    b.index_put_((m.tensor([0, 0]),), w, accumulate=True)
    b.div_(2.0)
    return b


def _scatter_into_clone(m, x, z, w):
    b = x * 1
    b.scatter_(1, m.tensor([[3], [0], [1]]), z[:3].reshape(3, 1))
    b.scatter_add_(0, m.tensor([[2, 1, 0, 2]]), w.reshape(1, 4))
    return b * b


GRAD_CASES = [_clone_mul_setitem, _view_column_mul, _view_row_add, _both_view_writes,
              _transposed_view_chain, _setitem_mask_and_index, _inplace_then_view_later,
              _copy_and_index_put, _scatter_into_clone, _stale_sibling_view, _view_made_before_base_write]


@pytest.mark.parametrize("fn", GRAD_CASES, ids=[f.__name__.strip("_") for f in GRAD_CASES])
def test_inplace_gradients_match_torch(torch, fn):
    arrays = [A34, RNG.standard_normal(4), RNG.standard_normal(4)]
    ours = [tensor.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = fn(tensor, *ours), fn(torch, *theirs)
    assert_close(out, ref.detach().numpy())
    weights = RNG.standard_normal(ref.shape)
    (out * tensor.tensor(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    for mine, reference in zip(ours, theirs):
        if reference.grad is None:
            assert mine.grad is None
        else:
            assert_close(mine.grad, reference.grad.numpy())


def test_inplace_on_non_leaf_rewrites_history():
    x = tensor.tensor(A34, requires_grad=True)
    y = x * 1
    y.mul_(2)
    assert not y.is_leaf and y.grad_fn is not None
    b = x.clone()
    view = b[0]
    view.add_(1.0)
    assert b.grad_fn is not None and view.grad_fn is not None
    view.sum().backward()
    expected = np.zeros((3, 4))
    expected[0] = 1.0
    assert_close(x.grad, expected)


def test_backward_from_a_view_made_before_its_base_changed(torch):
    results = []
    for m in (tensor, torch):
        x = m.tensor(A34, requires_grad=True)
        b = x.clone()
        row = b[0]
        b.mul_(3)
        row.backward(m.ones(4, dtype=m.float64))
        results.append(x.grad)
    assert_close(results[0], results[1].numpy())


@pytest.mark.parametrize("call", [
    lambda m: m.ones(2, 3).copy_(m.ones(4)),
    lambda m: m.ones(2, 3).copy_(m.ones(2, 2, 3)),
    lambda m: m.ones(2, 3, requires_grad=True).clone().copy_(m.ones(4)),
    lambda m: m.ones(2, 3).fill_(m.ones(2)),
])
def test_copy_and_fill_shape_errors_are_runtime_errors_as_torch(torch, call):
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(RuntimeError):
        call(tensor)


def test_copy_still_broadcasts():
    assert tensor.zeros(2, 3).copy_(tensor.tensor([1.0, 2.0, 3.0])).tolist() == [[1.0, 2.0, 3.0]] * 2


@pytest.mark.parametrize(
    "dtype, value", [("uint8", -1), ("uint8", 300), ("int8", 200), ("float16", 1e6), ("int32", -1.0)]
)
def test_setitem_and_fill_read_numbers_in_the_dtype_as_torch(dtype, value, torch):
    """-1 wraps to 255 for uint8; other out-of-range numbers raise RuntimeError (numpy's error was
    OverflowError); setitem keeps float16's inf as torch does."""
    outcomes = []
    for lib in (tensor, torch):
        row = []
        for write in (lambda t: t.__setitem__(0, value), lambda t: t.fill_(value)):
            t = lib.zeros(2, dtype=getattr(lib, dtype))
            try:
                write(t)
                row.append(t.tolist())
            except RuntimeError:
                row.append("RuntimeError")
        outcomes.append(row)
    assert outcomes[0] == outcomes[1]
