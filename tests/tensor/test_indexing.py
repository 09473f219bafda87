"""Indexing: ``t[index]`` (basic and advanced), ``t[index] = v``, and the gather/scatter family.

Forward values are checked against numpy on every device, gradients with float64 ``gradcheck``
(``gradgradcheck`` for a subset), and a table of index expressions against torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close, raises_by_next_sync

RNG = np.random.default_rng(1)
A34 = RNG.standard_normal((3, 4))
A234 = RNG.standard_normal((2, 3, 4))
MASK34 = A34 > 0

# (name, array, index): every index is valid numpy and torch indexing with identical meaning.
GETITEM_CASES = [
    ("int", A34, 1),
    ("neg_int", A34, -1),
    ("int_int", A34, (2, -3)),
    ("slice", A34, slice(1, None)),
    ("slice_step", A34, (slice(None), slice(None, None, 2))),
    ("slice_step_start", A234, (slice(None), slice(1, 3), slice(1, None, 2))),
    ("slice_past_end", A34, slice(2, 10)),
    ("empty_slice", A34, slice(2, 1)),
    ("none", A34, (None, 1)),
    ("none_middle", A34, (slice(None), None, slice(1, 3))),
    ("ellipsis", A234, (Ellipsis, 1)),
    ("ellipsis_none", A234, (0, Ellipsis, None)),
    ("bool_mask", A34, MASK34),
    ("bool_row_mask", A34, np.array([True, False, True])),
    ("bool_mask_dim1", A34, (slice(None), np.array([True, False, False, True]))),
    ("int_list", A34, [2, 0]),
    ("int_list_repeat", A34, [1, 1, 0]),
    ("int_array_neg", A34, np.array([-1, 0])),
    ("int_array_2d", A34, np.array([[0, 2], [1, 1]])),
    ("two_arrays", A34, (np.array([0, 2, 2]), np.array([3, 0, 0]))),
    ("array_slice", A234, (np.array([1, 0]), slice(None), 2)),
    ("slice_array", A234, (slice(None), np.array([2, 0, 2]))),
    ("separated_arrays", A234, (np.array([0, 1]), slice(None), np.array([3, 2]))),
    ("0d_array_ellipsis", A234, (Ellipsis, np.array(2))),
]


def _as_index(index, device):
    """The index with numpy arrays turned into tensors (so the tensor-index path is exercised)."""
    if isinstance(index, tuple):
        return tuple(_as_index(i, device) for i in index)
    if isinstance(index, np.ndarray):
        return tensor.tensor(index, device=device)
    return index


@pytest.mark.parametrize("name,array,index", GETITEM_CASES, ids=[c[0] for c in GETITEM_CASES])
def test_getitem_matches_numpy(device, name, array, index):
    x = tensor.tensor(array, device=device)
    assert_close(x[_as_index(index, device)], array[index])
    assert_close(x.float()[_as_index(index, device)], array.astype(np.float32)[index])


@pytest.mark.parametrize("name,array,index", GETITEM_CASES, ids=[c[0] for c in GETITEM_CASES])
def test_getitem_gradcheck(name, array, index):
    x = tensor.tensor(array, requires_grad=True)
    assert autograd.gradcheck(lambda t: t[_as_index(index, "cpu")] * 2, (x,))


@pytest.mark.parametrize("name", ["int_list_repeat", "two_arrays", "bool_mask", "slice_step"])
def test_getitem_gradgradcheck(name):
    _, array, index = next(c for c in GETITEM_CASES if c[0] == name)
    x = tensor.tensor(array, requires_grad=True)
    assert autograd.gradgradcheck(lambda t: t[_as_index(index, "cpu")] ** 2, (x,))


def test_repeated_indices_accumulate_gradient(device):
    x = tensor.zeros(4, dtype=tensor.float64, device=device, requires_grad=True)
    x[tensor.tensor([0, 2, 0, 0], device=device)].sum().backward()
    assert_close(x.grad, np.array([3.0, 0.0, 1.0, 0.0]))


def test_getitem_of_non_contiguous_and_0d(device):
    x = tensor.tensor(A34, device=device).T
    assert_close(x[1:, [0, 2]], A34.T[1:, [0, 2]])
    assert_close(x[..., ::2], A34.T[..., ::2])
    s = tensor.tensor(5.0, device=device)
    assert_close(s[None], np.array([5.0], dtype=np.float32))
    assert_close(s[...], np.array(5.0, dtype=np.float32))


def test_basic_index_is_view_and_advanced_is_copy(device):
    x = tensor.zeros(3, 4, device=device)
    x[1][::2].fill_(1.0)
    x[[2]].fill_(5.0)
    assert_close(x, np.array([[0] * 4, [1, 0, 1, 0], [0] * 4], dtype=np.float32))


@pytest.mark.parametrize("index,pattern", [
    (5, r"index (5 )?is out of bounds for dimension 0 with size 3"),
    (-4, r"index (-4 )?is out of bounds for dimension 0 with size 3"),
    ((0, 4), r"index (4 )?is out of bounds for dimension 1 with size 4"),
    ([0, 3], r"index (3 )?is out of bounds for dimension 0 with size 3"),
])
def test_getitem_out_of_range(device, index, pattern):
    with raises_by_next_sync(device, IndexError, pattern):
        tensor.zeros(3, 4, device=device)[index]


def test_getitem_bad_index_types(device):
    x = tensor.zeros(3, device=device)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[tensor.tensor([0.0], device=device)]
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        x["a"]
    with pytest.raises(IndexError, match="only integers, slices"):  # torch's exception type
        x[1.5]


def test_negative_slice_step_is_rejected(device):
    with pytest.raises(ValueError, match="step must be greater than zero"):
        tensor.arange(4, device=device)[::-1]


# (name, index, value): x = zeros(3, 4); x[index] = value, same as numpy.
SETITEM_CASES = [
    ("int_scalar", 1, 7.0),
    ("slice_scalar", (slice(None), slice(1, None, 2)), -2.0),
    ("row_broadcast", slice(0, 2), np.arange(4.0)),
    ("col_broadcast", (slice(None), slice(0, 2)), np.array([[1.0], [2.0], [3.0]])),
    ("mask_scalar", MASK34, 3.0),
    ("mask_values", MASK34, np.arange(float(MASK34.sum()))),
    ("int_array", np.array([2, 0]), np.array([[1.0, 2, 3, 4], [5, 6, 7, 8]])),
    ("two_arrays", (np.array([0, 2]), np.array([3, 1])), np.array([9.0, 8.0])),
    ("ellipsis_0d", (Ellipsis, 0), np.array(4.0)),
    ("int_value_cast", 0, 2),
]


@pytest.mark.parametrize("name,index,value", SETITEM_CASES, ids=[c[0] for c in SETITEM_CASES])
def test_setitem_matches_numpy(device, name, index, value):
    x = tensor.zeros(3, 4, dtype=tensor.float64, device=device)
    expected = np.zeros((3, 4))
    expected[index] = value
    version = x._version
    value = tensor.tensor(value, device=device) if isinstance(value, np.ndarray) else value
    x[_as_index(index, device)] = value
    assert_close(x, expected)
    assert x._version > version


@pytest.mark.parametrize("name,index,value", SETITEM_CASES, ids=[c[0] for c in SETITEM_CASES])
def test_setitem_gradcheck(name, index, value):
    value = np.asarray(value, dtype=np.float64)

    def fn(base, v):
        out = base * 1.0
        out[_as_index(index, "cpu")] = v
        return out

    base = tensor.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    v = tensor.tensor(value, requires_grad=True)
    assert autograd.gradcheck(fn, (base, v))


def test_setitem_non_contiguous_target(device):
    x = tensor.zeros(4, 3, dtype=tensor.float64, device=device)
    x.T[1] = tensor.tensor([1.0, 2.0, 3.0, 4.0], dtype=tensor.float64, device=device)
    assert_close(x[:, 1], np.array([1.0, 2.0, 3.0, 4.0]))


def test_setitem_out_of_range(device):
    with raises_by_next_sync(device, IndexError, "index (3 )?is out of bounds for dimension 0 with size 3"):
        tensor.zeros(3, device=device)[3] = 1.0


def _np_gather(a, dim, index):
    grids = list(np.ogrid[tuple(slice(0, s) for s in index.shape)])
    grids[dim] = index
    return a[tuple(grids)]


GATHER_INDEX = np.array([[0, 2, 1], [3, 3, 0]])


@pytest.mark.parametrize("dim,index", [
    (1, GATHER_INDEX),                  # index smaller than the input along both dims
    (0, np.array([[2, 0, 1, 1]])),
    (-1, np.array([[1], [0], [3]])),
    (1, np.zeros((3, 0), dtype=np.int64)),
])
def test_gather(device, dim, index):
    x = tensor.tensor(A34, device=device)
    idx = tensor.tensor(index, device=device)
    assert_close(x.gather(dim, idx), _np_gather(A34, dim % 2, index))
    assert_close(tensor.gather(x.T.contiguous().T, dim, idx), _np_gather(A34, dim % 2, index))
    leaf = tensor.tensor(A34, requires_grad=True)
    assert autograd.gradcheck(lambda t: t.gather(dim, tensor.tensor(index)), (leaf,))


def test_gather_gradgradcheck():
    leaf = tensor.tensor(A34, requires_grad=True)
    assert autograd.gradgradcheck(lambda t: t.gather(1, tensor.tensor(GATHER_INDEX)) ** 2, (leaf,))


def test_gather_errors(device):
    x = tensor.zeros(3, 4, device=device)
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        x.gather(1, tensor.zeros(3, 4, device=device))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(1, tensor.tensor([0], device=device))
    with raises_by_next_sync(device, RuntimeError, "index (4 )?is out of bounds for dimension 1 with size 4"):
        x.gather(1, tensor.tensor([[4]], device=device))


SCATTER_INDEX = np.array([[1, 0, 2, 0], [2, 1, 0, 2]])


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_scatter_matches_torch(torch, op):
    # (torch's backward rejects a src larger than the index; our gradcheck below covers that case)
    base, src = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))
    index = np.array([[1, 0, 2, 0], [0, 1, 2, 1]])  # distinct targets per column for scatter
    ours = [tensor.tensor(base, requires_grad=True), tensor.tensor(src, requires_grad=True)]
    theirs = [torch.tensor(base, requires_grad=True), torch.tensor(src, requires_grad=True)]
    out = getattr(ours[0] * 1, op)(0, tensor.tensor(index), ours[1])
    ref = getattr(theirs[0] * 1, op)(0, torch.tensor(index), theirs[1])
    assert_close(out, ref.detach().numpy())
    weights = RNG.standard_normal((3, 4))
    (out * tensor.tensor(weights)).sum().backward()
    (ref * torch.tensor(weights)).sum().backward()
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad.numpy())


def test_scatter_values(device):
    x = tensor.zeros(3, 4, device=device)
    idx = tensor.tensor(SCATTER_INDEX[:1], device=device)
    src = tensor.arange(1.0, 9.0, device=device).reshape(2, 4)
    assert_close(x.scatter(0, idx, src), np.array([[0, 2, 0, 4], [1, 0, 0, 0], [0, 0, 3, 0]], np.float32))
    assert_close(x.scatter(1, tensor.tensor([[3], [0], [1]], device=device), 2.5),
                 np.array([[0, 0, 0, 2.5], [2.5, 0, 0, 0], [0, 2.5, 0, 0]], np.float32))
    added = x.scatter_add(0, tensor.tensor(SCATTER_INDEX, device=device), tensor.ones(2, 4, device=device))
    expected = np.zeros((3, 4), np.float32)
    np.add.at(expected, (SCATTER_INDEX, np.arange(4)[None]), 1.0)
    assert_close(added, expected)
    assert x.sum().item() == 0  # out of place


def test_scatter_gradcheck():
    # src (3, 5) is larger than the index (2, 4): only its leading corner is read
    base, src = tensor.tensor(A34, requires_grad=True), tensor.tensor(RNG.standard_normal((3, 5)),
                                                                      requires_grad=True)
    idx = tensor.tensor(SCATTER_INDEX)
    assert autograd.gradcheck(lambda b, s: b.scatter_add(0, idx, s), (base, src))
    assert autograd.gradcheck(lambda b: b.scatter(0, idx[:1], 0.5), (base,))
    assert autograd.gradgradcheck(lambda b, s: b.scatter_add(0, idx, s * s), (base, src))


@pytest.mark.parametrize("dim,index", [(0, [2, 0, 2]), (1, [3]), (-1, [1, 0, 1, 3]), (1, [])])
def test_index_select(device, dim, index):
    x = tensor.tensor(A34, device=device)
    idx = tensor.tensor(index, dtype=tensor.int64, device=device)
    assert_close(x.index_select(dim, idx), np.take(A34, np.array(index, dtype=np.int64), axis=dim))
    assert_close(tensor.index_select(x.T, dim - 1 if dim >= 0 else 0, idx),
                 np.take(A34.T, np.array(index, dtype=np.int64), axis=dim - 1 if dim >= 0 else 0))
    assert autograd.gradcheck(lambda t: t.index_select(dim, tensor.tensor(index, dtype=tensor.int64)),
                              (tensor.tensor(A34, requires_grad=True),))


def test_index_select_errors(device):
    x = tensor.zeros(3, device=device)
    with raises_by_next_sync(device, IndexError, "index (3 )?is out of bounds for dimension 0 with size 3"):
        x.index_select(0, tensor.tensor([3], device=device))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(0, tensor.tensor([[0]], device=device))


def test_index_add(device):
    x = tensor.tensor(A34, device=device)
    src = tensor.tensor(A234[0][:, :2], device=device)  # (3, 2)
    out = x.index_add(1, tensor.tensor([3, 3], device=device), src, alpha=2)
    expected = A34.copy()
    expected[:, 3] += 2 * (A234[0][:, 0] + A234[0][:, 1])
    assert_close(out, expected)
    base, s = tensor.tensor(A34, requires_grad=True), tensor.tensor(A234[0][:, :2], requires_grad=True)
    assert autograd.gradcheck(lambda b, v: b.index_add(1, tensor.tensor([3, 0]), v), (base, s))


@pytest.mark.parametrize("mask", [MASK34, MASK34[0], MASK34[:, :1], np.array(True)],
                         ids=["full", "row_broadcast", "col_broadcast", "0d"])
def test_masked_fill(device, mask):
    x = tensor.tensor(A34, device=device)
    out = x.masked_fill(tensor.tensor(mask, device=device), -1.5)
    assert_close(out, np.where(mask, -1.5, A34))
    ints = tensor.tensor(A34 * 10, dtype=tensor.int64, device=device)
    assert ints.masked_fill(tensor.tensor(mask, device=device), 3).dtype is tensor.int64
    assert autograd.gradcheck(lambda t: t.masked_fill(tensor.tensor(mask), 2.0),
                              (tensor.tensor(A34, requires_grad=True),))


def test_masked_fill_non_0d_value(device):
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        tensor.zeros(2, device=device).masked_fill(tensor.tensor([True, False], device=device),
                                                   tensor.zeros(2, device=device))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(device, accumulate):
    x = tensor.tensor(A34, device=device)
    rows, cols = np.array([0, 2, 0]), np.array([1, 3, 1])
    vals = np.array([10.0, 20.0, 30.0])
    out = x.index_put((tensor.tensor(rows, device=device), tensor.tensor(cols, device=device)),
                      tensor.tensor(vals, device=device), accumulate=accumulate)
    expected = A34.copy()
    if accumulate:
        np.add.at(expected, (rows, cols), vals)
    else:
        expected[rows[1:], cols[1:]] = vals[1:]
    assert_close(out, expected)
    base, v = tensor.tensor(A34, requires_grad=True), tensor.tensor(vals[:2], requires_grad=True)
    idx = (tensor.tensor(rows[:2]), tensor.tensor(cols[:2]))
    assert autograd.gradcheck(lambda b, w: b.index_put(idx, w, accumulate=accumulate), (base, v))


# Index expressions compared with torch, forward and gradient (the lambda runs on either library).
TORCH_CASES = [
    ("mixed", lambda m, t: t[1:, m.tensor([0, 2, 2])]),
    ("mask", lambda m, t: t[t > 0]),
    ("repeat_rows", lambda m, t: t[[0, 0, 2]] * 2),
    ("gather", lambda m, t: t.gather(1, m.tensor([[0, 0], [1, 3], [2, 2]]))),
    ("index_select", lambda m, t: t.index_select(0, m.tensor([2, 2, 1]))),
    ("masked_fill", lambda m, t: t.masked_fill(t < 0, 0.0)),
    ("index_add", lambda m, t: t.index_add(0, m.tensor([1, 1]), t[:2] * 3)),
    ("index_put", lambda m, t: t.index_put((m.tensor([0, 1]),), t[1:] * 2, accumulate=True)),
]


@pytest.mark.parametrize("name,fn", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_indexing_matches_torch(torch, name, fn):
    ours, theirs = tensor.tensor(A34, requires_grad=True), torch.tensor(A34, requires_grad=True)
    out, ref = fn(tensor, ours), fn(torch, theirs)
    assert_close(out, ref.detach().numpy())
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    assert_close(ours.grad, theirs.grad.numpy())


# ------------------------------------------------------------------ regressions found by the torch fuzz

def _both(torch, index, shape=(4, 5, 6)):
    """The index for tensor and for torch (numpy arrays become each library's tensors)."""
    def convert(lib, item):
        return lib.tensor(item) if isinstance(item, np.ndarray) else item
    items = index if isinstance(index, tuple) else (index,)
    return tuple(convert(tensor, i) for i in items), tuple(convert(torch, i) for i in items)


# Integer indices apply before the advanced ones in PyTorch (Note [Integer and advanced indices]).
INT_ADVANCED_CASES = [
    (1, slice(None), [0, 1, 2]),
    (0, slice(None), np.array([0, 1])),
    (None, slice(None), 1, None, np.array([0, 3])),
    (None, 1, slice(1, 3), [2, 0]),
    (1, None, [0, 1]),
    (1, Ellipsis, [5, 0]),
    ([0, 2], slice(None), 1),
    ([0, 2], None, 3),
    (1, slice(None), np.array([[0, 1], [2, 3]])),
    (1, slice(None, None, 2), np.array([True, False, True, False, True, True])),
    (1, slice(None), True),
    (0, slice(None), False),
    (np.array([1, 0]), Ellipsis, np.array([2, 2])),  # an ellipsis spanning no dims: no gap
    (slice(None), np.array([1, 0]), Ellipsis, 2),
    (2, np.array([[True, False] * 3] * 5)),
    (slice(1, 3), [0, 4], 2),
]


@pytest.mark.parametrize("index", INT_ADVANCED_CASES, ids=[str(i) for i in range(len(INT_ADVANCED_CASES))])
def test_int_and_advanced_index_dim_order_matches_torch(torch, index):
    base = np.arange(120.0).reshape(4, 5, 6)
    ours, theirs = _both(torch, index)
    expected = torch.tensor(base)[theirs]
    got = tensor.tensor(base)[ours]
    assert got.shape == tuple(expected.shape)
    assert_close(got, expected.numpy())
    value = np.arange(float(expected.numel())).reshape(tuple(expected.shape)) + 1000
    target, reference = tensor.tensor(base), torch.tensor(base)
    target[ours] = tensor.tensor(value)
    reference[theirs] = torch.tensor(value)
    assert_close(target, reference.numpy())
    leaf = tensor.tensor(base, requires_grad=True)
    assert autograd.gradcheck(lambda t: t[ours] * 2, (leaf,))


def test_random_indices_match_torch(torch):
    """A seeded sweep of index tuples mixing ints, slices, None, ellipsis, arrays, masks and bools."""
    rng = np.random.default_rng(7)
    shape = (3, 4, 2, 3)
    base = np.arange(float(np.prod(shape))).reshape(shape)
    makers = [
        lambda d: int(rng.integers(-shape[d], shape[d])),
        lambda d: slice(int(rng.integers(0, 2)), None, int(rng.integers(1, 3))),
        lambda d: rng.integers(-shape[d], shape[d], size=int(rng.integers(1, 3))),
        lambda d: rng.random(shape[d]) < 0.5,
    ]
    for _ in range(150):
        index, d = [], 0
        while d < len(shape) and len(index) < 4:
            if rng.random() < 0.15:
                index.append(None)
                continue
            index.append(makers[int(rng.integers(0, 4))](d))
            d += 1
        if rng.random() < 0.3:
            index.insert(int(rng.integers(0, len(index) + 1)), Ellipsis)
        ours, theirs = _both(torch, tuple(index))
        try:
            expected = torch.tensor(base)[theirs].numpy()
        except IndexError:  # masks and arrays that do not broadcast
            continue
        got = tensor.tensor(base)[ours]
        assert got.shape == expected.shape, index
        assert_close(got, expected)


def test_index_forms_torch_accepts(torch):
    x = tensor.arange(4.0)
    assert x[[]].shape == (0,) and x[[]].dtype is tensor.float32
    x[[]] = 1.0
    assert x.sum().item() == 6
    with pytest.warns(UserWarning, match="uint8 is now deprecated"):
        assert_close(x[tensor.tensor([1, 0, 1, 1], dtype=tensor.uint8)], np.array([0.0, 2, 3], np.float32))
    view = x[np.int64(1)]  # a numpy integer selects, as an int does: a view
    view.fill_(9.0)
    assert x[1].item() == 9.0
    y = tensor.zeros(2, 3, 4)
    assert y[..., ...].shape == (2, 3, 4) and y[0, ..., 1, ...].shape == (3,)  # later ellipses span no dims
    b, ref = tensor.zeros(2, 3), torch.zeros(2, 3)
    b[0, 1] = tensor.ones(1, 1, 1)  # leading size-1 dims of the value are dropped
    ref[0, 1] = torch.ones(1, 1, 1)
    assert_close(b, ref.numpy())


@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
def test_gather_scatter_index_range_and_errors(torch):
    # gather and the scatter ops take indices in [0, size): no counting from the end
    x = tensor.arange(3.0)
    for run in (lambda m, t: m.gather(t, 0, m.tensor([-1])),
                lambda m, t: t.scatter(0, m.tensor([-1]), m.tensor([9.0])),
                lambda m, t: t.scatter_add(0, m.tensor([3]), m.tensor([9.0])),
                lambda m, t: t.scatter_reduce(0, m.tensor([-1]), m.tensor([9.0]), "amax")):
        with pytest.raises(RuntimeError, match="out of bounds"):
            run(torch, torch.arange(3.0))
        with pytest.raises(RuntimeError, match="out of bounds"):
            run(tensor, x)
    for run in (lambda t, m: t.index_select(0, m.tensor([-1])),
                lambda t, m: t.index_add(0, m.tensor([3]), m.tensor([9.0])),
                lambda t, m: t.index_copy(0, m.tensor([-1]), m.tensor([9.0])),
                lambda t, m: t.index_reduce(0, m.tensor([-1]), m.tensor([9.0]), "prod")):
        with pytest.raises(IndexError):
            run(torch.arange(3.0), torch)
        with pytest.raises(IndexError):
            run(x, tensor)
    assert_close(x.index_fill(0, tensor.tensor([-1]), 7.0), np.array([0.0, 1, 7], np.float32))  # as torch
    assert_close(tensor.take(x, tensor.tensor([[-1, 0]])), np.array([[2.0, 0]], np.float32))


@pytest.mark.parametrize("op", ["scatter", "scatter_add", "scatter_reduce"])
def test_scatter_checks_index_against_self_and_src(op):
    x = tensor.zeros(3, 3)

    def run(index, src):
        args = (0, tensor.tensor(index), src) + (("sum",) if op == "scatter_reduce" else ())
        return getattr(x, op)(*args)

    with pytest.raises(RuntimeError, match=r"Expected index \[2, 2\] to be no larger than self \[3, 3\] apart "
                                           r"from dimension 0 and to be no larger size than src \[1, 1\]"):
        run([[0, 1], [1, 2]], tensor.ones(1, 1))
    with pytest.raises(RuntimeError, match="same number of dimensions as self tensor"):
        run([0, 1], tensor.ones(3, 3))
    with pytest.raises(RuntimeError, match="same number of dimensions as src tensor"):
        run([[0, 1]], tensor.ones(2))
    assert_close(run([[2, 1]], tensor.ones(2, 5)), np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0]], np.float32))


