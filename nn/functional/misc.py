"""``gumbel_softmax``, ``linear_cross_entropy``, ``conv_tbc`` and ``native_channel_shuffle``."""

from __future__ import annotations

import tensor
from tensor import Tensor

from .activation import softmax
from .conv import conv1d
from .linear import linear
from .loss import cross_entropy
from .shuffle import channel_shuffle

__all__ = ["gumbel_softmax", "linear_cross_entropy", "conv_tbc", "native_channel_shuffle"]


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with Gumbel
    noise ``g``; with ``hard``, the one-hot of its argmax whose gradient is the soft sample's
    (straight-through)."""
    exponential = -tensor.rand_like(logits.detach()).clamp(min=eps).log()  # Exp(1) samples
    gumbels = -exponential.clamp(min=eps).log()
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.argmax(dim, keepdim=True)
    one_hot = tensor.zeros_like(logits).scatter(dim, index, tensor.ones_like(index, dtype=logits.dtype))
    return one_hot - soft.detach() + soft


def linear_cross_entropy(
    input: Tensor,
    linear_weight: Tensor,
    target: Tensor,
    *,
    linear_bias: Tensor | None = None,
    weight: Tensor | None = None,
    reduction: str = "mean",
    ignore_index: int | None = None,
    label_smoothing: float = 0.0,
    options=None,
) -> Tensor:
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)`` (the logits are
    materialised here; PyTorch may chunk them)."""
    logits = linear(input, linear_weight, linear_bias)
    return cross_entropy(
        logits,
        target,
        weight,
        reduction=reduction,
        ignore_index=-100 if ignore_index is None else ignore_index,
        label_smoothing=label_smoothing,
    )


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-d convolution of time-batch-channel input ``(T, B, C_in)`` with ``weight``
    ``(K, C_in, C_out)``: ``(T', B, C_out)``."""
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``channel_shuffle`` (PyTorch's native entry point)."""
    return channel_shuffle(input, groups)
