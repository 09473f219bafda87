"""Shape ops beyond views: triangles, flips, rolls, repeats, grids, diagonals and combinations.

Most are compositions of existing differentiable ops (reshape, expand, index_select, cat), so
their derivatives and double backward come from those; ``tril``/``triu``, ``flip``, ``roll`` and
the diagonal pair are primitives whose derivative is the same op (or its partner).
"""

from __future__ import annotations

import itertools
import math

from .. import _backend, _dispatch, _dtype
from .._factory import as_ints, is_int
from .indexing import index_select
from .reduction import normalize_dims, wrap_dim
from .registry import defop
from .shape import _sizes, cat, expand, flatten, movedim, reshape, stack, unpacked

__all__ = [
    "tril",
    "triu",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "rot90",
    "repeat",
    "tile",
    "repeat_interleave",
    "meshgrid",
    "broadcast_to",
    "broadcast_tensors",
    "broadcast_shapes",
    "unflatten",
    "unfold",
    "diag",
    "diagonal",
    "diag_embed",
    "block_diag",
    "cartesian_prod",
    "combinations",
    "swapaxes",
    "swapdims",
    "moveaxis",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
]


def _triangle(name, numpy_name):
    op = defop(name)(lambda xp, a, k: getattr(xp, numpy_name)(a, k))
    op.derivative(lambda node, g: (_dispatch.apply_unary(op, g, node.params),))

    def run(input, diagonal: int = 0):
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return _dispatch.apply_unary(op, input, (diagonal,))

    run.__name__ = run.__qualname__ = name
    run.__doc__ = (
        f"The {'lower' if name == 'tril' else 'upper'} triangle of the last two dims "
        "(relative to ``diagonal``); the rest is zero.\n\nRaises:\n    RuntimeError: for < 2-d input."
    )
    return run


tril = _triangle("tril", "tril")
triu = _triangle("triu", "triu")


@defop("flip")
def _flip(xp, a, dims):
    return xp.flip(a, dims).copy()


_flip.derivative(lambda node, g: (_dispatch.apply_unary(_flip, g, node.params),))


def flip(input, *given, dims=None):
    """A copy with the order of elements reversed along ``dims`` (given as dims, a tuple or ``dims=``).

    Raises:
        RuntimeError: if a dim appears twice.
        TypeError: if the dims are given both positionally and by keyword.
    """
    dims = _sizes("flip", given, "dims", dims)
    if not dims:
        return input.clone()
    return _dispatch.apply_unary(_flip, input, (normalize_dims(dims, input.ndim, "flip"),))


def fliplr(input):
    """Reverse the columns (dim 1).

    Raises:
        RuntimeError: for input with fewer than 2 dims.
    """
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """Reverse the rows (dim 0).

    Raises:
        RuntimeError: for 0-d input.
    """
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


@defop("roll")
def _roll(xp, a, shifts, dims):
    return xp.roll(a, shifts, dims)


@_roll.derivative
def _(node, g):
    shifts, dims = node.params
    return (_dispatch.apply_unary(_roll, g, (tuple(-s for s in shifts), dims)),)


def roll(input, shifts, dims=None):
    """Roll elements along ``dims`` by ``shifts`` (the flattened input if ``dims`` is None).

    Raises:
        RuntimeError: if ``shifts`` and ``dims`` differ in length.
    """
    shifts = as_ints((shifts,) if is_int(shifts) else shifts, "shift")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts {list(shifts)} need dims when more than one is given")
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    dims = (dims,) if is_int(dims) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    dims = tuple(wrap_dim(d, input.ndim) for d in dims)
    return _dispatch.apply_unary(_roll, input, (shifts, dims))


