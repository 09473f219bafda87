"""More pooling: adaptive max pooling (with indices), max unpooling and power-average (LP)
pooling, in 1, 2 and 3 dims, as compositions of gathers, scatters and the existing pools."""

from __future__ import annotations

import itertools
import math

import numpy as np

import tensor
from tensor import Tensor
from tensor._factory import is_int

from .conv import ntuple
from .pooling import _batched, avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d

__all__ = [
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices",
]


def _bins(n: int, out: int) -> list[range]:
    """PyTorch's adaptive bins: ``[floor(i * n / out), ceil((i + 1) * n / out))``."""
    return [range((i * n) // out, -(-((i + 1) * n) // out)) for i in range(out)]


def _window_table(spatial: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """For each output position (row-major), the flat input indices of its window, padded to a
    common width by repeating the first (a repeat never changes a max)."""
    strides = np.cumprod((1,) + spatial[::-1])[:-1][::-1]
    windows = []
    for cell in itertools.product(*[_bins(n, o) for n, o in zip(spatial, sizes)]):
        windows.append([int(np.dot(point, strides)) for point in itertools.product(*cell)])
    width = max((len(w) for w in windows), default=1)  # no windows for an output size of 0
    padded = [w + [w[0]] * (width - len(w)) for w in windows]
    return np.array(padded, dtype=np.int64).reshape(len(windows), width)


def _adaptive_max_poolnd(input: Tensor, output_size, return_indices: bool, nd: int, name: str):
    x, unbatched = _batched(input, nd, name)
    spatial = tuple(x.shape[2:])
    sizes = (output_size,) * nd if is_int(output_size) or output_size is None else tuple(output_size)
    if len(sizes) != nd:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
    sizes = tuple(n if o is None else int(o) for n, o in zip(spatial, sizes))
    table = _window_table(spatial, sizes)
    flat_index = tensor.tensor(table.reshape(-1), device=x.device)
    n, c = x.shape[:2]
    windows = x.reshape(n, c, -1).index_select(2, flat_index).reshape(n, c, *table.shape)
    values, arg = windows.max(-1)
    values = values.reshape(n, c, *sizes)
    if not return_indices:
        return values.squeeze(0) if unbatched else values
    positions = tensor.tensor(table, device=x.device)
    rows = tensor.arange(table.shape[0], device=x.device).reshape(1, 1, -1)
    indices = positions[rows.expand(n, c, -1), arg].reshape(n, c, *sizes)
    if unbatched:
        return values.squeeze(0), indices.squeeze(0)
    return values, indices


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max pooling of ``(N, C, L)`` or ``(C, L)`` input into ``output_size`` adaptive bins; with
    ``return_indices`` also each maximum's index within its plane.

    Raises:
        RuntimeError: for the wrong number of dims or an empty input.
    """
    return _adaptive_max_poolnd(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """2-d adaptive max pooling (``None`` in ``output_size`` keeps a dim). Raises like the 1-d form."""
    return _adaptive_max_poolnd(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """3-d adaptive max pooling. Raises like the 1-d form."""
    return _adaptive_max_poolnd(input, output_size, return_indices, 3, "adaptive_max_pool3d")


def _max_unpoolnd(input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size, nd: int, name: str):
    x, unbatched = _batched(input, nd, name)
    idx = indices.unsqueeze(0) if unbatched else indices
    if idx.shape != x.shape:
        raise RuntimeError(
            f"Expected shape of indices to be same as that of the input tensor "
            f"({list(x.shape)}) but got indices tensor with shape: {list(idx.shape)}"
        )
    kernel = ntuple(kernel_size, nd, "kernel_size", name)
    stride = kernel if stride is None else ntuple(stride, nd, "stride", name)
    padding = ntuple(padding, nd, "padding", name)
    default = [(n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], stride, padding, kernel)]
    if output_size is None:
        sizes = default
    else:
        if len(output_size) not in (nd, nd + 2):
            raise ValueError(
                f"output_size should be a sequence containing {nd} or {nd + 2} elements, "
                f"but it has a length of '{len(output_size)}'"
            )
        sizes = [int(s) for s in output_size][-nd:]
        for size, d, s in zip(sizes, default, stride):
            if not d - s < size < d + s:
                raise ValueError(
                    f"invalid output_size {list(output_size)} (dim {nd}: must be between "
                    f"{[d - s for d, s in zip(default, stride)]} and {[d + s for d, s in zip(default, stride)]})"
                )
    n, c = x.shape[:2]
    flat = idx.reshape(n, c, -1)
    _check_unpool_indices(flat, sizes)
    out = tensor.zeros(n, c, math.prod(sizes), dtype=x.dtype, device=x.device)
    out = out.scatter(2, flat, x.reshape(n, c, -1)).reshape(n, c, *sizes)
    return out.squeeze(0) if unbatched else out


def _check_unpool_indices(flat: Tensor, sizes: list[int]) -> None:
    bad = (flat < 0) | (flat >= math.prod(sizes))
    if flat.numel() and bool(bad.any()):
        index = int(flat[bad].reshape(-1)[0])
        shape = "x".join(str(s) for s in sizes)
        raise RuntimeError(f"Found an invalid max index: {index} (output volumes are of size {shape})")


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of ``max_pool1d``: each value put back at its index, zeros elsewhere.

    Raises:
        RuntimeError: if ``indices`` does not match ``input`` or holds an index outside the output.
        ValueError: for an ``output_size`` the pooling could not have come from.
    """
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of ``max_pool2d``. Raises like ``max_unpool1d``."""
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of ``max_pool3d``. Raises like ``max_unpool1d``."""
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


def _lp_poolnd(input: Tensor, norm_type: float, kernel_size, stride, ceil_mode: bool, nd: int) -> Tensor:
    kernel = ntuple(kernel_size, nd, "kernel_size", f"lp_pool{nd}d")
    if math.isinf(norm_type):  # the limits: the largest or smallest magnitude in each window
        max_pool = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
        sign = 1.0 if norm_type > 0 else -1.0
        return max_pool(input.abs() * sign, kernel, stride, 0, 1, ceil_mode) * sign
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    out = pool(input**norm_type, kernel, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu() * math.prod(kernel)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: ``(sum over the window of x**p) ** (1/p)``; ``p = inf`` is the
    largest ``|x|`` in the window and ``-inf`` the smallest."""
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """2-d power-average pooling."""
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """3-d power-average pooling."""
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 3)


def max_pool1d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """``max_pool1d`` returning ``(values, indices)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """``max_pool2d`` returning ``(values, indices)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool3d_with_indices(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True
):
    """``max_pool3d`` returning ``(values, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """``adaptive_max_pool1d`` returning ``(values, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """``adaptive_max_pool2d`` returning ``(values, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """``adaptive_max_pool3d`` returning ``(values, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)
