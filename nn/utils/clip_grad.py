"""Gradient clipping: by total norm and by value, in place, as ``torch.nn.utils.clip_grad``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import tensor
from tensor import Tensor
from tensor._dtype import HALF_FLOATS

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_", "clip_grad_norm"]


def _grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of the norms of ``tensors`` (the norm of all of them as one vector):
    ``inf`` gives the largest absolute value, ``-inf`` the smallest, 0 the number of nonzeros.

    As torch: each tensor's norm is real (complex tensors too) and in its dtype, the total in the
    promoted dtype of those norms; float16/bfloat16 norms accumulate in float32, so a total above
    256 neither overflows nor one below 1e-4 underflows. Departures: for 0, torch takes the 0-norm
    of the per-tensor 0-norms, which counts the tensors that have a nonzero element; this counts the
    elements, as the concatenated vector's 0-norm is. For ``±inf``, empty tensors are skipped
    (torch raises).

    Raises:
        RuntimeError: if the norm is nan or inf and ``error_if_nonfinite``.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor.tensor(0.0)
    with tensor.no_grad():
        if norm_type == 0:
            counts = [(t != 0).sum().to(t.dtype.to_real()) for t in tensors]
            total = tensor.stack(counts).sum()
        else:
            if math.isinf(norm_type):
                real_dtype = tensors[0].dtype.to_real()
                tensors = [t for t in tensors if t.numel()] or [tensors[0].new_zeros(1, dtype=real_dtype)]
            device = tensors[0].device
            norms = tensor.stack([_norm(t, norm_type).to(device) for t in tensors])
            total = _norm(norms, norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
            "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`"
        )
    return total


def _norm(t: Tensor, norm_type: float) -> Tensor:
    """The vector norm of ``t`` in its real dtype, summed in float32 for float16/bfloat16 (as torch)."""
    if t.dtype in HALF_FLOATS:
        return tensor.linalg.vector_norm(t, norm_type, dtype=tensor.float32).to(t.dtype)
    return tensor.linalg.vector_norm(t, norm_type)


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their total ``norm_type``-norm is at
    most ``max_norm``; return the total norm before clipping (see ``get_total_norm``).

    Raises:
        RuntimeError: if the total norm is nan or inf and ``error_if_nonfinite``.
    """
    grads = _grads(parameters)
    if not grads:
        return tensor.tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    _scale_(grads, max_norm, total)
    return total


def _scale_(grads: list[Tensor], max_norm: float, total_norm: Tensor) -> None:
    with tensor.no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grads_with_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale the gradients of ``parameters`` in place by ``max_norm / (total_norm + 1e-6)``, at
    most 1 (the second half of ``clip_grad_norm_``, given a precomputed total norm)."""
    _scale_(_grads(parameters), max_norm, total_norm)


def clip_grad_norm(parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_`` (warns, as PyTorch does)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with tensor.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
