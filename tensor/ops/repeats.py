"""Ops that build a larger tensor out of an input's elements repeated: ``repeat``, ``tile`` and
``repeat_interleave`` (copies), ``broadcast_to``, ``broadcast_tensors`` and ``meshgrid``
(expanded views), ``cartesian_prod`` and ``combinations``. All are compositions of
differentiable ops (reshape, expand, index_select, stack), which give their derivatives."""

from __future__ import annotations

import itertools

from .. import _dispatch
from .._factory import as_ints
from .indexing import index_select
from .join_split import stack
from .layout import on_device
from .reduction import wrap_dim
from .shape import _sizes, expand, reshape, unpacked

__all__ = [
    "repeat",
    "tile",
    "repeat_interleave",
    "meshgrid",
    "broadcast_to",
    "broadcast_tensors",
    "broadcast_shapes",
    "cartesian_prod",
    "combinations",
]


def repeat(input, *sizes):
    """Tile the input ``sizes[i]`` times along dim ``i`` (new leading dims allowed).

    Raises:
        RuntimeError: if fewer sizes than dims are given.
    """
    sizes = as_ints(unpacked(sizes))
    if len(sizes) < input.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of "
            f"dimensions of tensor (got {len(sizes)} for {input.ndim})"
        )
    shape = (1,) * (len(sizes) - input.ndim) + input.shape
    interleaved = reshape(input, tuple(x for s in shape for x in (1, s)))
    expanded = expand(interleaved, tuple(x for r, s in zip(sizes, shape) for x in (r, s)))
    return reshape(expanded, tuple(r * s for r, s in zip(sizes, shape)))


def tile(input, *given, dims=None):
    """``repeat`` with missing leading sizes taken as 1 (given as sizes, a tuple or ``dims=``).

    Raises:
        TypeError: if the sizes are given both positionally and by keyword.
    """
    dims = _sizes("tile", given, "dims", dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int or a 1-d tensor) along ``dim``.

    ``repeat_interleave(repeats)`` with a tensor alone gives ``[0]*r0 + [1]*r1 + ...``.

    Raises:
        RuntimeError: if a tensor ``repeats`` has more than 1 dim, the wrong length or negative entries.
    """
    if repeats is None:
        return _dispatch.make(_index_repeat(input, input.shape[0], input._device), input._device)
    if dim is None:
        input, dim = input.reshape(-1), 0
    dim = wrap_dim(dim, input.ndim)
    n = input.shape[dim] if input.ndim else 1
    if _dispatch.is_tensor(repeats) and repeats.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if _dispatch.is_tensor(repeats) and repeats.ndim == 1 and repeats.shape[0] not in (1, n):
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got "
            f"repeats.size(0) = {repeats.shape[0]} and input.size({dim}) = {n}"
        )
    index = _dispatch.make(_index_repeat(repeats, n, input._device), input._device)
    return index_select(input.reshape(1) if input.ndim == 0 else input, dim, index)


def _index_repeat(repeats, n, device):
    """The index array that repeats entry ``i`` of a length-``n`` dim ``repeats[i]`` times."""
    if _dispatch.is_tensor(repeats):
        if bool((repeats < 0).any()):
            raise RuntimeError("repeats can not be negative")
        counts = repeats.reshape(-1)
        counts = (counts.expand(n) if counts.shape[0] == 1 else counts)._data
    elif repeats < 0:
        raise RuntimeError("repeats can not be negative")
    else:
        counts = repeats
    return on_device(device, lambda xp: xp.repeat(xp.arange(n), counts))


def broadcast_to(input, *sizes, size=None):
    """``input.expand(size)``: a read-only broadcast view. The sizes may also be given one by one,
    as ``Tensor.broadcast_to(2, 3)`` takes them.

    Raises:
        RuntimeError: naming both shapes when they do not broadcast.
        TypeError: if the sizes are given both positionally and by keyword.
    """
    return expand(input, _sizes("broadcast_to", sizes, "size", size))


def broadcast_tensors(*tensors):
    """Expand every tensor to their common broadcast shape (views).

    Raises:
        RuntimeError: if the shapes do not broadcast.
    """
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def broadcast_shapes(*shapes):
    """The shape every one of ``shapes`` broadcasts to.

    Raises:
        RuntimeError: naming the sizes that do not match.
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, s in enumerate(shape):
            j = ndim - len(shape) + i
            if s != out[j] and out[j] != 1 and s != 1:
                raise RuntimeError(
                    f"Shape mismatch: objects cannot be broadcast to a single shape "
                    f"(size {s} against {out[j]} at dim {j})"
                )
            out[j] = s if out[j] == 1 else out[j]
    return tuple(out)


def meshgrid(*tensors, indexing: str = "ij"):
    """Coordinate grids from 0-d or 1-d tensors of one dtype (``indexing='ij'`` or ``'xy'``), as
    expanded views.

    Raises:
        RuntimeError: for an unknown ``indexing``, a tensor of more dims, or mixed dtypes.
    """
    tensors = unpacked(tensors)
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if any(t.ndim > 1 for t in tensors):
        raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list")
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    shape = tuple(t.numel() for t in tensors)
    grids = []
    for i, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[i] = -1
        grids.append(expand(t.reshape(view), shape))
    if indexing == "xy" and len(tensors) >= 2:  # the first two dims swapped
        grids = [g.transpose(0, 1) for g in grids]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, one per row (1-d for one tensor)."""
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def combinations(input, r: int = 2, with_replacement: bool = False):
    """The length-``r`` combinations of a 1-d tensor's elements, one per row.

    Raises:
        RuntimeError: for a non-1-d input or a negative ``r``.
    """
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if r == 0 or not rows:
        return input.new_zeros((0,) if r == 0 else (0, r))
    backend = input._device.backend
    index = _dispatch.make(
        backend.asarray([i for row in rows for i in row], "int64", input._device.index), input._device
    )
    return index_select(input, 0, index).reshape(len(rows), r)