def test_gather_scatter_on_0d_and_with_0d_index(torch):
    for lib in (tensor, torch):
        five = lib.tensor(5.0)
        assert lib.gather(five, 0, lib.tensor(0)).item() == 5.0
        assert lib.gather(five, 0, lib.tensor([0, 0])).tolist() == [5.0, 5.0]
        assert lib.gather(lib.arange(3.0), 0, lib.tensor(2)).shape == ()
        assert five.scatter(0, lib.tensor(0), lib.tensor(1.0)).item() == 1.0
        assert five.scatter_add(0, lib.tensor(0), lib.tensor(1.0)).item() == 6.0
        assert five.scatter_reduce(0, lib.tensor(0), lib.tensor(2.0), "prod").item() == 10.0
        assert five.index_fill(0, lib.tensor([0]), 1.0).item() == 1.0
        assert five.index_select(0, lib.tensor([0])).shape == ()
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
        tensor.tensor(5.0).index_select(0, tensor.tensor([0, 0]))


@pytest.mark.filterwarnings("ignore:The reduce argument")
def test_scatter_reduce_and_value_keywords(torch):
    index = [0, 0, 2]
    for make in (
        lambda m: m.zeros(3).scatter(0, m.tensor(index), m.ones(3), reduce="add"),
        lambda m: m.full((3,), 2.0).scatter(0, m.tensor(index), m.full((3,), 3.0), reduce="multiply"),
        lambda m: m.ones(3).scatter(0, m.tensor(index), 3.0, reduce="multiply"),
        lambda m: m.ones(3).scatter(0, m.tensor(index), value=3.0, reduce="add"),
        lambda m: m.zeros(3, 2).scatter(1, m.tensor([[0]]), value=2.0),
        lambda m: m.zeros(3, 2).scatter(1, index=m.tensor([[1]]), src=m.ones(1, 1)),
    ):
        assert_close(make(tensor), make(torch).numpy())
    t = tensor.zeros(3)
    assert t.scatter_(0, tensor.tensor([1, 1]), 2.0, reduce="add") is t
    assert t.tolist() == [0.0, 4.0, 0.0]
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        t.scatter(0, tensor.tensor([0]), 1.0, reduce="mean")
    with pytest.warns(UserWarning, match="reduce argument of tensor.scatter with Tensor src is deprecated"):
        t.scatter(0, tensor.tensor([0]), tensor.ones(1), reduce="add")


