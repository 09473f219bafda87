"""Pooling layers: ``MaxPool1d/2d``, ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d``."""

from __future__ import annotations

from collections.abc import Sequence

from tensor import Tensor
from tensor._factory import as_int, is_int

from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d"]

IntOrTuple = int | Sequence[int]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 dilation: IntOrTuple = 1, return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling over ``(N, C, L)`` input; ``stride`` defaults to ``kernel_size``.
    Raises what ``F.max_pool1d`` raises, when called."""

    def forward(self, input: Tensor):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling over ``(N, C, H, W)`` input; ``stride`` defaults to ``kernel_size``.
    Raises what ``F.max_pool2d`` raises, when called."""

    def forward(self, input: Tensor):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """1-d average pooling over ``(N, C, L)`` input. Raises what ``F.avg_pool1d`` raises."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


def _ntuple(value, n: int) -> tuple:
    """An int repeated ``n`` times, or a sequence as a tuple (its length is the op's to check), as
    PyTorch's ``_single``/``_pair``/``_triple``."""
    return (as_int(value, "size"),) * n if is_int(value) else tuple(value)


class AvgPool2d(Module):
    """2-d average pooling over ``(N, C, H, W)`` input. Raises what ``F.avg_pool2d`` raises."""

    def __init__(self, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class _AdaptiveAvgPoolNd(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length. Raises what ``F.adaptive_avg_pool1d`` raises."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size (``None`` keeps a dim). Raises what
    ``F.adaptive_avg_pool2d`` raises."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)
