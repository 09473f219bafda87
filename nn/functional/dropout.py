"""Dropout: zero random elements during training and rescale the rest by ``1 / (1 - p)``."""

from __future__ import annotations

import tensor
from tensor import Tensor, _dispatch

__all__ = ["dropout", "dropout1d", "dropout2d", "alpha_dropout"]


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape, p: float, like: Tensor) -> Tensor:
    """``1 / (1 - p)`` where kept, 0 where dropped, drawn from the tensor RNG, in ``like``'s dtype."""
    rng = tensor.default_generator.numpy
    host = rng.random(shape, dtype="float32") >= p
    scale = host.astype(like._data.dtype)
    if p < 1.0:
        scale *= 1.0 / (1.0 - p)
    return _dispatch.make(like.device.backend.asarray(scale, None, like.device.index), like._device)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``; the
    identity when not ``training`` (or ``p == 0``).

    Raises:
        ValueError: if ``p`` is not in [0, 1].
    """
    _check_p(p)
    if not training or p == 0.0:
        return input
    out = input * _keep_mask(input.shape, p, input)
    return input.copy_(out) if inplace else out


def _channel_dropout(input: Tensor, p: float, training: bool, inplace: bool, spatial: int, name: str):
    _check_p(p)
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(
            f"{name}: Expected {spatial + 1}D or {spatial + 2}D input, but received a {input.ndim}D input"
        )
    if not training or p == 0.0:
        return input
    shape = input.shape[:-spatial] + (1,) * spatial
    out = input * _keep_mask(shape, p, input)
    return input.copy_(out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, L) or (C, L) input with probability ``p``."""
    return _channel_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, H, W) or (C, H, W) input with probability ``p``."""
    return _channel_dropout(input, p, training, inplace, 2, "dropout2d")


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps the mean and variance of SELU activations."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    alpha_p = -1.7580993408473766
    keep = _keep_mask(input.shape, p, input) * (1.0 - p)  # 1 where kept, 0 where dropped
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1 - keep)) * a + b
    return input.copy_(out) if inplace else out
