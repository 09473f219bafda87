"""``tensor.memory_format``: PyTorch's layout requests (``contiguous_format``, ``channels_last``,
``channels_last_3d``, ``preserve_format``) and the dim orders they stand for (issue 16).

A layout is an order of the dims from outermost to innermost in memory: row-major is
``(0, 1, 2, 3)``, channels_last ``(0, 2, 3, 1)`` (NHWC). numpy and CuPy arrays take any strides,
so a channels_last tensor here is an array whose strides are those of that order, as in PyTorch.

Note [Preserved strides]
~~~~~~~~~~~~~~~~~~~~~~~~
``preserve_format`` (the default of ``empty_like`` and the other ``*_like`` factories, ``clone``)
follows PyTorch's ``empty_like``: a non-overlapping and dense input gives a result with exactly its
strides (a transposed input, a transposed result; the strides of size-1 dims too). Any other
strided input (sliced, expanded) gives dense strides in the order of the input's, found by
PyTorch's ``infer_dense_strides``: an insertion sort by stride in which stride-0 (expanded) dims
compare equal to every dim, so that they keep their row-major place.
"""

from __future__ import annotations

import math

__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "memory_format", "preserve_format"]


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory layout request: ``tensor.contiguous_format``, ``channels_last``, ``channels_last_3d``
    or ``preserve_format`` (the only public instances; ``preserved`` makes private ones that stand
    for a tensor's own dim order)."""

    __slots__ = ("_name", "_order")

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'tensor.memory_format' instances")

    @classmethod
    def _make(cls, name: str, order: tuple | None = None) -> memory_format:
        out = object.__new__(cls)
        out._name = name
        out._order = order  # the dims from outermost to innermost; None: row-major, of any rank
        return out

    def __repr__(self) -> str:
        return f"tensor.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format._make("contiguous_format")
channels_last = memory_format._make("channels_last", (0, 2, 3, 1))
channels_last_3d = memory_format._make("channels_last_3d", (0, 2, 3, 4, 1))
preserve_format = memory_format._make("preserve_format")


def check(fmt, fn: str) -> memory_format:
    """``fmt``, if it is a memory_format.

    Raises:
        TypeError: naming ``fn`` and the type given.
    """
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be tensor.memory_format, not {type(fmt).__name__}")
    return fmt


def dim_order(fmt: memory_format, ndim: int) -> tuple:
    """The dims from outermost to innermost in memory for ``fmt`` (row-major for contiguous_format).

    Raises:
        RuntimeError: for channels_last(_3d) and a tensor of another rank (PyTorch's message).
    """
    order = fmt._order
    if order is None:
        return tuple(range(ndim))
    if ndim != len(order):
        raise RuntimeError(f"required rank {len(order)} tensor to use {fmt._name} format")
    return order


def dense_strides(shape: tuple, order: tuple) -> tuple:
    """The element strides of a dense tensor of ``shape`` laid out in ``order``."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def is_laid_out(shape: tuple, strides: tuple, fmt: memory_format) -> bool:
    """Whether ``strides`` are those of a dense ``fmt`` layout (size-1 dims may have any stride;
    a channels_last format and a tensor of another rank: False, as PyTorch's ``is_contiguous``)."""
    order = fmt._order or tuple(range(len(shape)))
    if len(order) != len(shape):
        return False
    if math.prod(shape) == 0:
        return True
    expected = dense_strides(shape, order)
    return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected))


def preserved(shape: tuple, strides: tuple) -> memory_format:
    """The layout ``preserve_format`` keeps (Note [Preserved strides]): contiguous_format or
    channels_last(_3d) for a tensor laid out that way, else the order of its strides."""
    if is_laid_out(shape, strides, contiguous_format):
        return contiguous_format
    for fmt in (channels_last, channels_last_3d):
        if is_laid_out(shape, strides, fmt):
            return fmt
    order = stride_order(shape, strides)
    if order == tuple(range(len(shape))):
        return contiguous_format
    return memory_format._make("preserve_format", order)


def preserved_strides(shape: tuple, strides: tuple) -> tuple | None:
    """The strides ``preserve_format`` gives a new tensor like one of ``shape`` and ``strides``
    (Note [Preserved strides]): those strides if non-overlapping and dense, else dense ones in
    their order; None when they are row-major."""
    if not is_non_overlapping_and_dense(shape, strides):
        strides = dense_strides(shape, stride_order(shape, strides))
    return None if tuple(strides) == dense_strides(shape, range(len(shape))) else tuple(strides)


def is_non_overlapping_and_dense(shape: tuple, strides: tuple) -> bool:
    """Whether the elements fill a block of memory, each once, in some dim order (PyTorch's test:
    the strides of size-0 and size-1 dims do not count)."""
    step = 1
    for stride, size in sorted((s, n) for n, s in zip(shape, strides) if n > 1):
        if stride != step:
            return False
        step *= size
    return True


def stride_order(shape: tuple, strides: tuple) -> tuple:
    """The dims from outermost to innermost by stride, sorted as PyTorch's ``infer_dense_strides``
    does (Note [Preserved strides]): equal strides put the smaller dim inside; a stride-0 dim
    compares equal to any, so the insertion sort neither moves it nor moves others past it."""
    def compare(inner: int, outer: int) -> int:  # 1: swap them; -1: in place, stop; 0: go on
        a, b = strides[inner], strides[outer]
        if a == 0 or b == 0:
            return 0
        if a != b:
            return 1 if a > b else -1
        return 1 if shape[inner] > shape[outer] else 0

    inside_out = list(range(len(shape) - 1, -1, -1))
    for i in range(1, len(inside_out)):
        moving = i
        for j in range(i - 1, -1, -1):
            order = compare(inside_out[j], inside_out[moving])
            if order < 0:
                break
            if order > 0:
                inside_out[j], inside_out[moving] = inside_out[moving], inside_out[j]
                moving = j
    return tuple(reversed(inside_out))
