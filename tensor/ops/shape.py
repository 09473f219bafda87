"""Views and shape ops. Views share storage (and the version counter) with their base."""

from __future__ import annotations

import math

from .. import _backend, _dispatch, _dtype
from .. import _memory_format as _formats
from .._dtype import promote_types
from .._factory import as_int, as_ints, is_int
from .reduction import normalize_dims, wrap_dim
from .registry import defop
from .strided import to_memory_format

__all__ = [
    "reshape", "view", "permute", "transpose", "squeeze", "unsqueeze", "expand", "flatten",
    "contiguous", "cat", "stack", "split", "chunk", "narrow", "unbind", "movedim",
]


def unpacked(given: tuple) -> tuple:
    """The items of a ``*items`` argument given as ``2, 3`` or as one sequence ``(2, 3)``."""
    return tuple(given[0]) if len(given) == 1 and isinstance(given[0], (tuple, list)) else tuple(given)


def _sizes(op: str, given: tuple, name: str, keyword) -> tuple:
    """The sizes of a ``*sizes`` op, given as ``2, 3``, as ``(2, 3)`` or by keyword ``name=``
    (PyTorch's parser takes all three). Each op reads them as ints (``as_int``: numpy integers too).

    Raises:
        TypeError: if they are given both ways.
    """
    if keyword is not None:
        if given:
            raise TypeError(f"{op}() got multiple values for argument '{name}'")
        return tuple(keyword)
    return unpacked(given)


def _infer_shape(shape: tuple, numel: int) -> tuple:
    """``shape`` (sizes as ``as_int`` reads them, one of them maybe -1) for ``numel`` elements.

    Raises:
        TypeError: for a size that is no int.
        RuntimeError: for several -1, sizes below -1, or sizes that do not match ``numel``.
    """
    for s in shape:
        if type(s) is not int or s < -1:
            shape = as_ints(shape)
            if min(shape, default=0) < -1:
                raise RuntimeError(f"invalid shape dimension in {list(shape)}")
            break
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if unknown:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:unknown[0]] + (numel // known,) + shape[unknown[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


@defop("view", is_view=True)
def _view(xp, a, shape):
    return _backend.reshape_view(a, shape)


@_view.derivative
def _(node, g):
    return (g.reshape(node.input_shapes[0]),)


def view(input, *shape, size=None, dtype=None):
    """A view with a new shape (one dim may be -1), given as sizes, a tuple or ``size=``; or, given
    a dtype, a view of the same bytes as that dtype (``_view_as_dtype``).

    Raises:
        RuntimeError: if the sizes do not match, or the strides cannot be viewed that way
            (use ``reshape``), or as ``_view_as_dtype``.
        TypeError: if the shape is given both positionally and by keyword.
    """
    if dtype is not None or (len(shape) == 1 and type(shape[0]) is _dtype.dtype):
        return _view_as_dtype(input, dtype if dtype is not None else shape[0])
    shape = _infer_shape(_sizes("view", shape, "size", size), input.numel())
    try:
        return _dispatch.apply_unary(_view, input, (shape,))
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        ) from None


@defop("view_dtype", is_view=True, differentiable=False)
def _view_dtype(xp, a, dtype):
    return a.view(dtype)


def _view_as_dtype(input, dtype):
    """``Tensor.view(dtype)``: the same memory read as ``dtype``. With a wider element the last dim
    shrinks by the ratio of the sizes, with a narrower one it grows. Not differentiable.

    Raises:
        RuntimeError: for elements of another size when the input is 0-d, its last dim is not
            contiguous, or (to a wider dtype) its last size, other strides or storage offset are
            not multiples of the ratio.
    """
    target = _dtype.as_dtype(dtype)
    if target.itemsize != input.dtype.itemsize:
        _check_dtype_view(input, target)
    return _dispatch.apply_unary(_view_dtype, input, (target.numpy,))


