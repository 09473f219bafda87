"""Padding layers: ``ConstantPad``, ``ZeroPad``, ``ReflectionPad``, ``ReplicationPad`` and
``CircularPad``, each in 1d, 2d and 3d (``F.pad`` with a fixed mode)."""

from __future__ import annotations

from collections.abc import Sequence

from tensor import Tensor
from tensor._factory import as_int, is_int

from .. import functional as F
from .module import Module

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
]


class _PadNd(Module):
    """Pad the last ``nd`` dims by ``padding`` (an int for every side, or ``2 * nd`` amounts in
    ``F.pad``'s order) with ``mode``.

    Raises:
        ValueError: for a padding tuple of the wrong length.
    """

    nd: int = 1
    mode: str = "constant"

    def __init__(self, padding: int | Sequence[int], value: float = 0.0) -> None:
        super().__init__()
        amounts = (as_int(padding, "padding"),) * (2 * self.nd) if is_int(padding) else tuple(padding)
        if len(amounts) != 2 * self.nd:
            raise ValueError(f"{type(self).__name__} expects padding of {2 * self.nd} ints, got {padding}")
        self.padding = amounts
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """Pad ``input``."""
        if self.mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int], value: float) -> None:
        super().__init__(padding, value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding, 0.0)


class _ModePadNd(_PadNd):
    def __init__(self, padding: int | Sequence[int]) -> None:
        super().__init__(padding)


class ConstantPad1d(_ConstantPadNd):
    """Pad with a constant ``value``: the last dim."""

    nd, mode = 1, "constant"


class ConstantPad2d(_ConstantPadNd):
    """Pad with a constant ``value``: the last 2 dims."""

    nd, mode = 2, "constant"


class ConstantPad3d(_ConstantPadNd):
    """Pad with a constant ``value``: the last 3 dims."""

    nd, mode = 3, "constant"


class ZeroPad1d(_ZeroPadNd):
    """Pad with zeros: the last dim."""

    nd, mode = 1, "constant"


class ZeroPad2d(_ZeroPadNd):
    """Pad with zeros: the last 2 dims."""

    nd, mode = 2, "constant"


class ZeroPad3d(_ZeroPadNd):
    """Pad with zeros: the last 3 dims."""

    nd, mode = 3, "constant"


class ReflectionPad1d(_ModePadNd):
    """Pad with the reflection of the input (the edge not repeated): the last dim."""

    nd, mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pad with the reflection of the input (the edge not repeated): the last 2 dims."""

    nd, mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pad with the reflection of the input (the edge not repeated): the last 3 dims."""

    nd, mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pad by repeating the edge values: the last dim."""

    nd, mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pad by repeating the edge values: the last 2 dims."""

    nd, mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pad by repeating the edge values: the last 3 dims."""

    nd, mode = 3, "replicate"


class CircularPad1d(_ModePadNd):
    """Pad by wrapping around (periodic): the last dim."""

    nd, mode = 1, "circular"


class CircularPad2d(_ModePadNd):
    """Pad by wrapping around (periodic): the last 2 dims."""

    nd, mode = 2, "circular"


class CircularPad3d(_ModePadNd):
    """Pad by wrapping around (periodic): the last 3 dims."""

    nd, mode = 3, "circular"
