"""``tensor.memory_format``: PyTorch's layout requests (``contiguous_format``, ``channels_last``,
``channels_last_3d``, ``preserve_format``) and the dim orders they stand for (issue 16).

A layout is an order of the dims from outermost to innermost in memory: row-major is
``(0, 1, 2, 3)``, channels_last ``(0, 2, 3, 1)`` (NHWC). numpy and CuPy arrays take any strides,
so a channels_last tensor here is an array whose strides are those of that order, as in PyTorch.
"""

from __future__ import annotations

import math

__all__ = ["channels_last", "channels_last_3d", "contiguous_format", "memory_format", "preserve_format"]


class memory_format:  # noqa: N801 - PyTorch's name
    """A memory layout request: ``tensor.contiguous_format``, ``channels_last``, ``channels_last_3d``
    or ``preserve_format`` (the only instances)."""

    __slots__ = ("_name",)

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'tensor.memory_format' instances")

    @classmethod
    def _make(cls, name: str) -> memory_format:
        out = object.__new__(cls)
        out._name = name
        return out

    def __repr__(self) -> str:
        return f"tensor.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format._make("contiguous_format")
channels_last = memory_format._make("channels_last")
channels_last_3d = memory_format._make("channels_last_3d")
preserve_format = memory_format._make("preserve_format")
_CHANNELS_LAST = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


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
    order = _CHANNELS_LAST.get(fmt)
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
    order = _CHANNELS_LAST.get(fmt, tuple(range(len(shape))))
    if len(order) != len(shape):
        return False
    if math.prod(shape) == 0:
        return True
    expected = dense_strides(shape, order)
    return all(n == 1 or s == e for n, s, e in zip(shape, strides, expected))


def preserved(shape: tuple, strides: tuple) -> memory_format:
    """The format ``preserve_format`` keeps: channels_last(_3d) for a tensor laid out that way
    (and not also row-major), else contiguous_format."""
    if is_laid_out(shape, strides, contiguous_format):
        return contiguous_format
    for fmt in _CHANNELS_LAST:
        if is_laid_out(shape, strides, fmt):
            return fmt
    return contiguous_format