def _check_dtype_view(input, target) -> None:
    why = f"to view {input.dtype.name} as {target.name} (different element sizes)"
    if input.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {why}")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {why}, but got {strides[-1]}")
    ratio = target.itemsize // input.dtype.itemsize
    if ratio <= 1:
        return
    checks = [("self.size(-1)", input.shape[-1]), ("self.storage_offset()", input.storage_offset())]
    checks += [(f"self.stride({k})", s) for k, s in enumerate(strides[:-1])]
    for name, value in checks:
        if value % ratio:
            raise RuntimeError(f"{name} must be divisible by {ratio} {why}, but got {value}")


def reshape(input, *sizes, shape=None):
    """Like ``view`` when the strides allow it; otherwise a contiguous copy. The shape is given
    as sizes, a tuple or ``shape=``.

    Raises:
        RuntimeError: if the sizes do not match the number of elements.
        TypeError: if the shape is given both positionally and by keyword.
    """
    shape = _infer_shape(_sizes("reshape", sizes, "shape", shape), input.numel())
    if shape == input.shape:
        return view(input, shape)
    try:
        return _dispatch.apply_unary(_view, input, (shape,))
    except ValueError:
        return _dispatch.apply_unary(_view, contiguous(input), (shape,))


@defop("contiguous")
def _contiguous(xp, a):
    return xp.ascontiguousarray(a)


@_contiguous.derivative
def _(node, g):
    return (g,)


def contiguous(input, memory_format=_formats.contiguous_format):
    """The input itself if laid out as ``memory_format`` asks (C-contiguous by default), else a
    copy that is (``tensor.channels_last``: NHWC strides).

    Raises:
        TypeError: if ``memory_format`` is not a ``tensor.memory_format``.
        RuntimeError: for channels_last(_3d) and a tensor of another rank.
    """
    if memory_format is not _formats.contiguous_format:
        return to_memory_format(input, _formats.check(memory_format, "contiguous"))
    if input._data.flags.c_contiguous:
        return input
    return _dispatch.apply_unary(_contiguous, input)


@defop("permute", is_view=True)
def _permute(xp, a, dims):
    return a.transpose(dims)  # the method: numpy's function wraps it in three Python calls


@_permute.derivative
def _(node, g):
    (dims,) = node.params
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return (g.permute(*inverse),)


def permute(input, *order, dims=None):
    """Reorder the dims (given as dims, a tuple or ``dims=``); a view.

    Raises:
        RuntimeError: if ``dims`` is not a permutation of the input's dims.
        TypeError: if the dims are given both positionally and by keyword.
    """
    dims = _sizes("permute", order, "dims", dims)
    wrapped = tuple(wrap_dim(d, input.ndim) for d in dims)
    if sorted(wrapped) != list(range(input.ndim)):
        raise RuntimeError(
            f"permute(): dims {list(dims)} are not a permutation of the {input.ndim} dims "
            f"of a tensor of shape {list(input.shape)}"
        )
    return _dispatch.apply_unary(_permute, input, (wrapped,))


def transpose(input, dim0: int, dim1: int):
    """Swap two dims; a view."""
    order = list(range(input.ndim))
    if input.ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return input.view(())
    d0, d1 = wrap_dim(dim0, input.ndim), wrap_dim(dim1, input.ndim)
    order[d0], order[d1] = order[d1], order[d0]
    return _dispatch.apply_unary(_permute, input, (tuple(order),))


def movedim(input, source: int, destination: int):
    """Move dim ``source`` to position ``destination``; a view."""
    src, dst = wrap_dim(source, input.ndim), wrap_dim(destination, input.ndim)
    order = [d for d in range(input.ndim) if d != src]
    order.insert(dst, src)
    return permute(input, order)


def squeeze(input, dim=None):
    """Drop size-1 dims (all of them, or only those in ``dim``); a view.

    Raises:
        RuntimeError: if a dim appears twice in ``dim``.
    """
    if dim is None:
        dims = [i for i, s in enumerate(input.shape) if s == 1]
    elif is_int(dim):
        dims = (wrap_dim(dim, input.ndim),)
    else:  # (an empty sequence squeezes nothing, where normalize_dims would take every dim)
        dims = normalize_dims(dim, input.ndim, "squeeze") if len(dim) else ()
    shape = tuple(s for i, s in enumerate(input.shape) if not (i in dims and s == 1))
    return view(input, shape)


