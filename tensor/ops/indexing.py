"""Indexing: ``t[index]``, ``t[index] = v``, gather/scatter, index_select/index_add, masked_fill."""

from __future__ import annotations

from .. import _backend, _dispatch
from .elementwise import where
from .reduction import wrap_dim
from .registry import defop

__all__ = [
    "getitem", "index_put", "gather", "scatter", "scatter_add", "index_select", "index_add",
    "masked_fill", "normalize_index",
]


def normalize_index(tensor, index) -> tuple[tuple, bool]:
    """Turn a user index into a tuple numpy understands; also say if it selects a view.

    Tensors in the index become arrays (bool tensors are masks); lists become
    integer arrays, as in PyTorch.

    Raises:
        IndexError: for tensors of a non-integer, non-bool dtype, or on another device.
        TypeError: for objects that cannot index.
    """
    if not isinstance(index, tuple):
        index = (index,)
    parts, basic = [], True
    for item in index:
        if item is None or item is Ellipsis or isinstance(item, slice):
            if isinstance(item, slice) and item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
            parts.append(item)
        elif isinstance(item, bool) or (isinstance(item, int)):
            parts.append(item)
        elif _dispatch.is_tensor(item):
            if item._device is not tensor._device:
                raise IndexError(
                    f"indices should be on the same device as the indexed tensor "
                    f"({item._device} vs {tensor._device})"
                )
            kind = item._data.dtype.kind
            if kind not in "biu":
                raise IndexError(
                    "tensors used as indices must be long, int, byte or bool tensors, "
                    f"got {item.dtype.name}"
                )
            if item.ndim == 0 and kind != "b":
                parts.append(int(item._data))
            else:
                parts.append(item._data)
                basic = False
        elif isinstance(item, (list, tuple)) or hasattr(item, "__array__"):
            parts.append(tensor._device.backend.asarray(item, None, tensor._device.index))
            basic = False
        else:
            raise TypeError(
                f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                f"are valid indices (got {type(item).__name__})"
            )
    return tuple(parts), basic


def _indexing_error(exc: IndexError) -> IndexError:
    return IndexError(str(exc).replace("axis", "dimension"))


def _getitem_kernel(xp, a, index):
    try:
        _backend.check_index_bounds(xp, a.shape, index)
        out = a[index]
    except IndexError as exc:
        raise _indexing_error(exc) from None
    if not isinstance(out, xp.ndarray):  # numpy gives a scalar for an all-integer index, not a view
        out = a[(*index, Ellipsis) if isinstance(index, tuple) else (index, Ellipsis)]
    return out


_getitem_view = defop("getitem_view", is_view=True)(_getitem_kernel)
_getitem_copy = defop("getitem")(_getitem_kernel)


def _getitem_derivative(node, g):
    basic = node.op is _getitem_view
    return (_dispatch.apply_unary(_index_backward, g, (node.input_shapes[0], node.params[0], basic)),)


_getitem_view.derivative(_getitem_derivative)
_getitem_copy.derivative(_getitem_derivative)


@defop("index_backward")
def _index_backward(xp, g, shape, index, basic):
    out = xp.zeros(shape, dtype=g.dtype)
    if basic:  # a view selects each element at most once: a plain write is enough
        out[index] = g
    else:
        _backend.scatter_add(xp, out, index, g)
    return out


@_index_backward.derivative
def _(node, gg):
    _, index, basic = node.params
    return (getitem_normalized(gg, index, basic),)


def getitem_normalized(tensor, index, basic):
    """Index with an already normalized index."""
    return _dispatch.apply_unary(_getitem_view if basic else _getitem_copy, tensor, (index,))


def getitem(tensor, index):
    """``tensor[index]``: basic indexing gives a view, advanced indexing a copy.

    Raises:
        IndexError: e.g. "index 5 is out of bounds for dimension 0 with size 3".
    """
    if type(index) is int:  # the commonest index (a dataset's ``x[i]``), already in normal form
        return _dispatch.apply_unary(_getitem_view, tensor, ((index,),))
    index, basic = normalize_index(tensor, index)
    return getitem_normalized(tensor, index, basic)


@defop("index_put")
def _index_put(xp, a, value, index, accumulate):
    out = a.copy()
    try:
        _backend.check_index_bounds(xp, a.shape, index)
        if accumulate:
            _backend.scatter_add(xp, out, index, value)
        else:
            out[index] = value
    except IndexError as exc:
        raise _indexing_error(exc) from None
    return out


@_index_put.derivative
def _(node, g):
    index, accumulate = node.params
    needs_a, needs_value = node.needs_input_grad
    ga = None
    if needs_a:
        ga = g if accumulate else _index_put_normalized(g, index, g.new_zeros(()), False)
    gv = getitem_normalized(g, index, False) if needs_value else None
    return ga, gv


def _index_put_normalized(tensor, index, value, accumulate):
    if not _dispatch.is_tensor(value):
        value = _dispatch.scalar_tensor(value, tensor.dtype, tensor._device)
    elif value.dtype is not tensor.dtype:
        value = value.to(tensor.dtype)
    return _dispatch.apply(_index_put, (tensor, value), (index, accumulate))


def index_put(tensor, indices, values, accumulate: bool = False):
    """Out-of-place ``tensor[indices] = values`` (or ``+=`` with ``accumulate``)."""
    index, _ = normalize_index(tensor, indices)
    return _index_put_normalized(tensor, index, values, accumulate)


