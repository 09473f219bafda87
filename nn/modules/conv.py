"""Convolution layers: ``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``, ``ConvTranspose2d``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import tensor
from tensor import Tensor
from tensor._factory import as_int, as_ints, is_int

from .. import functional as F
from ..functional.conv import transpose_output_shape
from ..functional.padding import pad_by_mode
from .linear import register_weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

IntOrTuple = int | Sequence[int]
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, n: int) -> tuple:
    if is_int(value):
        return (as_int(value, "size"),) * n
    value = as_ints(value)
    return value * n if len(value) == 1 else value


def _reversed_padding_repeated_twice(padding: tuple | str, kernel_size: tuple, dilation: tuple) -> tuple | list:
    """PyTorch's ``F.pad`` form of a conv's padding: (left, right) per dim, last dim first; a
    list for a padding string, as PyTorch's."""
    if not isinstance(padding, str):
        return tuple(p for p in reversed(padding) for _ in range(2))
    pads = [0, 0] * len(kernel_size)
    if padding == "same":
        for i, (k, d) in enumerate(zip(reversed(kernel_size), reversed(dilation))):
            total = d * (k - 1)
            pads[2 * i], pads[2 * i + 1] = total // 2, total - total // 2
    return pads


def _uniform_(param: Tensor, bound: float) -> None:
    # kaiming_uniform_(a=sqrt(5)) and PyTorch's bias rule both come down to U(-bound, bound).
    with tensor.no_grad():
        param.uniform_(-bound, bound)


class _ConvNd(Module):
    """Shared construction, initialisation and printing of the convolution layers."""

    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple,
                 padding: IntOrTuple | str, dilation: IntOrTuple, groups: int, bias: bool,
                 padding_mode: str, output_padding: IntOrTuple = 0, device=None, dtype=None) -> None:
        super().__init__()
        nd = self._nd
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _tuple(kernel_size, nd), _tuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, nd)
        self.dilation, self.output_padding = _tuple(dilation, nd), _tuple(output_padding, nd)
        self.transposed, self.padding_mode = self._transposed, padding_mode
        self._reversed_padding_repeated_twice = _reversed_padding_repeated_twice(
            self.padding, self.kernel_size, self.dilation)
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        register_weight_and_bias(self, shape, out_channels if bias else None, device, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform_(a=sqrt(5)) for the weight, which is
        U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the same bound for the bias."""
        fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        _uniform_(self.weight, bound)
        if self.bias is not None:
            _uniform_(self.bias, bound)

    def _padded_input(self, input: Tensor) -> tuple[Tensor, IntOrTuple | str]:
        """The input padded by ``padding_mode`` (when not zeros) and the padding left for the conv."""
        if self.padding_mode == "zeros":
            return input, self.padding
        reversed_pads = self._reversed_padding_repeated_twice
        if not any(reversed_pads):
            return input, 0
        pads = [(reversed_pads[2 * i], reversed_pads[2 * i + 1]) for i in reversed(range(len(reversed_pads) // 2))]
        return pad_by_mode(input, pads, self.padding_mode), 0

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """The constructor and ``forward`` of ``Conv1d``/``Conv2d``/``Conv3d``; ``_conv`` is their functional op."""

    _conv: Callable[..., Tensor]  # a staticmethod in each subclass

    def __init__(self, in_channels: int, out_channels: int, kernel_size: IntOrTuple, stride: IntOrTuple = 1,
                 padding: IntOrTuple | str = 0, dilation: IntOrTuple = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        """This layer's convolution of ``input`` with the given ``weight`` and ``bias`` (what
        subclasses that transform the weight, such as weight standardization, call, as in PyTorch)."""
        input, padding = self._padded_input(input)
        return self._conv(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_Conv):
    """1-d convolution layer over ``(N, C_in, L)`` input (``padding`` may be ``'same'``/``'valid'``;
    ``padding_mode`` is 'zeros', 'reflect', 'replicate' or 'circular').

    Raises:
        ValueError: if ``groups`` is not positive or does not divide both channel counts, for
            an unknown padding string or mode, or ``padding='same'`` with a stride.
    """

    _nd = 1
    _conv = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution layer over ``(N, C_in, H, W)`` input. Arguments and errors as ``Conv1d``."""

    _nd = 2
    _conv = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-d convolution layer over ``(N, C_in, D, H, W)`` input. Arguments and errors as ``Conv1d``."""

    _nd = 3
    _conv = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None) -> None:
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not support string padding, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """The output padding that makes the output ``output_size`` (PyTorch's rule).

        Raises:
            ValueError: if ``output_size`` is out of the reachable range.
        """
        if output_size is None:
            return self.output_padding
        nd = self._nd
        output_size = list(output_size)[-nd:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must have {nd} "
                             f"or {nd + 2} elements (got {len(output_size)})")
        smallest = transpose_output_shape(input.shape[-nd:], self.kernel_size, self.stride, self.padding,
                                          (0,) * nd, self.dilation)
        result = []
        for size, low, s in zip(output_size, smallest, self.stride):
            if not low <= size < low + s:
                raise ValueError(
                    f"requested an output size of {output_size}, but valid sizes range from {list(smallest)} "
                    f"to {[m + s - 1 for m, s in zip(smallest, self.stride)]} (for an input of "
                    f"{list(input.shape[-nd:])})"
                )
            result.append(size - low)
        return tuple(result)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution layer (weight ``(C_in, C_out / groups, k)``); ``forward`` takes an
    optional ``output_size`` that picks the output padding.

    Raises:
        ValueError: as ``Conv1d``, and for a ``padding_mode`` other than 'zeros'.
    """

    _nd = 1

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution layer (weight ``(C_in, C_out / groups, kH, kW)``). Arguments and
    errors as ``ConvTranspose1d``."""

    _nd = 2

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution layer (weight ``(C_in, C_out / groups, kD, kH, kW)``). Arguments
    and errors as ``ConvTranspose1d``."""

    _nd = 3

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        output_padding = self._output_padding(input, output_size)
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                  self.groups, self.dilation)