def test_index_select_add_copy_with_0d_index(torch):
    for lib in (tensor, torch):
        x = lib.arange(6.0).reshape(2, 3)
        assert x.index_select(0, lib.tensor(1)).shape == (1, 3)
        assert x.index_add(0, lib.tensor(1), lib.ones(1, 3)).tolist() == [[0, 1, 2], [4, 5, 6]]
        assert x.index_copy(1, lib.tensor(1), lib.zeros(2, 1)).tolist() == [[0, 0, 2], [3, 0, 5]]


def test_index_copy_repeated_index_last_wins_and_errors(torch):
    for lib in (tensor, torch):
        out = lib.zeros(3).index_copy(0, lib.tensor([1, 1]), lib.tensor([5.0, 7.0]))
        assert out.tolist() == [0.0, 7.0, 0.0]
        with pytest.raises(RuntimeError, match="same dtype"):
            lib.zeros(3).index_copy(0, lib.tensor([1]), lib.tensor([5.0], dtype=lib.float64))
        with pytest.raises(IndexError, match="Number of indices"):
            lib.zeros(3).index_copy(0, lib.tensor([1]), lib.tensor([5.0, 6.0]))
        with pytest.raises(RuntimeError):
            lib.zeros(3).index_copy(0, lib.tensor([1], dtype=lib.int32), lib.tensor([5.0]))
        with pytest.raises(RuntimeError, match="same scalar type"):
            lib.zeros(2, 3).index_add(0, lib.tensor([0]), lib.ones(1, 3, dtype=lib.float64))
    leaf = tensor.tensor(A34, requires_grad=True)
    assert autograd.gradcheck(lambda t, s: t.index_copy(1, tensor.tensor([3, 0]), s),
                              (leaf, tensor.tensor(A34[:, :2], requires_grad=True)))


