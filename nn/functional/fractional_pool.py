"""Fractional max pooling (Graham, 2014): windows of a fixed size at pseudo-random, increasing
starts, so the output can be any size between the input's and the input's divided by the
kernel. The starts follow PyTorch's interval rule, so given the same ``_random_samples`` the
result is torch's."""

from __future__ import annotations

import numpy as np

import tensor
from tensor import Tensor

from .conv import ntuple
from .pooling import _batched

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool3d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]


def _starts(samples: np.ndarray, size: int, out: int, kernel: int, dtype) -> np.ndarray:
    """Window starts for each plane (``samples`` ``(N, C)``), in the input dtype's arithmetic."""
    starts = np.empty(samples.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = dtype.type(size - kernel) / dtype.type(out - 1)
        steps = np.arange(out - 1, dtype=dtype)
        scaled = ((steps + samples[..., None].astype(dtype)) * alpha).astype(np.int64)
        starts[..., :-1] = scaled - (samples[..., None].astype(dtype) * alpha).astype(np.int64)
    starts[..., -1] = size - kernel
    return starts


def _fractional_max_poolnd(
    input: Tensor,
    kernel_size,
    output_size,
    output_ratio,
    return_indices: bool,
    samples: Tensor | None,
    nd: int,
    name: str,
):
    x, unbatched = _batched(input, nd, name)
    n, c, *spatial = x.shape
    kernel = ntuple(kernel_size, nd, "kernel_size", name)
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
        ratios = (output_ratio,) * nd if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        output_size = [int(s * r) for s, r in zip(spatial, ratios)]
    sizes = ntuple(output_size, nd, "output_size", name)
    for s, k, o in zip(spatial, kernel, sizes):
        if o + k - 1 > s:
            raise RuntimeError(f"{name}(): pool size {k} and output size {o} are too large for input size {s}")
    if samples is None:
        samples = tensor.rand(n, c, nd, dtype=x.dtype, device=x.device)
    drawn = samples.cpu().numpy()
    dtype = np.dtype(x.dtype.numpy)
    # PyTorch's sample order: the last spatial dim takes sample 0 in 2-d; in 3-d, dim order.
    order = [1, 0] if nd == 2 else [0, 1, 2]
    starts = [_starts(drawn[..., order[d]], spatial[d], sizes[d], kernel[d], dtype) for d in range(nd)]
    strides = np.cumprod([1] + spatial[::-1])[:-1][::-1]
    table = np.zeros((n, c) + tuple(sizes) + tuple(kernel), dtype=np.int64)
    for d in range(nd):
        positions = starts[d].reshape((n, c) + tuple(sizes[d] if e == d else 1 for e in range(nd)) + (1,) * nd)
        offsets = np.arange(kernel[d]).reshape((1,) * (2 + nd) + tuple(kernel[d] if e == d else 1 for e in range(nd)))
        table = table + (positions + offsets) * strides[d]
    flat = table.reshape(n, c, -1, int(np.prod(kernel)))
    index = tensor.tensor(flat.reshape(n, c, -1), device=x.device)
    windows = x.reshape(n, c, -1).gather(2, index).reshape(n, c, *flat.shape[2:])
    values, arg = windows.max(-1)
    values = values.reshape(n, c, *sizes)
    if not return_indices:
        return values.squeeze(0) if unbatched else values
    indices = tensor.tensor(flat, device=x.device).gather(3, arg.unsqueeze(-1)).reshape(n, c, *sizes)
    if unbatched:
        return values.squeeze(0), indices.squeeze(0)
    return values, indices


def _public(nd: int):
    """``fractional_max_pool{nd}d`` and its ``_with_indices`` form."""
    name = f"fractional_max_pool{nd}d"

    def pool(
        input: Tensor,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples: Tensor | None = None,
    ):
        return _fractional_max_poolnd(
            input, kernel_size, output_size, output_ratio, return_indices, _random_samples, nd, name
        )

    def with_indices(
        input: Tensor,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = True,
        _random_samples: Tensor | None = None,
    ):
        return pool(input, kernel_size, output_size, output_ratio, True, _random_samples)

    shape = "(N, C, H, W)`` or ``(C, H, W)" if nd == 2 else "(N, C, D, H, W)`` or ``(C, D, H, W)"
    pool.__doc__ = f"""{nd}-d fractional max pooling of ``{shape}`` input to ``output_size``
    (or ``output_ratio`` of the input); ``_random_samples`` ``(N, C, {nd})`` in [0, 1) fixes the
    window starts.

    Raises:
        ValueError: without ``output_size`` and ``output_ratio``.
        RuntimeError: if the kernel and output size do not fit the input.
    """
    with_indices.__doc__ = f"``{name}`` returning ``(values, indices)``."
    for function, function_name in ((pool, name), (with_indices, name + "_with_indices")):
        function.__name__ = function.__qualname__ = function_name
    return pool, with_indices


fractional_max_pool2d, fractional_max_pool2d_with_indices = _public(2)
fractional_max_pool3d, fractional_max_pool3d_with_indices = _public(3)
