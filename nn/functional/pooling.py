"""Pooling: ``max_pool1d/2d/3d``, ``avg_pool1d/2d/3d`` and ``adaptive_avg_pool1d/2d``.

Max pooling finds each window's argmax once (``tensor.ops.pool.window_argmax``) and
reads the values through ``take_windows``, whose backward writes the gradient to exactly
those elements, as PyTorch does. Average pooling sums the windows from ``unfold_windows``.
Adaptive average pooling is two small matmuls with averaging matrices.
"""

from __future__ import annotations

import math

import numpy as np

import tensor
from tensor import Tensor
from tensor._factory import is_int
from tensor.ops.pool import take_windows, window_argmax, window_flat_indices
from tensor.ops.window import unfold_windows

from .conv import IntOrTuple, ntuple

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d"]


def _batched(input: Tensor, nd: int, name: str) -> tuple[Tensor, bool]:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): expected input to be a Tensor, got {type(input).__name__}")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if any(s == 0 for s in input.shape[input.ndim - nd - 1:]):
        raise RuntimeError(
            f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{list(input.shape)}"
        )
    return (input, False) if input.ndim == nd + 2 else (input.unsqueeze(0), True)


def _pool_output_size(size, k, s, p, d, ceil_mode) -> int:
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:  # the last window must start inside the input
        out -= 1
    return out