def unsqueeze(input, dim: int):
    """Insert a size-1 dim at ``dim``; a view."""
    d = wrap_dim(dim, input.ndim + 1)
    shape = input.shape[:d] + (1,) + input.shape[d:]
    return view(input, shape)


@defop("expand", is_view=True)
def _expand(xp, a, shape):
    return xp.broadcast_to(a, shape)


@_expand.derivative
def _(node, g):
    return (g.sum_to_size(node.input_shapes[0]),)


def expand(input, *sizes, size=None):
    """Broadcast to ``sizes`` (or ``size=``) without copying (-1 keeps a dim); a read-only view.

    Raises:
        RuntimeError: naming both shapes when they do not broadcast.
        TypeError: if the sizes are given both positionally and by keyword.
    """
    sizes = _sizes("expand", sizes, "size", size)
    lead = len(sizes) - input.ndim
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal "
            f"to the number of dimensions in the tensor ({input.ndim})"
        )
    shape = []
    for i, s in enumerate(sizes):
        if type(s) is not int:
            s = as_int(s, "size")
        own = input.shape[i - lead] if i >= lead else None
        if s == -1:
            if own is None:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, new dimension ({list(sizes)})")
            s = own
        elif own is not None and own != s and own != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({own}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                f"Tensor sizes: {list(input.shape)}"
            )
        shape.append(s)
    shape = tuple(shape)
    if shape == input.shape:
        return input.view(shape)
    return _dispatch.apply_unary(_expand, input, (shape,))


def flatten(input, start_dim: int = 0, end_dim: int = -1):
    """Merge dims ``start_dim..end_dim`` into one.

    Raises:
        IndexError: for a dim out of range.
        RuntimeError: if ``start_dim`` comes after ``end_dim``.
    """
    if input.ndim == 0:
        wrap_dim(start_dim, 0), wrap_dim(end_dim, 0)
        return reshape(input, (1,))
    s, e = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape[:s] + (math.prod(input.shape[s:e + 1]),) + input.shape[e + 1:]
    return reshape(input, shape)


@defop("cat")
def _cat(xp, *arrays_and_params):
    *arrays, dim, _sizes = arrays_and_params
    return xp.concatenate(arrays, axis=dim)


@_cat.derivative
def _(node, g):
    dim, sizes = node.params
    return tuple(g.split(list(sizes), dim))