def test_unique_keeps_nans_distinct(torch):
    data = [float("nan"), 2.0, float("nan"), 1.0, 2.0]
    ours = tensor.unique(tensor.tensor(data), return_inverse=True, return_counts=True)
    theirs = torch.unique(torch.tensor(data), return_inverse=True, return_counts=True)
    for a, b in zip(ours, theirs):
        assert_close(a, b.numpy())


def test_unique_consecutive_of_empty(torch):
    values, inverse, counts = tensor.unique_consecutive(tensor.zeros(0, 3), True, True, dim=0)
    assert values.shape == (0, 3) and inverse.shape == (0,) and counts.shape == (0,)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        tensor.unique_consecutive(tensor.zeros(0, 3), dim=1)


def test_index_fill_keeps_bool_and_casts_the_scalar(torch):
    for lib in (torch, tensor):
        assert lib.tensor([True, False]).index_fill(0, lib.tensor([1]), 7).tolist() == [True, True]
        assert lib.tensor([True, False]).index_fill_(0, lib.tensor([1]), 7).dtype == lib.bool
        assert lib.tensor([1, 2]).index_fill(0, lib.tensor([0]), 2.5).tolist() == [2, 2]
        with pytest.raises(RuntimeError):
            lib.tensor([1.0, 2.0]).index_fill(0, lib.tensor([0]), 1j)


