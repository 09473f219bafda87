"""Scans along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp."""

from __future__ import annotations

from .. import _backend, _dispatch
from . import elementwise
from .indexing import gather
from .reduction import _accumulator_dtype, amax, values_indices, wrap_dim
from .registry import defop

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


def _reverse_cumsum(g, dim):
    return g.flip(dim).cumsum(dim).flip(dim)


@defop("cumsum")
def _cumsum(xp, a, dim, np_dtype):
    return _backend.accumulate(xp.cumsum, a, axis=dim, dtype=np_dtype)


@_cumsum.derivative
def _(node, g):
    return (_reverse_cumsum(g, node.params[0]),)


def _scan_input(input, dim, dtype):
    dim = wrap_dim(dim, input.ndim)
    return (input.reshape(1) if input.ndim == 0 else input), dim, _accumulator_dtype(input, dtype)


def _restore(out, input):
    """Undo ``_scan_input``'s 0-d to 1-d reshape."""
    return out.reshape(()) if input.ndim == 0 else out


def cumsum(input, dim: int, *, dtype=None):
    """Cumulative sum along ``dim`` (integers and bool accumulate in int64, as in PyTorch)."""
    flat, dim, np_dtype = _scan_input(input, dim, dtype)
    return _restore(_dispatch.apply_unary(_cumsum, flat, (dim, np_dtype)), input)


@defop("cumprod", saves=(0,), saves_output=True)
def _cumprod(xp, a, dim, np_dtype):
    return xp.cumprod(a, axis=dim, dtype=np_dtype)


@_cumprod.derivative
def _(node, g):
    (a,) = node.saved
    dim = node.params[0]
    if not bool((a == 0).any()):
        return (_reverse_cumsum(g * node.output, dim) / a,)
    # With zeros out / a is undefined: d out_k / d a_i is the product of a_j (j <= k, j != i),
    # the cumprod of a with a_i replaced by 1, for every i (an n x n scan).
    moved = a.movedim(dim, -1)
    n = moved.shape[-1]
    eye = _dispatch.make(a._device.backend.xp.eye(n, dtype=bool), a._device)
    others = elementwise.where(eye, 1.0, moved.unsqueeze(-2).expand(moved.shape[:-1] + (n, n)))
    others = others.cumprod(-1) * eye.long().cumsum(-1).to(a.dtype)  # only k >= i contributes
    grad = (others * g.movedim(dim, -1).unsqueeze(-2)).sum(-1)
    return (grad.movedim(-1, dim),)


def cumprod(input, dim: int, *, dtype=None):
    """Cumulative product along ``dim``; the gradient is exact also where the input has zeros."""
    flat, dim, np_dtype = _scan_input(input, dim, dtype)
    return _restore(_dispatch.apply_unary(_cumprod, flat, (dim, np_dtype)), input)


@defop("cumextremum_indices", differentiable=False)
def _cumextremum_indices(xp, a, dim, largest):
    moved = xp.moveaxis(a, dim, -1)
    running = _backend.running_scan(xp, "maximum" if largest else "minimum", moved)
    hit = moved == running
    if moved.dtype.kind == "f":  # once a NaN is seen it is the running value
        nan = xp.isnan(moved)
        seen = _backend.running_scan(xp, "logical_or", nan)
        hit = xp.where(seen, nan, hit)
    # The running extremum's index is the last position that reached it (ties: the last one).
    index = _backend.running_scan(xp, "maximum", xp.where(hit, xp.arange(moved.shape[-1]), 0))
    return xp.ascontiguousarray(xp.moveaxis(index, -1, dim))


def _cumextremum(input, dim, largest):
    flat, dim, _ = _scan_input(input, dim, None)
    indices = _dispatch.apply_unary(_cumextremum_indices, flat, (dim, largest))
    values = gather(flat, dim, indices)
    return values_indices(_restore(values, input), _restore(indices, input))


def cummax(input, dim: int):
    """Running maximum along ``dim`` and the index where it was reached: ``(values, indices)``."""
    return _cumextremum(input, dim, True)


def cummin(input, dim: int):
    """Running minimum along ``dim`` and the index where it was reached: ``(values, indices)``."""
    return _cumextremum(input, dim, False)


def logcumsumexp(input, dim: int):
    """``log(cumsum(exp(input), dim))``, shifted by the maximum so that it does not overflow."""
    flat, dim, _ = _scan_input(input, dim, None)
    if flat.numel() == 0:
        return input.clone()
    shift = amax(flat, dim, keepdim=True).detach()
    shift = shift.masked_fill(shift.isinf(), 0)
    return _restore((flat - shift).exp().cumsum(dim).log() + shift, input)
