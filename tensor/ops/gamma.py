"""Special functions numpy lacks: ``lgamma``, ``digamma``, ``polygamma`` and ``erfinv``.

Each kernel is a vectorised float64 formula accurate to about 1e-14 (checked against torch and
``math.lgamma`` in the tests); lower precisions are computed in float64 and rounded. The
derivatives chain: lgamma' = digamma, digamma' = polygamma(1), polygamma(n)' = polygamma(n+1).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from . import unary
from .registry import defop
from .special import _as_float, _erf_parts

__all__ = ["lgamma", "digamma", "polygamma", "erfinv", "mvlgamma"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# Bernoulli numbers B_2 .. B_16, for the asymptotic series of digamma and the Hurwitz zeta function.
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_SHIFT = 10  # recurrence steps before the asymptotic series (its terms are then < 1e-15)


def _float64(xp, a):
    return a.astype(xp.float64) if a.dtype != xp.float64 else a


def _lgamma_positive(xp, x):
    # lgamma(x) = lgamma(x + N) - sum_k log(x + k), then Stirling's series at x + N >= 10.
    shift = xp.zeros_like(x)
    for k in range(_SHIFT):
        shift += xp.log(x + k)
    y = x + _SHIFT
    inv2 = (1.0 / y) ** 2
    series = xp.zeros_like(y)
    for j in range(len(_BERNOULLI) - 1, -1, -1):
        series = series * inv2 + _BERNOULLI[j] / ((2 * j + 2) * (2 * j + 1))
    return (y - 0.5) * xp.log(y) - y + _HALF_LOG_2PI + series / y - shift


@defop("lgamma", saves=(0,))
def _lgamma(xp, a):
    x = _float64(xp, a)
    with_reflection = x < 0.5
    safe = xp.where(with_reflection, 1.0 - x, x)
    with np.errstate(all="ignore"):  # numpy's warnings for inf/nan inputs (CuPy does not warn)
        out = _lgamma_positive(xp, safe)
    # Reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); poles at 0, -1, -2, ...
    with np.errstate(all="ignore"):
        sin = xp.abs(xp.sin(math.pi * (x - xp.floor(x))))
    reflected = xp.where(sin == 0, xp.inf, math.log(math.pi) - xp.log(xp.where(sin == 0, 1.0, sin)) - out)
    out = xp.where(with_reflection, reflected, out)
    return xp.where(xp.isinf(x), xp.inf, out).astype(a.dtype)


_lgamma.derivative(lambda node, g: (g * digamma(node.saved[0]),))


def _digamma_kernel(xp, x):
    reflect = x < 0.5
    y = xp.where(reflect, 1.0 - x, x)
    shift = xp.zeros_like(y)
    for k in range(_SHIFT):
        shift += 1.0 / (y + k)
    y = y + _SHIFT
    inv2 = (1.0 / y) ** 2
    series = xp.zeros_like(y)
    for j in range(len(_BERNOULLI) - 1, -1, -1):
        series = series * inv2 + _BERNOULLI[j] / (2 * (j + 1))
    out = xp.log(y) - 0.5 / y - series * inv2 - shift
    with np.errstate(all="ignore"):
        # Reflection: psi(x) = psi(1 - x) - pi / tan(pi x); psi(+-0) = -+inf, other poles are NaN.
        reflected = out - math.pi / xp.tan(math.pi * x)
    out = xp.where(reflect, reflected, out)
    pole = (x <= 0) & (x == xp.floor(x))
    return xp.where(pole, xp.where(x == 0, -xp.copysign(xp.inf, x), xp.nan), out)


@defop("digamma", saves=(0,))
def _digamma(xp, a):
    return _digamma_kernel(xp, _float64(xp, a)).astype(a.dtype)


_digamma.derivative(lambda node, g: (g * polygamma(1, node.saved[0]),))


def _hurwitz_zeta(xp, s, x):
    """``sum_k (x + k) ** -s`` for an integer ``s >= 2`` and ``x >= 0``, by Euler-Maclaurin after a
    shift."""
    total = xp.zeros_like(x)
    for k in range(_SHIFT):  # (the caller masks the poles, where a term is inf)
        total += (x + k) ** -s
    y = x + _SHIFT
    total += y ** (1 - s) / (s - 1) + 0.5 * y**-s
    rising, power = float(s), y ** (-s - 1)
    for j, b in enumerate(_BERNOULLI, start=1):
        total += b / math.factorial(2 * j) * rising * power
        rising *= (s + 2 * j - 1) * (s + 2 * j)
        power = power / (y * y)
    return total


def _cot_derivative_coefficients(n: int) -> list[float]:
    """The coefficients (lowest first) of the polynomial ``P`` with ``d^n/du^n cot(u) = P(cot u)``
    (``d/du cot = -(1 + cot^2)``)."""
    coeffs = [0.0, 1.0]
    for _ in range(n):
        derived = [k * c for k, c in enumerate(coeffs)][1:]
        coeffs = [0.0] * (len(derived) + 2)
        for k, c in enumerate(derived):
            coeffs[k] -= c
            coeffs[k + 2] -= c
    return coeffs


def _polygamma_positive_order(xp, n, x):
    """``polygamma(n, x)`` for ``n >= 1`` off the poles: ``(-1)^(n+1) n! zeta(n+1, x)``, reflected
    for ``x < 0`` (``psi_n(x) = (-1)^n psi_n(1 - x) - pi^(n+1) P_n(cot(pi x))``), which keeps the
    shift of the series fixed however negative ``x`` is."""
    reflect = x < 0
    y = xp.where(reflect, 1.0 - x, x)
    out = (-1) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(xp, n + 1, y)
    cot = 1.0 / xp.tan(math.pi * (x - xp.floor(x)))  # cot has period pi: reduce first (exact)
    correction = _polynomial(xp, _cot_derivative_coefficients(n)[::-1], cot) * math.pi ** (n + 1)
    return xp.where(reflect, (-1) ** n * out - correction, out)


@defop("polygamma", saves=(0,))
def _polygamma(xp, a, n):
    x = _float64(xp, a)
    if n == 0:
        return _digamma_kernel(xp, x).astype(a.dtype)
    with np.errstate(all="ignore"):
        out = _polygamma_positive_order(xp, n, x)
    pole = (x <= 0) & (x == xp.floor(x)) & (x > -xp.inf)  # -inf has no limit: NaN
    return xp.where(pole, -xp.inf if n % 2 == 0 else xp.inf, out).astype(a.dtype)  # PyTorch's signs


_polygamma.derivative(lambda node, g: (g * polygamma(node.params[0] + 1, node.saved[0]),))


# erfinv: Giles' single-precision approximation ("Approximating the erfinv function", 2010) as
# the start, then Newton steps on erf (|y| < 0.5) or erfc (the tails, where 1 - |y| is exact).
_GILES_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_GILES_TAIL = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _polynomial(xp, coeffs, w):
    p = xp.full_like(w, coeffs[0])
    for c in coeffs[1:]:
        p = p * w + c
    return p


@defop("erfinv", saves_output=True)
def _erfinv(xp, a):
    y = _float64(xp, a)
    ay = xp.abs(y)
    inside = ay < 1
    safe = xp.where(inside, ay, 0.0)
    w = -xp.log((1.0 - safe) * (1.0 + safe))
    central = _polynomial(xp, _GILES_CENTRAL, w - 2.5)
    tail = _polynomial(xp, _GILES_TAIL, xp.sqrt(xp.maximum(w, 5.0)) - 3.0)
    x = xp.where(w < 5.0, central, tail) * safe
    small = safe < 0.5
    log_target = xp.log(1.0 - safe)
    for _ in range(4):
        # Newton on erf(x) = y near 0, on log(erfc(x)) = log(1 - y) in the tails (nearly linear there).
        complement = _erf_parts(xp, x, True)
        with np.errstate(all="ignore"):
            step = xp.where(small, (safe - _erf_parts(xp, x, False)), (log_target - xp.log(complement)) * -complement)
        x = x + step * xp.exp(x * x) / _TWO_OVER_SQRT_PI
    out = xp.copysign(x, y)
    out = xp.where(ay == 1, xp.copysign(xp.inf, y), out)
    return xp.where((ay > 1) | xp.isnan(y), xp.nan, out).astype(a.dtype)


_erfinv.derivative(lambda node, g: (g * (math.sqrt(math.pi) / 2) * unary.exp(node.output * node.output),))


def lgamma(input):
    """``log(|Gamma(x)|)``, elementwise (inf at the poles 0, -1, -2, ...)."""
    return _dispatch.apply_unary(_lgamma, _as_float(input, "lgamma"))


def digamma(input):
    """The digamma function ``d/dx lgamma(x)`` (-inf at 0, NaN at negative integers)."""
    return _dispatch.apply_unary(_digamma, _as_float(input, "digamma"))


def polygamma(n: int, input):
    """The ``n``-th derivative of ``digamma``.

    Raises:
        RuntimeError: for a negative ``n``.
    """
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n (got {n}).")
    return _dispatch.apply_unary(_polygamma, _as_float(input, "polygamma"), (n,))


def erfinv(input):
    """The inverse error function on (-1, 1) (+-inf at +-1, NaN outside)."""
    return _dispatch.apply_unary(_erfinv, _as_float(input, "erfinv"))


def mvlgamma(input, p: int):
    """The multivariate log-gamma function of dimension ``p`` (like PyTorch 2.13, no domain check:
    below ``(p - 1) / 2`` it sums the log-gammas of the terms as they are).

    Raises:
        RuntimeError: for ``p < 1``.
    """
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1 (got {p})")
    x = _as_float(input, "mvlgamma")
    terms = [lgamma(x - j / 2) for j in range(p)]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total + p * (p - 1) / 4 * math.log(math.pi)
