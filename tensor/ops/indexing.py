"""Indexing: ``t[index]``, ``t[index] = v``, gather/scatter, index_select/index_add, masked_fill."""

from __future__ import annotations

import operator
import warnings

from .. import _backend, _dispatch, _dtype
from .elementwise import where
from .reduction import wrap_dim
from .registry import defop

__all__ = [
    "getitem", "index_put", "gather", "scatter", "scatter_add", "index_select", "index_add",
    "masked_fill", "normalize_index",
]


def normalize_index(tensor, index) -> tuple[tuple, bool]:
    """Turn a user index into a tuple numpy understands; also say if it selects a view.

    Tensors in the index become arrays (bool and, deprecated, uint8 tensors are masks); lists
    become integer arrays; integer indices are applied before advanced ones, as in PyTorch
    (Note [Integer and advanced indices]).

    Raises:
        IndexError: for tensors of a non-integer, non-bool dtype, on another device, or for
            objects that cannot index.
        TypeError: for a string index.
    """
    if type(index) is int:  # the commonest index (``x[i] = v``)
        return (index, Ellipsis), True
    if not isinstance(index, tuple):
        index = (index,)
    parts, basic, ints, gaps, ellipsis = [], True, 0, False, False
    for item in index:
        if item is None or isinstance(item, slice):
            if isinstance(item, slice) and item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
            parts.append(item)
            gaps = True
        elif item is Ellipsis:
            if not ellipsis:  # PyTorch lets later ellipses span no dims
                parts.append(item)
            ellipsis = True
        elif isinstance(item, int):
            parts.append(item)
            if isinstance(item, bool):
                basic = False
            else:
                ints += 1
        elif _dispatch.is_tensor(item):
            if item._device is not tensor._device or item._data.dtype.kind not in "bi":
                item = _unusual_index_tensor(tensor, item)
            if item.ndim == 0 and item._data.dtype.kind != "b":
                parts.append(int(item._data))
                ints += 1
            else:
                parts.append(item._data)
                basic = False
        else:
            part = _other_index(tensor, item)
            ints += isinstance(part, int)
            basic = basic and isinstance(part, int)
            parts.append(part)
    if ints and ints == len(parts):  # for a 0-d view: numpy gives a scalar, and refuses a (1, 1) value
        parts.append(Ellipsis)
    elif not basic and (ellipsis or ints and gaps):
        parts = _torch_order(tensor, parts)
    return tuple(parts), basic


def _other_index(tensor, item):
    """A list or array index as an array (a numpy integer as an int)."""
    if isinstance(item, (list, tuple)) or hasattr(item, "__array__"):
        if getattr(item, "ndim", None) == 0 and item.dtype.kind in "iu":
            return int(item)
        empty = isinstance(item, list) and not item  # numpy would make it float64
        return tensor._device.backend.asarray(item, "int64" if empty else None, tensor._device.index)
    if isinstance(item, str):
        raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
    raise IndexError(
        f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
        f"are valid indices (got {type(item).__name__})"
    )


def _unusual_index_tensor(tensor, item):
    """A tensor index on another device or of a dtype other than bool and signed integers: a uint8
    tensor is a mask (deprecated, as in PyTorch), wider unsigned ones hold indices.

    Raises:
        IndexError: for a tensor on another device, or of a non-integer dtype.
    """
    if item._device is not tensor._device:
        raise IndexError(
            f"indices should be on the same device as the indexed tensor ({item._device} vs {tensor._device})"
        )
    if item._data.dtype.kind != "u":
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {item.dtype.name}")
    if item.dtype is not _dtype.uint8:
        return item
    warnings.warn(
        "indexing with dtype tensor.uint8 is now deprecated, please use a dtype tensor.bool instead.",
        UserWarning, stacklevel=4)
    return item.bool()


# Note [Integer and advanced indices]
#     PyTorch applies integer indices first, as ``select``, and only then the advanced ones
#     (arrays, masks, bools), so ``zeros(4, 5, 6)[1, :, [0, 1, 2]]`` has shape (5, 3): the one
#     array left is a single block that stays in place. numpy counts the integer as an advanced
#     index too; separated from the array by the slice, it sends the block to the front: (3, 5).
#     The two differ only when the advanced indices are adjacent once the integers are gone but
#     not with them. (An ellipsis spanning no dims is a gap to numpy, not to PyTorch: it is
#     dropped.) For those rare indices ``_all_advanced`` writes an equivalent index of advanced
#     parts only, whose broadcast shape numpy takes as the result's: each slice becomes an
#     ``arange`` along its own result dim, a None a size-1 result dim, and the arrays and integers
#     are reshaped onto the block's dims. One index serves reading, writing and the backward.