@pytest.mark.parametrize("weights_dtype", ["float16", "bfloat16", "float32", "float64", "int32", "bool"])
def test_bincount_weights_dtype_as_torch(torch, weights_dtype):
    ours = tensor.ones(3, dtype=tensor.int32).bincount(tensor.ones(3, dtype=getattr(tensor, weights_dtype)))
    theirs = torch.ones(3, dtype=torch.int32).bincount(torch.ones(3, dtype=getattr(torch, weights_dtype)))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.") and ours.tolist() == theirs.tolist()


def _outcome(call):
    """What ``call()`` gives, comparable across libraries: its values, or its exception's class."""
    try:
        return call().tolist()
    except Exception as exc:  # noqa: BLE001 - the class is the result compared
        return type(exc).__name__


# (dtype, number): numbers just inside and outside what each dtype takes; an unsigned dtype takes
# negative ints down to minus its maximum, wrapped (-1 is 255 for uint8)
FILL_NUMBERS = [
    ("uint8", -1), ("uint8", -255), ("uint8", -256), ("uint8", 255), ("uint8", 300), ("uint8", -1.0),
    ("uint8", 300.5), ("int8", 127), ("int8", 200), ("int8", -129), ("int8", float("nan")),
    ("int64", 2**63 - 1), ("int64", 2**63), ("float16", 65504.0), ("float16", 1e6), ("float16", -1e9),
    ("float16", float("-inf")), ("float32", 1e39), ("bool", 300),
]
FILL_OPS = {
    "masked_fill": lambda lib, t, v: t.masked_fill(lib.tensor([True, False]), v),
    "index_fill": lambda lib, t, v: t.index_fill(0, lib.tensor([1]), v),
    "scatter": lambda lib, t, v: t.scatter(0, lib.tensor([0]), v),
    "scatter_": lambda lib, t, v: t.clone().scatter_(0, lib.tensor([1]), v),
}


