"""Numerically stable softmax and log_softmax, composed from primitives."""

from __future__ import annotations

from .. import _dtype
from .reduction import amax, wrap_dim

__all__ = ["softmax", "log_softmax"]


def _shifted(input, dim, dtype):
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point:
        input = input.to(_dtype.get_default_dtype())
    d = wrap_dim(dim, input.ndim)
    if input.numel() == 0:  # nothing to shift (and no max of an empty dim)
        return input, d
    # Subtracting the (constant) max keeps exp() from overflowing; it cancels in the gradient.
    shift = amax(input, d, keepdim=True).detach()
    return input - shift.masked_fill(shift.isinf(), 0), d


def softmax(input, dim: int, dtype=None):
    """``exp(x) / sum(exp(x), dim)``, stable for large inputs."""
    shifted, d = _shifted(input, dim, dtype)
    e = shifted.exp()
    return e / e.sum(d, keepdim=True)


def log_softmax(input, dim: int, dtype=None):
    """``x - logsumexp(x, dim)``, stable for large inputs."""
    shifted, d = _shifted(input, dim, dtype)
    return shifted - shifted.exp().sum(d, keepdim=True).log()
