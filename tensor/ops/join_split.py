"""Joining and splitting along a dim: ``cat`` (a primitive, its gradient the ``split`` of the
output's gradient), ``stack``, ``narrow``, ``split``, ``chunk`` and ``unbind`` (views of the input)."""

from __future__ import annotations

from .. import _dispatch
from .._dtype import promote_types
from .._factory import as_int, is_int
from .reduction import wrap_dim
from .registry import defop

__all__ = ["cat", "stack", "split", "chunk", "narrow", "unbind"]


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
