"""Normalization: batch_norm, layer_norm, group_norm, instance_norm and normalize."""

from __future__ import annotations

import math

import tensor
from tensor import Tensor
from tensor._dtype import HALF_FLOATS
from tensor._factory import as_int, as_ints, is_int

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "normalize"]


# Note [Low-precision normalization]: a bfloat16 or float16 input is normalized in float32 and the
# result rounded back to its dtype once, as PyTorch's CPU kernels do; they also keep that dtype
# beside float32 weight and bias (the usual autocast case: a bfloat16 activation, float32
# parameters), where plain type promotion would give float32.

def _in_float32(norm, input: Tensor, *args) -> Tensor:
    """``norm(input, *args)`` computed on ``input``'s float32 copy, rounded back to its dtype."""
    return norm(input.float(), *args).to(input.dtype)


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    """A per-channel (C,) tensor shaped to broadcast against an (N, C, *) input."""
    return t.reshape((1, -1) + (1,) * (ndim - 2)) if ndim > 1 else t


def _normalize_over(input: Tensor, dims: tuple, eps: float):
    """(normalized input, batch mean, biased batch variance) over ``dims``."""
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * (var + eps).rsqrt(), mean, var


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) over the batch and spatial dims.

    In training the batch statistics are used, and the running statistics (when given) are
    updated in place: ``running = (1 - momentum) * running + momentum * batch`` with the
    unbiased batch variance. Otherwise the running statistics are used.

    Raises:
        ValueError: in training, if there is only one value per channel.
        RuntimeError: without running statistics outside training, or for mismatched sizes.
    """
    if input.ndim < 2:
        raise ValueError(f"batch_norm expected 2D or more input (got {input.ndim}D input)")
    if input.dtype in HALF_FLOATS:  # Note [Low-precision normalization]
        return _in_float32(batch_norm, input, running_mean, running_var, weight, bias, training, momentum, eps)
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != channels:
            raise RuntimeError(
                f"batch_norm: expected {name} to have {channels} elements (the input's channels), "
                f"got {t.numel()}"
            )
    dims = (0,) + tuple(range(2, input.ndim))
    if training:
        count = input.numel() // channels if channels else 0
        if count == 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size {list(input.shape)}"
            )
        out, mean, var = _normalize_over(input, dims, eps)
        if running_mean is not None or running_var is not None:
            with tensor.no_grad():
                if running_mean is not None:
                    batch_mean = mean.detach().reshape(-1).to(running_mean.dtype)
                    running_mean.mul_(1 - momentum).add_(batch_mean * momentum)
                if running_var is not None:
                    unbiased = var.detach().reshape(-1).to(running_var.dtype) * (count / max(count - 1, 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        scale = (running_var + eps).rsqrt()
        out = (input - _channel_view(running_mean, input.ndim)) * _channel_view(scale, input.ndim)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing dims ``normalized_shape``, then scale and shift elementwise.

    Raises:
        RuntimeError: if the input's trailing dims are not ``normalized_shape``.
    """
    shape = (as_int(normalized_shape, "size"),) if is_int(normalized_shape) else as_ints(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[-k:]) != shape:
        expected = ", ".join(str(s) for s in shape)
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, {expected}], but got "
            f"input of size{list(input.shape)}"
        )
    if input.dtype in HALF_FLOATS:  # Note [Low-precision normalization]
        return _in_float32(layer_norm, input, normalized_shape, weight, bias, eps)
    out, _, _ = _normalize_over(input, tuple(range(input.ndim - k, input.ndim)), eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Split the channels (dim 1) into ``num_groups`` groups and normalize each group per sample.

    Raises:
        RuntimeError: if the channels are not divisible by ``num_groups``.
    """
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{list(input.shape)} and num_groups={num_groups}"
        )
    if input.dtype in HALF_FLOATS:  # Note [Low-precision normalization]
        return _in_float32(group_norm, input, num_groups, weight, bias, eps)
    grouped = input.reshape(n, num_groups, -1)
    out, _, _ = _normalize_over(grouped, (2,), eps)
    out = out.reshape(input.shape)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample over its spatial dims."""
    if input.dtype in HALF_FLOATS:  # Note [Low-precision normalization]
        return _in_float32(instance_norm, input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    dims = tuple(range(2, input.ndim))
    if math.prod(input.shape[2:]) <= 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {list(input.shape)}"
        )
    out, mean, var = _normalize_over(input, dims, eps)
    if running_mean is not None or running_var is not None:
        count = math.prod(input.shape[2:])
        with tensor.no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(mean.detach().mean(0).reshape(-1) * momentum)
            if running_var is not None:
                unbiased = var.detach().mean(0).reshape(-1) * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """Divide by the ``p``-norm along ``dim`` (at least ``eps``); ``p`` may be ``inf``,
    ``-inf`` or 0 (the count of non-zeros), as ``tensor.linalg.vector_norm``. With ``out``, the
    result is written there.

    Raises:
        RuntimeError: for an integer input.
    """
    if input.dtype in HALF_FLOATS:  # a float32 norm, as PyTorch's reductions accumulate
        norm = tensor.linalg.vector_norm(input, p, dim, keepdim=True, dtype=tensor.float32).to(input.dtype)
    else:
        norm = tensor.linalg.vector_norm(input, p, dim, keepdim=True)
    return tensor.div(input, norm.clamp(min=eps), out=out)