def _pool_geometry(input, kernel_size, stride, padding, dilation, ceil_mode, nd, name):
    """Validate a pooling geometry; return (kernel, stride, padding, dilation, out_shape, pads)."""
    kernel = ntuple(kernel_size, nd, "kernel_size", name)
    stride = kernel if stride is None or (not is_int(stride) and len(stride) == 0) \
        else ntuple(stride, nd, "stride", name)
    padding, dilation = ntuple(padding, nd, "padding", name), ntuple(dilation, nd, "dilation", name)
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_size={list(kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation={list(dilation)}")
    for k, p, d in zip(kernel, padding, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    spatial = input.shape[2:]
    out_shape = tuple(_pool_output_size(*args, ceil_mode) for args in zip(spatial, kernel, stride, padding,
                                                                            dilation))
    if any(o < 1 for o in out_shape):
        sizes = "x".join(str(s) for s in (input.shape[1],) + tuple(spatial))
        outs = "x".join(str(s) for s in (input.shape[1],) + out_shape)
        raise RuntimeError(
            f"Given input size: ({sizes}). Calculated output size: ({outs}). Output size is too small"
        )
    # Pad after by whatever ceil_mode's last window needs beyond the symmetric padding.
    pads = tuple((p, max(p, (o - 1) * s + d * (k - 1) + 1 - n - p))
                 for n, k, s, p, d, o in zip(spatial, kernel, stride, padding, dilation, out_shape))
    return kernel, stride, padding, dilation, out_shape, pads


def _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, name):
    x, unbatched = _batched(input, nd, name)
    kernel, stride, _, dilation, _, pads = _pool_geometry(x, kernel_size, stride, padding, dilation,
                                                          ceil_mode, nd, name)
    arg = window_argmax(x, kernel, dilation, pads, stride)
    values = take_windows(x, arg, kernel, dilation, pads, stride, is_argmax=True)
    if not return_indices:
        return values.squeeze(0) if unbatched else values
    indices = window_flat_indices(arg, x.shape[2:], kernel, dilation, pads, stride)
    return (values.squeeze(0), indices.squeeze(0)) if unbatched else (values, indices)


def max_pool1d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)`` input; ``stride`` defaults to the kernel
    size. With ``return_indices`` also returns each maximum's flat index within its plane.

    Raises:
        RuntimeError: for empty input or a wrong number of dims, non-positive sizes, padding
            above half the effective kernel, or an output size below one.
    """
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1,
                       "max_pool1d")


def max_pool2d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-d max pooling over ``(N, C, H, W)`` or ``(C, H, W)`` input. Raises like ``max_pool1d``."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2,
                       "max_pool2d")


def max_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, dilation: IntOrTuple = 1, ceil_mode: bool = False,
               return_indices: bool = False):
    """3-d max pooling over ``(N, C, D, H, W)`` input. Raises like ``max_pool1d``."""
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3,
                       "max_pool3d")


def _window_counts(n, k, s, p, out, count_include_pad) -> np.ndarray:
    # How many elements each window along one dim averages over, as PyTorch counts them:
    # windows are clipped to the padded input, and to the input itself without padding.
    start = np.arange(out) * s - p
    end = np.minimum(start + k, n + p)
    if not count_include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, n)
    return end - start


def _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                nd, name):
    x, unbatched = _batched(input, nd, name)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f'"{name}" not implemented for \'{x.dtype.name}\'')
    kernel, stride, padding, dilation, out_shape, pads = _pool_geometry(
        x, kernel_size, stride, padding, 1, ceil_mode, nd, name)
    windows = unfold_windows(x, kernel, dilation, pads, stride)  # (N, C, *kernel, *out)
    total = windows.sum(tuple(range(2, 2 + nd)))
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        out = total / divisor_override
    else:
        counts = [_window_counts(n, k, s, p, o, count_include_pad)
                  for n, k, s, p, o in zip(x.shape[2:], kernel, stride, padding, out_shape)]
        if all((c == c[0]).all() for c in counts):
            out = total / math.prod(int(c[0]) for c in counts)
        else:
            grid = counts[0]
            for c in counts[1:]:
                grid = np.multiply.outer(grid, c)
            out = total / tensor.tensor(grid, dtype=x.dtype, device=x.device)
    return out.squeeze(0) if unbatched else out


def avg_pool1d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """1-d average pooling over ``(N, C, L)`` or ``(C, L)`` input; ``stride`` defaults to the
    kernel size. ``count_include_pad`` counts padded zeros in the divisor.

    Raises:
        RuntimeError: like ``max_pool1d``, and for integer input.
    """
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1,
                       "avg_pool1d")


def avg_pool2d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """2-d average pooling; ``divisor_override`` replaces the window size as the divisor.

    Raises:
        RuntimeError: like ``avg_pool1d``, and for ``divisor_override=0``.
    """
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override, 2, "avg_pool2d")


def avg_pool3d(input: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None,
               padding: IntOrTuple = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """3-d average pooling. Raises like ``avg_pool2d``."""
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override, 3, "avg_pool3d")


def _averaging_matrix(n: int, out: int, like: Tensor) -> Tensor:
    # Row i averages input[floor(i * n / out) : ceil((i + 1) * n / out)], PyTorch's bins.
    matrix = np.zeros((out, n))
    for i in range(out):
        start, end = (i * n) // out, -(-((i + 1) * n) // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return tensor.tensor(matrix, dtype=like.dtype, device=like.device)


def _adaptive_avg_poolnd(input, output_size, nd, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): expected input to be a Tensor, got {type(input).__name__}")
    if input.ndim not in (nd + 1, nd + 2):
        shape = list(input.shape)
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {shape}")
    if any(s == 0 for s in input.shape[-nd:]):
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, "
                           f"but input has sizes {list(input.shape)} with an empty spatial dimension")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}" not implemented for \'{input.dtype.name}\'')
    sizes = (output_size,) * nd if is_int(output_size) or output_size is None else tuple(output_size)
    if len(sizes) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    sizes = tuple(n if o is None else int(o) for n, o in zip(input.shape[-nd:], sizes))
    if any(o < 0 for o in sizes):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(sizes)}")
    out = input
    for axis in range(nd):  # one matmul per spatial dim, the last dim first
        dim = input.ndim - 1 - axis
        n, o = input.shape[dim], sizes[nd - 1 - axis]
        if n == o:
            continue
        matrix = _averaging_matrix(n, o, input)
        out = out @ matrix.mT if axis == 0 else (matrix @ out.movedim(dim, -2)).movedim(-2, dim)
    return out if out is not input else input * 1


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average pooling of ``(N, C, L)`` or ``(C, L)`` input down to ``output_size`` positions,
    with PyTorch's (possibly overlapping) bins.

    Raises:
        RuntimeError: for a wrong number of dims, an empty spatial dim, or a bad output size.
        NotImplementedError: for an input that is not floating point.
    """
    return _adaptive_avg_poolnd(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Average pooling of ``(N, C, H, W)`` or ``(C, H, W)`` input down to ``output_size``
    (an int, or a pair whose ``None`` entries keep that dim). Raises like ``adaptive_avg_pool1d``."""
    return _adaptive_avg_poolnd(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input down to ``output_size``.
    Raises like ``adaptive_avg_pool1d``."""
    return _adaptive_avg_poolnd(input, output_size, 3, "adaptive_avg_pool3d")