def cat(tensors, dim: int = 0):
    """Concatenate along ``dim``; dtypes are promoted. As in PyTorch, 1-d tensors with no
    elements (``tensor([])``, a common start of an accumulation) are skipped.

    Raises:
        ValueError: for an empty list.
        RuntimeError: for 0-d tensors, or if the shapes differ outside ``dim``.
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    shapes = [t.shape for t in tensors]
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = promote_types(dtype, t.dtype)
    kept = [(t, shape) for t, shape in zip(tensors, shapes) if shape != (0,)]
    if not kept:
        return tensors[0].new_zeros((0,), dtype=dtype)
    first = kept[0][1]
    d = wrap_dim(dim, len(first))
    _check_cat_shapes(shapes, first, d)
    arrays = tuple(t if t.dtype is dtype else t.to(dtype) for t, _ in kept)
    return _dispatch.apply(_cat, arrays, (d, tuple(shape[d] for _, shape in kept)))


def _check_cat_shapes(shapes: list, first: tuple, d: int) -> None:
    rest = first[:d] + first[d + 1:]
    for i, shape in enumerate(shapes):
        if not shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if shape != (0,) and (len(shape) != len(first) or shape[:d] + shape[d + 1:] != rest):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {d}. Expected shape "
                f"{list(first)} (apart from dim {d}) but got {list(shape)} for tensor "
                f"number {i} in the list."
            )


def stack(tensors, dim: int = 0):
    """Stack same-shaped tensors along a new dim.

    Raises:
        RuntimeError: naming the first shape that differs.
    """
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != tensors[0].shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(tensors[0].shape)} "
                f"at entry 0 and {list(t.shape)} at entry {i}"
            )
    d = wrap_dim(dim, tensors[0].ndim + 1)
    return cat([t.unsqueeze(d) for t in tensors], d)


def narrow(input, dim: int, start: int, length: int):
    """The slice ``start:start+length`` along ``dim``; a view.

    Raises:
        IndexError: for ``start`` outside ``[-size, size]``.
        RuntimeError: for a 0-d input, or a negative ``length`` or one that runs past the end.
    """
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    start = start + size if start < 0 else start
    if length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    index = (slice(None),) * d + (slice(start, start + length),)
    return input[index]


def split(input, split_size_or_sections=None, dim: int = 0, *, split_size=None):
    """Split into chunks of ``split_size`` (the last may be smaller) or of the given sizes
    (``Tensor.split`` names the argument ``split_size``, ``tensor.split`` the other way).

    Raises:
        RuntimeError: for a 0-d input, a negative ``split_size`` (or 0 for a non-empty dim), or
            explicit sizes that do not add up to the dim's size.
        TypeError: if the sizes are missing or given twice.
    """
    if (split_size_or_sections is None) == (split_size is None):
        given = "both" if split_size is not None else "neither"
        raise TypeError(f"split() takes one of split_size_or_sections and split_size, got {given}")
    split_size_or_sections = split_size if split_size is not None else split_size_or_sections
    if input.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, input.ndim)
    size = input.shape[d]
    if is_int(split_size_or_sections):
        sizes = _split_sizes(as_int(split_size_or_sections, "split_size"), size)
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                f"size at dimension {d}), but got split_sizes={sizes}"
            )
    parts, start = [], 0
    for length in sizes:
        parts.append(narrow(input, d, start, length))
        start += length
    return tuple(parts)


def _split_sizes(step: int, size: int) -> list:
    if step < 0 or (step == 0 and size):
        raise RuntimeError(
            f"split expects split_size be non-negative, but got split_size={step}" if step < 0 else
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
        )
    return [min(step, size - s) for s in range(0, size, step)] if size else [0]


def chunk(input, chunks: int, dim: int = 0):
    """Split into ``chunks`` nearly equal pieces (fewer if the dim is small; ``chunks`` empty
    pieces of an empty dim).

    Raises:
        RuntimeError: for ``chunks`` < 1 or a 0-d input.
    """
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    size = input.shape[wrap_dim(dim, input.ndim)]
    return split(input, -(-size // chunks), dim) if size else split(input, [0] * chunks, dim)


def unbind(input, dim: int = 0):
    """The slices along ``dim``, each without that dim."""
    d = wrap_dim(dim, input.ndim)
    return tuple(input.select(d, i) for i in range(input.shape[d]))


def replay_view(base, chain):
    """Re-derive a view from ``base`` by replaying ``chain``, a sequence of (view op, params)."""
    out = base
    for op, params in chain:
        out = _dispatch.apply_unary(op, out, params)
    return out


@defop("copy_slices")
def _view_scatter(xp, base, value, chain):
    out = base.copy()
    region = out
    for op, params in chain:
        region = op.kernel(xp, region, *params)
    region[...] = value
    return out


@_view_scatter.derivative
def _(node, g):
    (chain,) = node.params
    needs_base, needs_value = node.needs_input_grad
    g_base = g_value = None
    if needs_base:
        g_base = view_scatter(g, g.new_zeros((), dtype=_region_dtype(g, chain)), chain)
    if needs_value:
        g_value = replay_view(g, chain)
    return g_base, g_value


def view_scatter(base, value, chain):
    """A copy of ``base`` whose region ``replay_view(base, chain)`` holds ``value`` (cast to the
    region's dtype: ``view_as_real`` and ``view_as_complex`` change it)."""
    if value.dtype is not base.dtype:
        target = _region_dtype(base, chain)
        if value.dtype is not target:
            value = value.to(target)
    return _dispatch.apply(_view_scatter, (base, value), (chain,))


def _region_dtype(base, chain):
    """The dtype of ``replay_view(base, chain)``, found without recording anything."""
    return replay_view(base.detach(), chain).dtype