def rot90(input, k: int = 1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the second).

    Raises:
        RuntimeError: if ``dims`` is not two different dims of a >= 2-d input.
    """
    if len(dims) != 2 or input.ndim < 2:
        raise RuntimeError(
            f"expected total rotation dims == 2 and total dims >= 2, but got "
            f"{len(dims)} rotation dims and {input.ndim} dims"
        )
    d0, d1 = (wrap_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, (d0,)).transpose(d0, d1)
    return input.clone()


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


def on_device(device, fn):
    """``fn(xp)`` run with ``device`` current: for index arrays built on the device."""
    backend = device.backend
    return backend.launch(device.index, fn, backend.xp)


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


def unflatten(input, dim: int, sizes):
    """Split dim ``dim`` into ``sizes`` (one of them may be -1).

    Raises:
        RuntimeError: if ``sizes`` do not multiply up to the dim's size.
    """
    dim = wrap_dim(dim, input.ndim)
    sizes, size = tuple(sizes), input.shape[dim]
    known = math.prod(s for s in sizes if s != -1)
    if (known != size) if -1 not in sizes else (known == 0 or size % known):
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} ({size}) in the "
            "input tensor")
    sizes = tuple(size // known if s == -1 else s for s in sizes)  # from the dim: the input may be empty
    return reshape(input, input.shape[:dim] + sizes + input.shape[dim + 1 :])


@defop("unfold", is_view=True)
def _unfold(xp, a, dim, size, step):
    storage, start = _backend.storage_of(xp, a)
    windows = (a.shape[dim] - size) // step + 1
    shape = a.shape[:dim] + (windows,) + a.shape[dim + 1 :] + (size,)
    strides = a.strides[:dim] + (a.strides[dim] * step,) + a.strides[dim + 1 :] + (a.strides[dim],)
    return _backend.storage_view(xp, storage, shape, strides, start, a.dtype)


@_unfold.derivative
def _(node, g):
    dim, size, step = node.params
    windows = g.shape[dim]
    index = on_device(g._device, lambda xp: (xp.arange(windows)[:, None] * step + xp.arange(size)).reshape(-1))
    spread = flatten(movedim(g, -1, dim + 1), dim, dim + 1)  # window i's elements at i * size ...
    return (g.new_zeros(node.input_shapes[0]).index_add(dim, _dispatch.make(index, g._device), spread),)


def unfold(input, dimension: int, size: int, step: int):
    """``Tensor.unfold``: every window of ``size`` along ``dimension``, ``step`` apart, in a new last
    dim; a view (windows may overlap).

    Raises:
        RuntimeError: if ``size`` exceeds the dim's size or ``step`` is not positive.
    """
    dim = wrap_dim(dimension, input.ndim)
    n = input.shape[dim] if input.ndim else 1
    if size > n or size < 0:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if input.ndim == 0:
        return _dispatch.apply_unary(_unfold, input.reshape(1), (0, size, step)).reshape(size)
    return _dispatch.apply_unary(_unfold, input, (dim, size, step))


# ------------------------------------------------------------------ diagonals


def _diag_index(xp, shape, offset):
    """Row and column indices of diagonal ``offset`` in the last two dims of ``shape``."""
    rows, cols = shape[-2], shape[-1]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = xp.arange(length)
    return i - min(offset, 0), i + max(offset, 0)


@defop("diagonal")
def _diagonal(xp, a, offset, dim1, dim2):
    moved = xp.moveaxis(a, (dim1, dim2), (-2, -1))
    r, c = _diag_index(xp, moved.shape, offset)
    return moved[..., r, c]


@_diagonal.derivative
def _(node, g):
    offset, dim1, dim2 = node.params
    return (_dispatch.apply_unary(_diagonal_scatter, g, (node.input_shapes[0], offset, dim1, dim2)),)


@defop("diagonal_scatter")
def _diagonal_scatter(xp, g, shape, offset, dim1, dim2):
    out = xp.zeros(shape, dtype=g.dtype)
    moved = xp.moveaxis(out, (dim1, dim2), (-2, -1))
    r, c = _diag_index(xp, moved.shape, offset)
    moved[..., r, c] = g
    return out


_diagonal_scatter.derivative(lambda node, g: (_dispatch.apply_unary(_diagonal, g, node.params[1:]),))


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The diagonal ``offset`` of the planes ``(dim1, dim2)``, as a new last dim (a copy).

    Raises:
        RuntimeError: if ``dim1`` and ``dim2`` are the same dim.
    """
    d1, d2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _dispatch.apply_unary(_diagonal, input, (offset, d1, d2))


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """Place the last dim of ``input`` on diagonal ``offset`` of new planes ``(dim1, dim2)``.

    Raises:
        RuntimeError: if ``dim1`` and ``dim2`` are the same dim.
    """
    ndim = input.ndim + 1
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset) if input.ndim else 1 + abs(offset)
    rest = list(input.shape[:-1])
    for d in sorted((d1, d2)):
        rest.insert(d, n)
    shape = tuple(rest)
    return _dispatch.apply_unary(_diagonal_scatter, input, (shape, offset, d1, d2))


def diag(input, diagonal: int = 0):
    """A 1-d input's square matrix with it on diagonal ``diagonal``, or a 2-d input's diagonal.

    Raises:
        RuntimeError: for inputs that are neither 1-d nor 2-d.
    """
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return _dispatch.apply_unary(_diagonal, input, (diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def block_diag(*tensors):
    """A block-diagonal matrix from 0-, 1- or 2-d tensors (promoted to one dtype).

    Raises:
        RuntimeError: for inputs with more than 2 dims.
    """
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {t.ndim} dimensions"
            )
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        raise RuntimeError("block_diag: expected at least one tensor")
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _dtype.promote_types(dtype, b.dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        b = b.to(dtype)
        parts = [b.new_zeros((b.shape[0], left)), b, b.new_zeros((b.shape[0], width - left - b.shape[1]))]
        rows.append(cat(parts, 1))
        left += b.shape[1]
    return cat(rows, 0)


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


def swapaxes(input, axis0: int, axis1: int):
    """``transpose(input, axis0, axis1)`` (numpy's name)."""
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def moveaxis(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (ints or sequences); a view.

    Raises:
        RuntimeError: if ``source`` and ``destination`` differ in length or repeat a dim.
    """
    src = (source,) if is_int(source) else tuple(source)
    dst = (destination,) if is_int(destination) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) "
            f"should contain the same number of dims as destination ({list(dst)} dims)"
        )
    src = [wrap_dim(d, input.ndim) for d in src]
    dst = [wrap_dim(d, input.ndim) for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    if input.ndim == 0:
        return input.view(())
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return input.permute(order)


def _atleast_shape(shape, n):
    """numpy's rule: 1-d (N) becomes (1, N) and (1, N, 1); 2-d (M, N) becomes (M, N, 1)."""
    if len(shape) >= n:
        return shape
    if n == 1 or len(shape) == 0:
        return (1,) * n
    if n == 2:
        return (1,) + shape
    return (1,) + shape + (1,) if len(shape) == 1 else shape + (1,)


def _atleast(n):
    def run(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        out = [t.reshape(_atleast_shape(t.shape, n)) if t.ndim < n else t for t in tensors]
        return out[0] if len(out) == 1 else tuple(out)

    run.__name__ = run.__qualname__ = f"atleast_{n}d"
    run.__doc__ = f"View each input with at least {n} dims (numpy's rule for where new dims go)."
    return run


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)
