"""ATen's normalization entry points that torch exposes at top level (issue 16, coverage):
``native_batch_norm``/``native_layer_norm``/``native_group_norm`` (the output and the saved
statistics), ``native_norm``, ``norm_except_dim``, and the kernels of synchronized batch norm
(``batch_norm_stats``, ``batch_norm_elemt``, ``batch_norm_gather_stats[_with_counts]``,
``batch_norm_update_stats``, ``batch_norm_backward_reduce``, ``batch_norm_backward_elemt``).

All are compositions of differentiable tensor ops, on every device. torch runs the
synchronized-batch-norm kernels and ``native_norm`` on CUDA only (its CPU raises
NotImplementedError); here they also run on the CPU. Statistics are over the batch and spatial
dims of an (N, C, *) input; ``invstd`` is ``1 / sqrt(biased variance + eps)``.
"""

from __future__ import annotations

from . import _creation
from ._autograd_hooks import api as _api
from ._tensor import Tensor
from .ops.norms import vector_norm

__all__ = [
    "native_batch_norm", "native_layer_norm", "native_group_norm", "native_norm", "norm_except_dim",
    "batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
    "batch_norm_update_stats", "batch_norm_backward_reduce", "batch_norm_backward_elemt",
]  # fmt: skip


def _reduced_dims(input: Tensor) -> tuple[int, ...]:
    if input.ndim < 2:
        raise RuntimeError(f"batch norm expects an input of at least 2 dims (N, C, *), got {input.ndim}-D")
    return (0,) + tuple(range(2, input.ndim))


def _per_channel(t: Tensor | None, ndim: int) -> Tensor | None:
    """A (C,) tensor shaped to broadcast against an (N, C, *) input."""
    return None if t is None else t.reshape((1, -1) + (1,) * (ndim - 2))


def _mean_and_var(input: Tensor, dims) -> tuple[Tensor, Tensor]:
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    return mean, (centered * centered).mean(dims, keepdim=True)


def _update_running(running: Tensor | None, value: Tensor, momentum: float) -> None:
    if running is not None:
        with _api.no_grad():
            running.mul_(1 - momentum).add_(value.detach().to(running.dtype) * momentum)


def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """The per-channel ``(mean, invstd)`` of an (N, C, *) input.

    Raises:
        RuntimeError: for an input of fewer than 2 dims.
    """
    mean, var = _mean_and_var(input, _reduced_dims(input))
    return mean.reshape(-1), (var + eps).rsqrt().reshape(-1)


def batch_norm_elemt(input: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor,
                     eps: float) -> Tensor:  # fmt: skip
    """``(input - mean) * invstd * weight + bias`` per channel (``eps`` is unused, as in ATen)."""
    return _affine((input - _per_channel(mean, input.ndim)) * _per_channel(invstd, input.ndim), weight, bias)


def _affine(out: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """``out * weight + bias`` per channel (dim 1)."""
    if weight is not None:
        out = out * _per_channel(weight, out.ndim)
    return out if bias is None else out + _per_channel(bias, out.ndim)


def batch_norm_update_stats(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                            momentum: float) -> tuple[Tensor, Tensor]:  # fmt: skip
    """The per-channel ``(mean, biased variance)``; updates the running statistics in place
    (``running = (1 - momentum) * running + momentum * batch``, with the unbiased variance)."""
    dims = _reduced_dims(input)
    mean, var = _mean_and_var(input, dims)
    count = input.numel() // max(input.shape[1], 1)
    mean, var = mean.reshape(-1), var.reshape(-1)
    _update_running(running_mean, mean, momentum)
    _update_running(running_var, var * (count / max(count - 1, 1)), momentum)
    return mean, var


def batch_norm_gather_stats_with_counts(input: Tensor, mean: Tensor, invstd: Tensor, running_mean: Tensor | None,
                                        running_var: Tensor | None, momentum: float, eps: float,
                                        counts: Tensor) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Combine per-process statistics ``mean``/``invstd`` (processes, C) of ``counts`` elements
    per channel each into the global ``(mean, invstd)`` (C,), and update the running statistics
    with the global mean and unbiased variance. ``input`` only gives the dtype, as in ATen."""
    weights = counts.to(mean.dtype).reshape(-1, 1)
    total = weights.sum()
    global_mean = (mean * weights).sum(0) / total
    spread = invstd.pow(-2) - eps + (mean - global_mean) ** 2
    global_var = (spread * weights).sum(0) / total
    _update_running(running_mean, global_mean, momentum)
    _update_running(running_var, global_var * total / (total - 1).clamp(min=1), momentum)
    return global_mean, (global_var + eps).rsqrt()


def batch_norm_gather_stats(input: Tensor, mean: Tensor, invstd: Tensor, running_mean: Tensor | None,
                            running_var: Tensor | None, momentum: float, eps: float,
                            count: int) -> tuple[Tensor, Tensor]:  # fmt: skip
    """``batch_norm_gather_stats_with_counts`` with ``count`` elements per channel in every process."""
    counts = _creation.full((mean.shape[0],), count, dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def batch_norm_backward_reduce(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                               weight: Tensor | None, input_g: bool, weight_g: bool,
                               bias_g: bool) -> tuple:  # fmt: skip
    """Per-channel sums for batch norm's backward: ``(sum_dy, sum_dy_xmu, grad_weight,
    grad_bias)``, ``sum_dy = sum(grad_out)``, ``sum_dy_xmu = sum(grad_out * (input - mean))``,
    ``grad_weight = sum_dy_xmu * invstd``, ``grad_bias = sum_dy``; each None when its flag
    (``input_g`` for the first two) is False, as torch's undefined tensors."""
    dims = _reduced_dims(input)
    sum_dy = grad_out.sum(dims)
    sum_dy_xmu = (grad_out * (input - _per_channel(mean, input.ndim))).sum(dims)
    return (
        sum_dy if input_g else None,
        sum_dy_xmu if input_g else None,
        sum_dy_xmu * invstd if weight_g else None,
        sum_dy if bias_g else None,
    )


