"""Indexing: ``t[index]``, ``t[index] = v``, gather/scatter, index_select/index_add, masked_fill."""

from __future__ import annotations

import operator
import warnings

from .. import _backend, _dispatch, _dtype
from .._number_cast import scalar_in_dtype
from .elementwise import where
from .index_normalize import normalize_index
from .reduction import wrap_dim
from .registry import defop

__all__ = [
    "getitem", "index_put", "gather", "scatter", "scatter_add", "index_select", "index_add",
    "masked_fill", "normalize_index",
]


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
    """Out-of-place ``tensor[indices] = values`` (or ``+=`` with ``accumulate``).

    Raises:
        RuntimeError: for a ``values`` tensor of another dtype where PyTorch refuses it (see
            ``check_put_dtype``).
    """
    index, _ = normalize_index(tensor, indices)
    if _dispatch.is_tensor(values) and values.dtype is not tensor.dtype:
        check_put_dtype(tensor, index, values, accumulate)
    return _index_put_normalized(tensor, index, values, accumulate)


def check_put_dtype(tensor, index, values, accumulate: bool) -> None:
    """Refuse ``values`` of another dtype than ``tensor`` where PyTorch's ``index_put_`` does: with
    index arrays, unless the one index array is a mask and ``values`` a single element on the CPU
    (PyTorch then runs ``masked_fill_``, which casts). Basic indices copy, which casts too.

    Raises:
        RuntimeError: PyTorch's message, naming both dtypes.
    """
    arrays = [part for part in index if hasattr(part, "dtype")]
    if not arrays:
        return
    one_mask = len(arrays) == 1 and arrays[0].dtype.kind == "b"
    if one_mask and not accumulate and values.numel() == 1 and values._device.type == "cpu":
        return
    raise RuntimeError(
        f"Index put requires the source and destination dtypes match, got "
        f"{_dtype.scalar_type_name(tensor.dtype)} for the destination and "
        f"{_dtype.scalar_type_name(values.dtype)} for the source."
    )


def _check_index_tensor(name, index):
    if not _dispatch.is_tensor(index) or index._data.dtype.kind not in "iu":
        got = index.dtype.name if _dispatch.is_tensor(index) else type(index).__name__
        raise RuntimeError(f"{name}(): Expected dtype int64 for index, got {got}")


def _along_dim(xp, index, dim):
    # The full advanced index that addresses ``out[..., index[i,j,k], ...]`` along ``dim``.
    grids = list(xp.ogrid[tuple(slice(0, s) for s in index.shape)])
    grids[dim] = index
    return tuple(grids)


def _check_range(op, input, d, index, error: type = RuntimeError):
    """A device-side assert that ``index`` is in [0, size) for dimension ``d`` of ``input``
    (PyTorch's gather, scatter and index_* ops do not count negative indices from the end)."""
    if index.numel() == 0:
        return
    size = input.shape[d] if input.ndim else 1
    data = index._data
    low, high = data.min(), data.max()

    def describe() -> str:
        return f"{op}(): index {high if high >= size else low} is out of bounds for dimension {d} with size {size}"

    index._device.backend.device_assert(
        (low < 0) | (high >= size), error,
        f"{op}(): an index is out of bounds for dimension {d} with size {size}", describe)


def _check_gather_scatter_shapes(op: str, input, d: int, index, src=None) -> None:
    """PyTorch's shape rules of gather and the scatter ops, where a 0-d tensor counts as 1-d of
    size 1: the index has as many dims as the input (and ``src``) and is no larger than the
    input apart from dim ``d`` (nor than ``src`` in any dim).

    Raises:
        RuntimeError: naming the shapes, when a rule is broken.
    """
    index_shape, input_shape = index.shape or (1,), input.shape or (1,)
    name = "input" if op == "gather" else "self"
    if len(index_shape) != len(input_shape):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {name} tensor")
    beyond = any(map(operator.gt, index_shape[:d] + index_shape[d + 1 :], input_shape[:d] + input_shape[d + 1 :]))
    if src is not None:
        src_shape = src.shape or (1,)
        if len(src_shape) != len(index_shape):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        beyond = beyond or any(map(operator.gt, index_shape, src_shape))
    if beyond:
        against = "" if src is None else f" and to be no larger size than src {list(src.shape)}"
        raise RuntimeError(
            f"{op}(): Expected index {list(index.shape)} to be no larger than {name} {list(input.shape)} "
            f"apart from dimension {d}{against}"
        )