def _check_index_tensor(name, index):
    if not _dispatch.is_tensor(index) or index._data.dtype.kind not in "iu":
        got = index.dtype.name if _dispatch.is_tensor(index) else type(index).__name__
        raise RuntimeError(f"{name}(): Expected dtype int64 for index, got {got}")


def _along_dim(xp, index, dim):
    # The full advanced index that addresses ``out[..., index[i,j,k], ...]`` along ``dim``.
    grids = list(xp.ogrid[tuple(slice(0, s) for s in index.shape)]) if index.ndim else []
    grids[dim] = index
    return tuple(grids)


@defop("gather", saves=(1,))
def _gather(xp, a, index, dim):
    return a[_along_dim(xp, index, dim)]


@_gather.derivative
def _(node, g):
    (index,) = node.saved
    dim = node.params[0]
    zeros = g.new_zeros(node.input_shapes[0])
    return scatter_add(zeros, dim, index, g), None


def gather(input, dim: int, index):
    """``out[i][j][k] = input[i][index[i][j][k]][k]`` for ``dim=1`` (and so on).

    Raises:
        RuntimeError: for a non-integer index or one of the wrong rank.
        IndexError: naming the out-of-range index value.
    """
    _check_index_tensor("gather", index)
    d = wrap_dim(dim, input.ndim)
    if index.ndim != input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    _check_range("gather", input, d, index)
    return _dispatch.apply(_gather, (input, index), (d,))


def _check_range(op, input, d, index):
    """A device-side assert that ``index`` is in [-size, size) for dimension ``d`` of ``input``."""
    if index.numel() == 0:
        return
    size = input.shape[d] if input.ndim else 1
    data = index._data
    low, high = data.min(), data.max()

    def describe() -> str:
        return f"index {high if high >= size else low} is out of bounds for dimension {d} with size {size}"

    index._device.backend.device_assert(
        (low < -size) | (high >= size), IndexError,
        f"{op}: an index is out of bounds for dimension {d} with size {size}", describe)


@defop("scatter", saves=(2,))
def _scatter_op(xp, a, src, index, dim, accumulate):
    out = a.copy()
    full = _along_dim(xp, index, dim)
    src = xp.broadcast_to(src, index.shape) if src.ndim == 0 else src[tuple(slice(0, s) for s in index.shape)]
    if accumulate:
        _backend.scatter_add(xp, out, full, src)
    else:
        out[full] = src
    return out


@_scatter_op.derivative
def _(node, g):
    (index,), (dim, accumulate) = node.saved, node.params
    needs_a, needs_src, _ = node.needs_input_grad
    ga = gs = None
    if needs_a:
        ga = g if accumulate else scatter(g, dim, index, 0.0)
    if needs_src:
        gs = g.gather(dim, index)
        src_shape = node.input_shapes[1]
        if len(src_shape) == 0:  # a 0-d src was broadcast to the index's shape
            gs = gs.sum()
        elif tuple(src_shape) != tuple(index.shape):  # only src's leading corner was read
            corner = tuple(slice(0, s) for s in index.shape)
            gs = _index_put_normalized(g.new_zeros(src_shape), corner, gs, False)
    return ga, gs, None


def _scatter(input, dim, index, src, accumulate):
    _check_index_tensor("scatter", index)
    d = wrap_dim(dim, input.ndim)
    _check_range("scatter", input, d, index)
    if not _dispatch.is_tensor(src):
        src = _dispatch.scalar_tensor(src, input.dtype, input._device)
    elif src.dtype is not input.dtype:
        src = src.to(input.dtype)
    return _dispatch.apply(_scatter_op, (input, src, index), (d, accumulate))


def scatter(input, dim: int, index, src):
    """Out-of-place ``out[index[i][j]][j] = src[i][j]`` (for ``dim=0``); ``src`` may be a number."""
    return _scatter(input, dim, index, src, False)


def scatter_add(input, dim: int, index, src):
    """Like ``scatter`` but adds, with repeated indices accumulating."""
    return _scatter(input, dim, index, src, True)


@defop("index_select", saves=(1,))
def _index_select(xp, a, index, dim):
    return xp.take(a, index, axis=dim)


@_index_select.derivative
def _(node, g):
    (dim,) = node.params
    zeros = g.new_zeros(node.input_shapes[0])
    return index_add(zeros, dim, node.saved[0], g), None


def index_select(input, dim: int, index):
    """Pick the entries ``index`` (a 1-D integer tensor) along ``dim``.

    Raises:
        IndexError: naming an out-of-range index.
    """
    _check_index_tensor("index_select", index)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = wrap_dim(dim, input.ndim)
    _check_range("index_select", input, d, index)
    return _dispatch.apply(_index_select, (input, index), (d,))


def index_add(input, dim: int, index, source, *, alpha=1):
    """Out-of-place ``input[..., index[i], ...] += alpha * source[..., i, ...]`` along ``dim``."""
    _check_index_tensor("index_add", index)
    d = wrap_dim(dim, input.ndim)
    _check_range("index_add", input, d, index)
    if alpha != 1:
        source = source * alpha
    full = (slice(None),) * d + (index._data,)
    return _index_put_normalized(input, full, source, True)


def masked_fill(input, mask, value):
    """``value`` where the bool ``mask`` (broadcast to the input) is True, else the input."""
    if _dispatch.is_tensor(value) and value.ndim != 0:
        raise RuntimeError(
            "masked_fill only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    if _dispatch.is_tensor(value):
        value = value.to(input.dtype)
    else:
        value = _dispatch.scalar_tensor(value, input.dtype, input._device)
    return where(mask, value, input)
