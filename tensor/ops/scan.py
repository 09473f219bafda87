"""Scans along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp."""

from __future__ import annotations

import numpy as np

from .. import _backend, _dispatch, _dtype
from .._typeinfo import finfo
from . import comparison, derivative_helpers
from .indexing import gather
from .reduction import _accumulator_dtype, values_indices, wrap_dim
from .registry import defop

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


def _reverse_cumsum(g, dim):
    return g.flip(dim).cumsum(dim).flip(dim)


def _scan(xp, scan, a, dim, np_dtype):
    """``scan(a, axis=dim, dtype=np_dtype)``; a float16 result accumulates in float32 and is
    rounded once at the end, as PyTorch's CPU kernels do (float16 stops counting at 2048 + 1)."""
    if (a.dtype if np_dtype is None else np_dtype) == xp.float16:
        return scan(a, axis=dim, dtype=xp.float32).astype(xp.float16)
    return _backend.accumulate(scan, a, axis=dim, dtype=np_dtype)


@defop("cumsum")
def _cumsum(xp, a, dim, np_dtype):
    return _scan(xp, xp.cumsum, a, dim, np_dtype)


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
    return _scan(xp, xp.cumprod, a, dim, np_dtype)


@_cumprod.derivative
def _(node, g):
    (a,) = node.saved
    conj = derivative_helpers.conj_if_complex  # a holomorphic op's derivative is conjugated (PyTorch's convention)
    return (_cumprod_grad(g, conj(a), conj(node.output), node.params[0]),)


def _cumprod_grad(g, a, out, dim):
    if not bool((a == 0).any()):
        return _reverse_cumsum(g * out, dim) / a
    # With zeros out / a is undefined: d out_k / d a_i is the product of a_j (j <= k, j != i),
    # the cumprod of a with a_i replaced by 1, for every i (an n x n scan).
    moved = a.movedim(dim, -1)
    n = moved.shape[-1]
    eye = _dispatch.make(a._device.backend.xp.eye(n, dtype=bool), a._device)
    others = comparison.where(eye, 1.0, moved.unsqueeze(-2).expand(moved.shape[:-1] + (n, n)))
    others = others.cumprod(-1) * eye.long().cumsum(-1).to(a.dtype)  # only k >= i contributes
    grad = (others * g.movedim(dim, -1).unsqueeze(-2)).sum(-1)
    return grad.movedim(-1, dim)


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
    if input.is_complex():  # complex numbers have no order, as in PyTorch
        raise NotImplementedError(f"\"{'cummax' if largest else 'cummin'}_cpu\" not implemented for complex input")
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


@defop("logcumsumexp", saves=(0,), saves_output=True)
def _logcumsumexp(xp, a, dim):
    wide = a.astype(xp.float32) if a.dtype == xp.float16 else _backend.widen(a)
    moved = xp.moveaxis(wide, dim, -1)
    with np.errstate(invalid="ignore"):  # NaN inputs, and -inf - -inf in the complex case (CuPy does not warn)
        if moved.dtype.kind == "c":
            out = _complex_running_logaddexp(xp, moved)
        else:
            out = _backend.running_scan(xp, "logaddexp", moved)
    return xp.ascontiguousarray(xp.moveaxis(out, -1, dim)).astype(a.dtype, copy=False)


@_logcumsumexp.derivative
def _(node, g):
    # d out_k / d a_i = exp(a_i - out_k) for i <= k, so the gradient exp(a_i) * sum_{k>=i} g_k exp(-out_k)
    # is a reversed logcumsumexp of log(g) - out: PyTorch's formula. A real g has its positive
    # and negative parts summed apart (the log of a negative g would be complex).
    (a,) = node.saved
    dim, out = node.params[0], node.output
    if a.dtype.is_complex:
        return (_exp_scaled_reverse_sum(g.conj().log(), a, out, dim).conj(),)
    # The lowest float, not -inf, stands for log(0): -inf - -inf would make NaN in double backward.
    lowest = finfo(g.dtype).min
    with np.errstate(divide="ignore", over="ignore"):  # log(0) where g is 0; lowest - out (CuPy does not warn)
        log_abs = g.abs().log()
        positive = _exp_scaled_reverse_sum(comparison.where(g > 0, log_abs, lowest), a, out, dim)
        negative = _exp_scaled_reverse_sum(comparison.where(g < 0, log_abs, lowest), a, out, dim)
    return (positive - negative,)


def _exp_scaled_reverse_sum(log_g, a, out, dim):
    """``exp(a_i) * sum_{k>=i} exp(log_g_k - out_k)``, summed in log space."""
    return (logcumsumexp((log_g - out).flip(dim), dim).flip(dim) + a).exp()


def _complex_logaddexp(xp, x, y):
    """``log(exp(x) + exp(y))`` of complex arrays, factoring out the term with the larger real part.

    Where both real parts are the same infinity, their difference would be NaN: that term is the result.
    """
    swap = x.real < y.real
    big, small = xp.where(swap, y, x), xp.where(swap, x, y)
    out = big + xp.log1p(xp.exp(small - big))
    return xp.where(xp.isinf(big.real) & (big.real == small.real), big, out)


def _complex_running_logaddexp(xp, a):
    """``_complex_logaddexp`` accumulated along the last axis: a Hillis-Steele scan of log2(n)
    elementwise steps (numpy's ``ufunc.accumulate`` has no complex logaddexp)."""
    out = a.copy()
    shift = 1
    while shift < a.shape[-1]:
        out[..., shift:] = _complex_logaddexp(xp, out[..., shift:], out[..., :-shift])
        shift *= 2
    return out


def logcumsumexp(input, dim: int):
    """``log(cumsum(exp(input), dim))``, as a running log-add-exp: no value underflows against a
    larger one elsewhere along ``dim``, and a NaN spreads only forwards. Complex inputs work.

    Raises:
        NotImplementedError: for integer and bool inputs, as in PyTorch.
    """
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(
            f"\"logcumsumexp\" not implemented for '{_dtype.scalar_type_name(input.dtype)}'")
    flat, dim, _ = _scan_input(input, dim, None)
    return _restore(_dispatch.apply_unary(_logcumsumexp, flat, (dim,)), input)