def _torch_order(tensor, parts: list) -> list:
    """``parts`` (advanced indices with integers or an ellipsis among them) as an index that gives
    PyTorch's dim order (Note [Integer and advanced indices])."""
    used = sum(map(_dims_of, parts))
    if used > tensor.ndim:  # too many indices: numpy says so
        return parts
    spans = [tensor.ndim - used if part is Ellipsis else _dims_of(part) for part in parts]
    if any(part is Ellipsis and not span for part, span in zip(parts, spans)):  # a gap to numpy alone
        parts = [part for part in parts if part is not Ellipsis]
        spans = [_dims_of(part) for part in parts]
    kinds = "".join(map(_kind, parts))
    if "i" not in kinds or not _adjacent(kinds, "a") or _adjacent(kinds, "ai"):
        return parts
    device = tensor._device
    return device.backend.launch(device.index, _all_advanced, device.backend.xp, tensor.shape, parts, spans)


def _is_array(part) -> bool:
    return not (part is None or part is Ellipsis or isinstance(part, (int, slice)))


def _dims_of(part) -> int:
    """How many dims of the indexed tensor ``part`` consumes."""
    if part is None or part is Ellipsis or isinstance(part, bool):
        return 0
    if not _is_array(part) or part.dtype.kind != "b":
        return 1
    return part.ndim


def _kind(part) -> str:
    """'a' for an advanced index, 'i' an integer, 'g' what separates them (a slice, None, ellipsis)."""
    if isinstance(part, bool) or _is_array(part):
        return "a"
    return "i" if isinstance(part, int) else "g"


def _adjacent(kinds: str, members: str) -> bool:
    """Whether no gap lies between the parts of the kinds ``members``."""
    at = [i for i, k in enumerate(kinds) if k in members]
    return "g" not in kinds[at[0] : at[-1] + 1]


def _all_advanced(xp, shape: tuple, parts: list, spans: list) -> list:
    """``parts`` as an index of integer arrays only (Note [Integer and advanced indices])."""
    expanded, dim = [], 0  # (part, the first dim it indexes), an ellipsis as its slices
    for part, span in zip(parts, spans):
        expanded += [(slice(None), dim + k) for k in range(span)] if part is Ellipsis else [(part, dim)]
        dim += span
    arrays = {i: _block_arrays(xp, part) for i, (part, _) in enumerate(expanded) if _kind(part) == "a"}
    block = xp.broadcast_arrays(*(a for group in arrays.values() for a in group))[0].shape
    first = min(arrays)
    outer = sum(1 for part, _ in expanded if part is None or isinstance(part, slice))
    start = sum(1 for part, _ in expanded[:first] if part is None or isinstance(part, slice))
    onto = (1,) * start + block + (1,) * (outer - start)
    out, axis = [], 0
    for i, (part, dim) in enumerate(expanded):
        axis += len(block) if i == first else 0
        if part is None or isinstance(part, slice):
            if part is not None:
                along = [1] * (outer + len(block))
                along[axis] = -1
                out.append(xp.arange(*part.indices(shape[dim])).reshape(along))
            axis += 1
        elif isinstance(part, bool) or _is_array(part):
            out += [xp.broadcast_to(a, block).reshape(onto) for a in arrays[i] if a.dtype.kind != "b"]
        else:
            _check_int_index(part, shape[dim], dim)
            out.append(xp.full(onto, part, dtype="int64"))  # also carries the block's shape
    return out


def _block_arrays(xp, part) -> list:
    """The integer arrays an advanced index stands for; a bool (or 0-d bool array) indexes no dim
    but adds a block dim of size 1 or 0: a bool array of that size stands for it."""
    if isinstance(part, bool) or part.ndim == 0:
        return [xp.zeros((1 if part else 0,), dtype=bool)]
    return list(xp.nonzero(part)) if part.dtype.kind == "b" else [part]


def _check_int_index(index: int, size: int, dim: int) -> None:
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")


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
    """Check the arguments of gather or a scatter op (a tensor ``src``); return the dim, wrapped,
    and the index made at least 1-d."""
    _check_index_tensor(op, index)
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
        src = _at_least_1d(src if src.dtype is input.dtype else src.to(input.dtype))
    else:
        d, flat_index = _prepared(op, input, dim, index)
        src = _dispatch.scalar_tensor(src, input.dtype, input._device)
    out = _dispatch.apply(_scatter_op, (_at_least_1d(input), src, flat_index), (d, reduce))
    return out if input.ndim else out.reshape(())


def scatter(input, dim: int, index, src=None, *, value=None, reduce: str | None = None):
    """Out-of-place ``out[index[i][j]][j] = src[i][j]`` (for ``dim=0``); ``src`` may be a number,
    also given as ``value``. ``reduce="add"`` or ``"multiply"`` combines the values written to
    one place, and the input's, by that operation.

    Raises:
        RuntimeError: for an unknown ``reduce``, index values outside ``[0, size)``, or an index
            larger than the input (outside ``dim``) or ``src``.
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
