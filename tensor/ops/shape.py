"""Views and shape ops: view (also as another dtype), reshape, contiguous, permute/transpose/movedim,
squeeze/unsqueeze, expand, flatten; and replaying a chain of views onto a base (``copy_slices``,
how in-place writes through a view reach its base). Views share storage (and the version counter)
with their base. Joining and splitting (``cat``, ``split``, ...) are in ``join_split``."""

from __future__ import annotations

import math

from .. import _backend, _dispatch, _dtype
from .. import _memory_format as _formats
from .._factory import as_int, as_ints, is_int
from .reduction import normalize_dims, wrap_dim
from .registry import defop
from .strided import to_memory_format

__all__ = [
    "reshape", "view", "permute", "transpose", "squeeze", "unsqueeze", "expand", "flatten",
    "contiguous", "movedim",
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
