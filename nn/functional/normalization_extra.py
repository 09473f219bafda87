"""``rms_norm`` and ``local_response_norm``, as compositions of differentiable ops."""

from __future__ import annotations

from collections.abc import Sequence

import tensor
from tensor import Tensor
from tensor._dtype import HALF_FLOATS
from tensor._factory import as_int, as_ints, is_int

from .padding import pad

__all__ = ["rms_norm", "local_response_norm"]


def rms_norm(
    input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (``eps`` defaults to the machine epsilon of the dtype computed in). Float16 and bfloat16 are
    normalized and weighted in float32 and rounded back to their dtype once, as PyTorch.

    Raises:
        RuntimeError: if the trailing dims of ``input`` are not ``normalized_shape``.
    """
    shape = (as_int(normalized_shape, "size"),) if is_int(normalized_shape) else as_ints(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape) :]) != shape or len(shape) > input.ndim:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    if input.dtype in HALF_FLOATS:  # Note [Low-precision normalization]
        return rms_norm(input.float(), shape, weight, eps).to(input.dtype)
    if eps is None:
        eps = float(tensor.finfo(input.dtype).eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalize each element by the squares of its ``size`` neighbouring channels:
    ``x / (k + alpha * mean(x**2 over the window)) ** beta``.

    Raises:
        ValueError: for an input with fewer than 3 dims.
    """
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    squares = (input * input).movedim(1, -1)
    if input.dtype in HALF_FLOATS:  # the window sum overflows; PyTorch's avg_pool sums in float32
        squares = squares.float()
    padded = pad(squares, (size // 2, (size - 1) // 2))
    channels = input.shape[1]
    window = padded.narrow(-1, 0, channels)
    for offset in range(1, size):
        window = window + padded.narrow(-1, offset, channels)
    mean = (window.movedim(-1, 1) / size).to(input.dtype)
    return input / (mean * alpha + k) ** beta