def batch_norm_backward_elemt(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor,
                              weight: Tensor | None, sum_dy: Tensor, sum_dy_xmu: Tensor,
                              count: Tensor) -> Tensor:  # fmt: skip
    """The input's gradient of batch norm from the (all-reduced) sums of
    ``batch_norm_backward_reduce`` over ``count.sum()`` elements per channel:
    ``(grad_out - sum_dy / n - (input - mean) * invstd^2 * sum_dy_xmu / n) * invstd * weight``."""
    nd = input.ndim
    n = count.to(sum_dy.dtype).sum()
    scale = _per_channel(invstd, nd) if weight is None else _per_channel(invstd * weight, nd)
    centered = (input - _per_channel(mean, nd)) * _per_channel(invstd * invstd * sum_dy_xmu / n, nd)
    return (grad_out - _per_channel(sum_dy / n, nd) - centered) * scale


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """Batch norm with its saved statistics: ``(output, save_mean, save_invstd)``. In training
    these are the batch's (and the running statistics are updated in place); otherwise the
    running statistics normalize and the two saved tensors are empty, as torch's CPU kernel.

    Raises:
        RuntimeError: for an input of fewer than 2 dims, or no running statistics in evaluation.
    """
    if training:
        mean, invstd = batch_norm_stats(input, eps)
        batch_norm_update_stats(input.detach(), running_mean, running_var, momentum)
        return batch_norm_elemt(input, weight, bias, mean, invstd, eps), mean, invstd
    if running_mean is None or running_var is None:
        raise RuntimeError("native_batch_norm: running_mean and running_var must be defined in evaluation mode")
    _reduced_dims(input)
    out = batch_norm_elemt(input, weight, bias, running_mean, (running_var + eps).rsqrt(), eps)
    empty = input.new_empty((0,))
    return out, empty, empty.clone()


def native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """Layer norm over the trailing dims ``normalized_shape``: ``(output, mean, rstd)``, the
    statistics shaped ``input.shape[:-k] + (1,) * k``.

    Raises:
        RuntimeError: if the input's trailing dims are not ``normalized_shape``.
    """
    shape = tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[-k:]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, {', '.join(map(str, shape))}], "
            f"but got input of size{list(input.shape)}"
        )
    mean, var = _mean_and_var(input, tuple(range(input.ndim - k, input.ndim)))
    rstd = (var + eps).rsqrt()
    out = (input - mean) * rstd
    if weight is not None:
        out = out * weight
    return (out if bias is None else out + bias), mean, rstd


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int, HxW: int,
                      group: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """Group norm of an input of ``N`` samples, ``C`` channels and ``HxW`` positions each:
    ``(output, mean, rstd)``, the statistics (N, group).

    Raises:
        RuntimeError: if the input's size is not ``N * C * HxW`` or ``C`` is not divisible by ``group``.
    """
    if input.numel() != N * C * HxW or group <= 0 or C % group:
        raise RuntimeError(
            f"native_group_norm: expected an input of N * C * HxW = {N} * {C} * {HxW} elements with C divisible "
            f"by group={group}, got input of size {list(input.shape)}"
        )
    mean, var = _mean_and_var(input.reshape(N, group, -1), (2,))
    rstd = (var + eps).rsqrt()
    out = ((input.reshape(N, group, -1) - mean) * rstd).reshape(input.shape)
    return _affine(out, weight, bias), mean.reshape(N, group), rstd.reshape(N, group)


def native_norm(input: Tensor, p=2, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """The ``p``-norm of ``input`` (all elements, or over ``dim``), as ``linalg.vector_norm``
    (``p=None`` is 2). torch runs it on sparse and CUDA tensors only; here on every device."""
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002 - ATen's name
    """The ``pow``-norm of ``v`` over every dim except ``dim``, keeping dims (weight norm's
    ``g``); over all of ``v`` (a 0-d tensor) for ``dim=-1``."""
    if dim == -1:
        return vector_norm(v, pow)
    return vector_norm(v, pow, tuple(d for d in range(v.ndim) if d != dim), keepdim=True)
