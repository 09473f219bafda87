"""Gradient clipping: by total norm and by value, in place, as ``torch.nn.utils.clip_grad``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

import tensor
from tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_", "clip_grad_norm"]


def _grads(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated into one vector):
    ``inf`` gives the largest absolute value, ``-inf`` the smallest, 0 the number of nonzeros.
    Departure: for 0, torch takes the 0-norm of the per-tensor 0-norms, which counts the tensors
    that have a nonzero element; this counts the elements, as the concatenated vector's 0-norm is.

    Raises:
        RuntimeError: if the norm is nan or inf and ``error_if_nonfinite``.
    """
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor.tensor(0.0)
    dtype = tensors[0].dtype
    with tensor.no_grad():
        if math.isinf(norm_type):
            total = _extreme_abs(tensors, norm_type > 0).to(dtype)
        elif norm_type == 0:
            # The number of nonzero elements: the 0-"norm" of all the tensors as one vector.
            total = tensor.stack([(t != 0).sum().to(dtype) for t in tensors]).sum()
        else:
            powers = [(t.abs() ** norm_type).sum().to(dtype) for t in tensors]
            total = tensor.stack(powers).sum() ** (1.0 / norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it "
            "cannot be clipped. To disable this error and scale the gradients by the non-finite norm "
            "anyway, set `error_if_nonfinite=False`"
        )
    return total


def _extreme_abs(tensors: list[Tensor], largest: bool) -> Tensor:
    """The largest (``inf``-norm) or smallest (``-inf``) absolute value in ``tensors``; empty
    tensors are skipped, and there being none gives 0."""
    reduce = Tensor.amax if largest else Tensor.amin
    extremes = [reduce(t.abs()).to(tensors[0].dtype) for t in tensors if t.numel()]
    return reduce(tensor.stack(extremes)) if extremes else tensors[0].new_zeros(())


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