def _prepared(op: str, input, dim: int, index, src=None) -> tuple:
    """Check the arguments of gather or a scatter op (a tensor ``src``, of the input's dtype);
    return the dim, wrapped, and the index made at least 1-d."""
    _check_index_tensor(op, index)
    if src is not None and src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = wrap_dim(dim, input.ndim)
    _check_gather_scatter_shapes(op, input, d, index, src)
    _check_range(op, input, d, index)
    return d, _at_least_1d(index)


def _at_least_1d(t):
    return t.reshape(1) if t.ndim == 0 else t


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
        RuntimeError: for a non-integer index, one of the wrong rank or larger than the input
            outside ``dim``, or an index value outside ``[0, size)``.
    """
    d, flat_index = _prepared("gather", input, dim, index)
    out = _dispatch.apply(_gather, (_at_least_1d(input), flat_index), (d,))
    return out if index.ndim else out.reshape(())


@defop("scatter", saves=(2,))
def _scatter_op(xp, a, src, index, dim, reduce):
    out = a.copy()
    full = _along_dim(xp, index, dim)
    src = xp.broadcast_to(src, index.shape) if src.ndim == 0 else src[tuple(slice(0, s) for s in index.shape)]
    if reduce is None:
        out[full] = src
    elif reduce == "add":
        _backend.scatter_add(xp, out, full, src)
    else:
        _backend.scatter_reduce(xp, out, full, src, "prod")
    return out


@_scatter_op.derivative
def _(node, g):
    (index,), (dim, reduce) = node.saved, node.params
    if reduce == "multiply":
        raise RuntimeError("the derivative of scatter with reduce='multiply' is not implemented: use "
                           "scatter_reduce(..., 'prod')")
    needs_a, needs_src, _ = node.needs_input_grad
    ga = gs = None
    if needs_a:
        ga = g if reduce == "add" else scatter(g, dim, index, 0.0)
    if needs_src:
        gs = g.gather(dim, index)
        src_shape = node.input_shapes[1]
        if len(src_shape) == 0:  # a number, broadcast to the index's shape
            gs = gs.sum()
        elif tuple(src_shape) != tuple(index.shape):  # only src's leading corner was read
            corner = tuple(slice(0, s) for s in index.shape)
            gs = _index_put_normalized(g.new_zeros(src_shape), corner, gs, False)
    return ga, gs, None


def _scatter(op, input, dim, index, src, reduce):
    if _dispatch.is_tensor(index) and index.numel() == 0:  # PyTorch checks nothing more either
        return input.clone()
    if _dispatch.is_tensor(src):
        d, flat_index = _prepared(op, input, dim, index, src)
        src = _at_least_1d(src)
    else:
        d, flat_index = _prepared(op, input, dim, index)
        src = _dispatch.scalar_tensor(scalar_in_dtype(src, input.dtype), input.dtype, input._device)
    out = _dispatch.apply(_scatter_op, (_at_least_1d(input), src, flat_index), (d, reduce))
    return out if input.ndim else out.reshape(())


def scatter(input, dim: int, index, src=None, *, value=None, reduce: str | None = None):
    """Out-of-place ``out[index[i][j]][j] = src[i][j]`` (for ``dim=0``); ``src`` may be a number,
    also given as ``value``. ``reduce="add"`` or ``"multiply"`` combines the values written to
    one place, and the input's, by that operation.

    Raises:
        RuntimeError: for an unknown ``reduce``, index values outside ``[0, size)``, an index
            larger than the input (outside ``dim``) or ``src``, a ``src`` tensor of another dtype,
            or a number out of the input dtype's range (see ``scalar_in_dtype``).
        TypeError: unless exactly one of ``src`` and ``value`` is given.
    """
    if (src is None) == (value is None):
        raise TypeError("scatter() takes exactly one of src and value")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and _dispatch.is_tensor(src):
        warnings.warn(
            "The reduce argument of tensor.scatter with Tensor src is deprecated and will be removed in a "
            "future PyTorch release. Use tensor.scatter_reduce instead for more reduction options.",
            UserWarning, stacklevel=2)
    return _scatter("scatter", input, dim, index, value if src is None else src, reduce)


def scatter_add(input, dim: int, index, src):
    """Like ``scatter`` but adds, with repeated indices accumulating.

    Raises:
        RuntimeError: as ``scatter``.
    """
    return _scatter("scatter_add", input, dim, index, src, "add")


@defop("index_select", saves=(1,))
def _index_select(xp, a, index, dim):
    return xp.take(a, index, axis=dim)


@_index_select.derivative
def _(node, g):
    (dim,) = node.params
    zeros = g.new_zeros(node.input_shapes[0])
    return index_add(zeros, dim, node.saved[0], g), None


def index_select(input, dim: int, index):
    """Pick the entries ``index`` (a 0-d or 1-d integer tensor) along ``dim``.

    Raises:
        IndexError: for a >1-d index, or an index value outside ``[0, size)``.
        RuntimeError: for a non-integer index, or more than one index into a 0-d input.
    """
    _check_index_tensor("index_select", index)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        if index.numel() != 1:
            raise RuntimeError(
                f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
        return index_select(input.reshape(1), 0, index.reshape(1)).reshape(())
    _check_range("index_select", input, d, index, IndexError)
    return _dispatch.apply(_index_select, (input, index if index.ndim else index.reshape(1)), (d,))


def _check_index_source(op: str, input, d: int, index, source) -> None:
    """Check an index_add-like call: a 0-d or 1-d integer index, ``source`` of the input's dtype and
    shape apart from dim ``d``, where it has one slice per index; indices in ``[0, size)``.

    Raises:
        RuntimeError: for a non-integer index, or a source of another dtype or shape.
        IndexError: for a >1-d index, or an index value outside ``[0, size)``.
    """
    _check_index_tensor(op, index)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({input.dtype.name}) and source ({source.dtype.name}) must have the "
                           "same scalar type")
    if input.ndim != source.ndim or any(a != b for k, (a, b) in enumerate(zip(input.shape, source.shape)) if k != d):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified dimension. "
            f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    slices = source.shape[d] if source.ndim else 1
    if index.numel() != slices:
        raise RuntimeError(f"{op}(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({slices}), for dim: {d}")
    _check_range(op, input, d, index, IndexError)


def _put_along(input, d: int, index, source, accumulate: bool):
    """``input`` with slice ``i`` of ``source`` along dim ``d`` written to (or, ``accumulate``,
    added to) slice ``index[i]``; of repeated indices, the last written wins. No checks."""
    full = (slice(None),) * d + (index.reshape(-1)._data,)
    out = _index_put_normalized(_at_least_1d(input), full, _at_least_1d(source), accumulate)
    return out if input.ndim else out.reshape(())


def index_add(input, dim: int, index, source, *, alpha=1):
    """Out-of-place ``input[..., index[i], ...] += alpha * source[..., i, ...]`` along ``dim``.

    Raises:
        RuntimeError, IndexError: for a bad index or source (see ``_check_index_source``).
    """
    d = wrap_dim(dim, input.ndim)
    _check_index_source("index_add", input, d, index, source)
    return _put_along(input, d, index, source * alpha if alpha != 1 else source, True)


def masked_fill(input, mask, value):
    """``value`` where the bool ``mask`` (broadcast to the input) is True, else the input.

    Raises:
        RuntimeError: for a value tensor with dimensions, or a number out of the input dtype's
            range (``-1e9`` for float16; see ``scalar_in_dtype``).
    """
    if _dispatch.is_tensor(value) and value.ndim != 0:
        raise RuntimeError(
            "masked_fill only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    if _dispatch.is_tensor(value):
        value = value.to(input.dtype)
    else:
        value = _dispatch.scalar_tensor(scalar_in_dtype(value, input.dtype), input.dtype, input._device)
    return where(mask, value, input)
