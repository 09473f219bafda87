"""Index normalisation: a user's ``t[index]`` as a tuple numpy understands, with PyTorch's
semantics where numpy's differ (masks, lists, where integer indices put the advanced dims)."""

from __future__ import annotations

import warnings

from .. import _dispatch, _dtype

__all__ = ["normalize_index"]


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
