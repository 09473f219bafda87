"""Elementwise functions whose derivative must hold at the edges of their domain, so they are
primitives with their own rule rather than compositions: ``sinc`` (a series near 0, where the
quotient rule cancels), ``logit``, ``entr``, ``xlogy`` and ``xlog1py`` (the gradient where the
composition's masks would zero it), with PyTorch's values there.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch, _dtype
from .comparison import where
from .registry import defop
from .special import _as_float
from .unary import _unary

__all__ = ["sinc", "logit", "entr", "xlogy", "xlog1py"]


def float_operands(input, other):
    """``input`` and ``other`` (one may be a Python number) as tensors of their promoted dtype,
    the default float dtype for integers and bool: the operands of a floating binary function."""
    target = _dtype.result_type_of(input, other)
    if not (target.is_floating_point or target.is_complex):
        target = _dtype.get_default_dtype()
    device = input._device if _dispatch.is_tensor(input) else other._device
    return tuple(t.to(target) if _dispatch.is_tensor(t) else _dispatch.scalar_tensor(t, target, device)
                 for t in (input, other))


# d/du (sin u / u) = sum_k (-1)^k 2k u^(2k-1) / (2k+1)!, k = 1..6: within float64 rounding for
# |u| < 0.5, where the quotient rule loses eps/u^2 of its value to cancellation.
_SINC_SERIES = [(-1) ** k * 2 * k / math.factorial(2 * k + 1) for k in range(1, 7)]
_SINC_SERIES_BELOW = 0.5


def _sinc_derivative(node, g):
    (x,) = node.saved
    u = x * math.pi
    small = u.abs() < _SINC_SERIES_BELOW
    u2 = u * u
    series = u.new_zeros(()) + _SINC_SERIES[-1]
    for c in reversed(_SINC_SERIES[:-1]):
        series = series * u2 + c
    safe = where(small, 1.0, u)
    direct = (safe * safe.cos() - safe.sin()) / (safe * safe)
    return (g * math.pi * where(small, series * u, direct),)


sinc = _unary("sinc", lambda xp, a: xp.sinc(a), _sinc_derivative, saves=(0,))
sinc.__doc__ = "The normalised sinc ``sin(pi x) / (pi x)``, 1 at 0 (integers and bool in the default float dtype)."


@defop("logit", saves=(0,))
def _logit(xp, a, eps):
    p = a if eps is None else xp.clip(a, eps, 1 - eps)
    with np.errstate(all="ignore"):  # log(0), 0/0 and logs of negatives give inf/nan as PyTorch (CuPy does not warn)
        return xp.log(p / (1 - p))


@_logit.derivative
def _(node, g):
    # PyTorch's rule: g / (x (1 - x)) inside the domain; outside it NaN, or 0 where eps clamps.
    (x,) = node.saved
    (eps,) = node.params
    low, high = (0.0, 1.0) if eps is None else (eps, 1 - eps)
    outside = (x < low) | (x > high)
    return (where(outside, math.nan if eps is None else 0.0, g / (x * (1 - x))),)


def logit(input, eps: float | None = None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given
    (integer and bool inputs in the default float dtype). Its gradient is NaN outside [0, 1]
    without ``eps``, 0 where ``eps`` clamps."""
    return _dispatch.apply_unary(_logit, _as_float(input, "logit"), (eps,))


@defop("entr", saves=(0,))
def _entr(xp, a):
    with np.errstate(all="ignore"):  # nan inputs stay nan
        inner = -a * xp.log(xp.where(a > 0, a, 1))
    return xp.where(a < 0, -xp.inf, xp.where(a == 0, 0, inner)).astype(a.dtype, copy=False)  # +0 at 0


_entr.derivative(lambda node, g: (g * -(1 + node.saved[0].log()),))  # PyTorch's: NaN below 0, inf at 0


def entr(input):
    """``-x log(x)`` for x > 0, 0 at 0 and -inf for x < 0 (integer and bool inputs in the default
    float dtype)."""
    return _dispatch.apply_unary(_entr, _as_float(input, "entr"))


def _xlog_kernel(log):
    """The kernel ``x * log(y)``, 0 where ``x`` is 0 and ``y`` not NaN (``log`` is log or log1p)."""

    def kernel(xp, x, y):
        zero = (x == 0) & ~xp.isnan(y)
        with np.errstate(all="ignore"):
            return xp.where(zero, 0, x * log(xp, xp.where(zero, 1, y)))

    return kernel


def _xlog_derivative(log, pole: float):
    """PyTorch's rule for ``x * log(y + pole + 1)``: ``g log(...)`` for ``x`` (0 where ``x`` is 0 and
    ``y <= pole``) and ``g x / (y - pole)`` for ``y``."""

    def derivative(node, g):
        x, y = node.saved
        needs_x, needs_y = node.needs_input_grad
        gx = where((x == 0) & (y <= pole), 0.0, g * log(y)) if needs_x else None
        gy = g * x / (y - pole) if needs_y else None
        return gx, gy

    return derivative


_xlogy = defop("xlogy", saves=(0, 1))(_xlog_kernel(lambda xp, y: xp.log(y)))
_xlogy.derivative(_xlog_derivative(lambda y: y.log(), 0.0))
_xlog1py = defop("xlog1py", saves=(0, 1))(_xlog_kernel(lambda xp, y: xp.log1p(y)))
_xlog1py.derivative(_xlog_derivative(lambda y: y.log1p(), -1.0))


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be a
    Python number. Its gradient for ``input`` is ``log(other)``, also where ``input`` is 0."""
    x, y = float_operands(input, other)
    return _dispatch.apply(_xlogy, _broadcast(_as_float(x, "xlogy"), y))


def xlog1py(input, other):
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either may be a
    Python number. Its gradient for ``input`` is ``log1p(other)``, also where ``input`` is 0."""
    x, y = float_operands(input, other)
    return _dispatch.apply(_xlog1py, _broadcast(_as_float(x, "xlog1py"), y))


def _broadcast(a, b):
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    return tuple(t if t.shape == shape else t.expand(shape) for t in (a, b))