@pytest.mark.parametrize("op", sorted(FILL_OPS))
@pytest.mark.parametrize("dtype,number", FILL_NUMBERS, ids=[f"{d}-{n}" for d, n in FILL_NUMBERS])
def test_fill_numbers_out_of_the_dtypes_range_wrap_or_raise_as_torch(torch, op, dtype, number):
    """PyTorch's checked conversion: a RuntimeError, never numpy's OverflowError or a silent wrap."""
    results = [_outcome(lambda lib=lib: FILL_OPS[op](lib, lib.tensor([1, 0], dtype=getattr(lib, dtype)), number))
               for lib in (tensor, torch)]
    assert results[0] == results[1]


MIXED_SOURCES = {
    "scatter": lambda lib, a, i, s: a.scatter(0, i, s),
    "scatter_": lambda lib, a, i, s: a.clone().scatter_(0, i, s),
    "scatter_add": lambda lib, a, i, s: a.scatter_add(0, i, s),
    "scatter_add_": lambda lib, a, i, s: a.clone().scatter_add_(0, i, s),
    "scatter_reduce": lambda lib, a, i, s: a.scatter_reduce(0, i, s, "amax"),
    "put": lambda lib, a, i, s: a.put(i, s),
    "put_": lambda lib, a, i, s: a.clone().put_(i, s, accumulate=True),
}


@pytest.mark.parametrize("op", sorted(MIXED_SOURCES))
@pytest.mark.parametrize("source_dtype", ["float64", "int64", "float32"])
def test_sources_of_another_dtype_are_refused_as_torch(torch, op, source_dtype):
    results = []
    for lib in (tensor, torch):
        a, i = lib.zeros(3), lib.tensor([1])
        source = lib.ones(1, dtype=getattr(lib, source_dtype))
        results.append(_outcome(lambda: MIXED_SOURCES[op](lib, a, i, source)))
    assert results[0] == results[1]


# index_put with values of another dtype (float64 into float32): PyTorch refuses them with index
# tensors, but a single mask with one value runs masked_fill_, and basic indices copy; both cast
INDEX_PUTS_OF_ANOTHER_DTYPE = {
    "index": lambda lib, t, v: t.index_put((lib.tensor([0, 2]),), v.expand(2)),
    "index_": lambda lib, t, v: t.index_put_((lib.tensor([0, 2]),), v),
    "accumulate": lambda lib, t, v: t.index_put((lib.tensor([0, 2]),), v, accumulate=True),
    "mask, one value": lambda lib, t, v: t.index_put((lib.tensor([True, False, True]),), v),
    "mask, one value, accumulate": lambda lib, t, v: t.index_put((lib.tensor([True, False, True]),), v, True),
    "mask, two values": lambda lib, t, v: t.index_put((lib.tensor([True, False, True]),), v.expand(2)),
    "two masks": lambda lib, t, v: t.index_put((lib.tensor([True, False, True]),) * 2, v),
    "setitem, index": lambda lib, t, v: t.__setitem__(lib.tensor([0, 2]), v) or t,
    "setitem, mask": lambda lib, t, v: t.__setitem__(lib.tensor([True, False, True]), v) or t,
    "setitem, slice": lambda lib, t, v: t.__setitem__(slice(0, 2), v) or t,
}


@pytest.mark.parametrize("op", sorted(INDEX_PUTS_OF_ANOTHER_DTYPE))
@pytest.mark.parametrize("grad", [False, True])
def test_index_put_of_another_dtype_raises_or_casts_as_torch(torch, op, grad):
    results = []
    for lib in (tensor, torch):
        target = lib.zeros(3, 3, requires_grad=grad) * 1 if op == "two masks" else lib.zeros(3, requires_grad=grad) * 1
        values = lib.tensor([1.5], dtype=lib.float64)
        outcome = _outcome(lambda: INDEX_PUTS_OF_ANOTHER_DTYPE[op](lib, target, values))
        results.append(outcome if isinstance(outcome, str) else (outcome, str(target.dtype).split(".")[-1]))
    assert results[0] == results[1]


def test_index_put_dtype_error_names_both_dtypes():
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Long "
                                           "for the destination and Float for the source."):
        tensor.zeros(3, dtype=tensor.int64).index_put((tensor.tensor([1]),), tensor.ones(1))
