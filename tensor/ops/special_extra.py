"""More special functions numpy lacks: the modified Bessel functions ``i0``/``i1`` and the
regularized incomplete gamma functions ``igamma``/``igammac`` (issue 16), and the derivative of a
gamma sample with respect to its concentration (Note [Implicit gamma gradient]).

As in ``gamma.py``, each kernel is a vectorised float64 formula (lower precisions are computed
in float64 and rounded), checked against torch in ``tests/tensor/test_special_extra.py``:

* ``i0`` is numpy's/CuPy's ``i0``; its derivative ``i1`` (numpy has none) is the power series
  ``sum_k (x/2)^(2k+1) / (k! (k+1)!)`` up to ``|x| = 30`` (positive terms: no cancellation),
  Hankel's asymptotic series beyond (its smallest term there is below ``exp(-2|x|)``).
  i0' = i1, i1' = i0 - i1 / x.
* ``igamma(a, x) = P(a, x)``, ``igammac(a, x) = Q(a, x) = 1 - P``: the series of ``P`` for
  ``x < a + 1``, the continued fraction of ``Q`` (modified Lentz) beyond, so that the
  computed one of the two is at most about 1/2 and its complement loses nothing. Both iterate
  only the elements that have not converged (compacted every few steps). As in torch, the
  derivative is taken with respect to ``x`` only: ``dP/dx = x^(a-1) e^(-x) / Gamma(a)``.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch, _dtype
from . import comparison, unary
from .gamma import _digamma_kernel, _float64, _lgamma_positive, lgamma
from .math_extra import xlogy
from .registry import defop

__all__ = ["i0", "igamma", "igammac", "reparameterized_gamma", "standard_gamma_grad"]

_SERIES_LIMIT = 30.0  # |x| up to which the Bessel power series is used
_BESSEL_SERIES_TERMS = 80  # (x/2)^2 = 225 at the limit: the terms are below 1e-17 of the sum by then
_HANKEL_TERMS = 25
_EPS = 1e-16
_TINY = 1e-300
_MAX_ITERATIONS = 20000  # enough for a ~ 1e6 (the series needs about 9 sqrt(a) terms near x = a)
_CHUNK = 16  # iterations between convergence checks (each check is a device sync on a GPU)


def _bessel_i1(xp, x):
    """``I_1(x)`` in float64."""
    ax = xp.abs(x)
    small = xp.minimum(ax, _SERIES_LIMIT)
    quarter = small * small / 4
    term = small / 2
    total = term.copy()
    for k in range(1, _BESSEL_SERIES_TERMS):
        term = term * quarter / (k * (k + 1))
        total = total + term
    large = xp.maximum(ax, _SERIES_LIMIT)
    coefficient, series, power = 1.0, xp.ones_like(large), xp.ones_like(large)
    for k in range(1, _HANKEL_TERMS):  # Hankel's coefficients for order 1: prod (4 - (2j-1)^2) / (j 8)
        coefficient *= -(4.0 - (2 * k - 1) ** 2) / (k * 8)
        power = power / large
        series = series + coefficient * power
    with np.errstate(over="ignore", invalid="ignore"):
        half = xp.exp(large / 2)  # e^x as two halves: finite up to x ~ 1418 before the prefactor
        asymptotic = half * (series / xp.sqrt(2 * np.pi * large)) * half
    return xp.copysign(xp.where(ax <= _SERIES_LIMIT, total, asymptotic), x)


@defop("i0", saves=(0,))
def _i0(xp, a):
    with np.errstate(over="ignore"):  # inf beyond |x| ~ 713, as torch
        return xp.i0(_float64(xp, a)).astype(a.dtype)


_i0.derivative(lambda node, g: (g * i1(node.saved[0]),))


@defop("special_i1", saves=(0,), saves_output=True)
def _i1(xp, a):
    return _bessel_i1(xp, _float64(xp, a)).astype(a.dtype)


@_i1.derivative
def _(node, g):
    (x,) = node.saved
    # I1'(x) = I0(x) - I1(x) / x, and 1/2 at 0
    ratio = comparison.where(x == 0, 0.5, node.output / comparison.where(x == 0, 1.0, x))
    return (g * (i0(x) - ratio),)


def _real(name: str, input):
    """``input``, in the default float dtype if integral.

    Raises:
        NotImplementedError: for a complex input, as torch.
    """
    if input.dtype.is_complex:
        raise NotImplementedError(f"\"{name}\" not implemented for '{input.dtype.name}'")
    return input if input._data.dtype.kind in "fV" else input.to(_dtype.get_default_dtype())


def i0(input):
    """The modified Bessel function of the first kind of order 0, elementwise (integers are
    computed in the default float dtype).

    Raises:
        NotImplementedError: for a complex input, as torch.
    """
    return _dispatch.apply_unary(_i0, _real("i0", input))


def i1(input):
    """The modified Bessel function of the first kind of order 1 (``torch.special.i1``); as ``i0``."""
    return _dispatch.apply_unary(_i1, _real("i1", input))


# ---------------------------------------------------------------- incomplete gamma
def _until_converged(xp, state: dict, step, converged, result):
    """Iterate ``step(state)`` on the 1-D arrays of ``state`` (one element per problem) and
    return ``result(state)`` per element once ``converged(state)`` holds for it. Every
    ``_CHUNK`` steps the converged elements' results are stored and the rest compacted, so each
    element costs about its own number of steps (all elements have taken the same number of
    steps, so ``step`` may keep a shared counter)."""
    count = next(iter(state.values())).shape[0]
    out = xp.empty(count, dtype=xp.result_type(*state.values()))
    index = xp.arange(count)
    for _chunk in range(_MAX_ITERATIONS // _CHUNK):
        if index.shape[0] == 0:
            return out
        for _ in range(_CHUNK):
            step(state)
        done = converged(state)
        out[index[done]] = result(state)[done]
        keep = ~done
        index = index[keep]
        state.update({k: v[keep] for k, v in state.items()})
    out[index] = result(state)  # not converged within the limit: the last iterate
    return out


def _lower_series(xp, a, x):
    """``sum_n x^n / (a (a+1) ... (a+n))``: P(a, x) = that * x^a e^-x / Gamma(a)."""
    state = {"a": a.copy(), "x": x, "term": 1.0 / a, "total": 1.0 / a}

    def step(s):
        s["a"] += 1.0
        s["term"] *= s["x"] / s["a"]
        s["total"] += s["term"]

    return _until_converged(
        xp, state, step, lambda s: xp.abs(s["term"]) < xp.abs(s["total"]) * _EPS, lambda s: s["total"]
    )


def _upper_fraction(xp, a, x):
    """The continued fraction of Q(a, x) = that * x^a e^-x / Gamma(a), by modified Lentz."""
    b = x + 1.0 - a
    state = {"a": a, "b": b, "c": xp.full_like(b, 1.0 / _TINY), "d": 1.0 / b, "h": 1.0 / b, "delta": b}
    steps = [0.0]

    def step(s):
        steps[0] += 1.0
        i = steps[0]
        an = -i * (i - s["a"])
        s["b"] += 2.0
        d = an * s["d"] + s["b"]
        s["d"] = 1.0 / xp.where(xp.abs(d) < _TINY, _TINY, d)
        c = s["b"] + an / s["c"]
        s["c"] = xp.where(xp.abs(c) < _TINY, _TINY, c)
        s["delta"] = s["d"] * s["c"]
        s["h"] *= s["delta"]

    return _until_converged(xp, state, step, lambda s: xp.abs(s["delta"] - 1.0) < _EPS, lambda s: s["h"])


def _incomplete_gamma(xp, a, x, upper: bool):
    """P(a, x), or Q(a, x) with ``upper``, with torch's values at the edges."""
    a, x = xp.broadcast_arrays(_float64(xp, xp.asarray(a)), _float64(xp, xp.asarray(x)))
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    with np.errstate(all="ignore"):
        invalid = xp.isnan(a) | xp.isnan(x) | (a < 0) | (x < 0) | ((a == 0) & (x == 0))
        invalid |= xp.isinf(a) & xp.isinf(x)
        regular = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
        by_series = regular & (x < a + 1.0)
        p, q = xp.zeros_like(a), xp.zeros_like(a)
        for mask, method, direct, other in ((by_series, _lower_series, p, q),
                                            (regular & ~by_series, _upper_fraction, q, p)):  # fmt: skip
            picked = xp.nonzero(mask)[0]
            sa, sx = a[picked], x[picked]
            prefactor = xp.exp(sa * xp.log(sx) - sx - _lgamma_positive(xp, sa))
            value = method(xp, sa, sx) * prefactor
            direct[picked], other[picked] = value, 1.0 - value
        out = q if upper else p
        # the edges: P = 1 at a = 0 or x = inf, P = 0 at x = 0 or a = inf
        one_p = ((a == 0) | xp.isinf(x)) & ~invalid
        zero_p = ((x == 0) | xp.isinf(a)) & ~invalid & ~one_p
        out = xp.where(one_p, 0.0 if upper else 1.0, out)
        out = xp.where(zero_p, 1.0 if upper else 0.0, out)
    return xp.where(invalid, xp.nan, out).reshape(shape)


@defop("igamma", saves=(0, 1))
def _igamma(xp, a, x):
    return _incomplete_gamma(xp, a, x, False).astype(a.dtype)


@defop("igammac", saves=(0, 1))
def _igammac(xp, a, x):
    return _incomplete_gamma(xp, a, x, True).astype(a.dtype)


def _density(a, x):
    """``x^(a-1) e^-x / Gamma(a)``: the derivative of P(a, x) with respect to ``x``."""
    return unary.exp(xlogy(a - 1, x) - x - lgamma(a))


def _incomplete_gamma_derivative(name: str, sign: float):
    def derivative(node, g):
        a, x = node.saved
        needs_a, needs_x = node.needs_input_grad
        if needs_a:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        return None, (g * _density(a, x) * sign if needs_x else None)

    return derivative


_igamma.derivative(_incomplete_gamma_derivative("igamma", 1.0))
_igammac.derivative(_incomplete_gamma_derivative("igammac", -1.0))


def _check_floating(name: str, input, other) -> None:
    for t in (input, other):
        if _dispatch.is_tensor(t) and t._data.dtype.kind not in "fV":
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{t.dtype.name}'")


def igamma(input, other):
    """The regularized lower incomplete gamma function ``P(input, other)`` (``torch.igamma``,
    ``torch.special.gammainc``); broadcasting. NaN where an argument is negative or NaN.
    Differentiable with respect to ``other`` only, as in torch.

    Raises:
        NotImplementedError: for integer or bool tensors, as torch.
        NotImplementedError: in backward, when ``input`` requires grad (as torch).
    """
    _check_floating("igamma", input, other)
    return _dispatch.apply_binary(_igamma, input, other)


def igammac(input, other):
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P(input, other)``
    (``torch.igammac``, ``torch.special.gammaincc``). Raises as ``igamma``."""
    _check_floating("igammac", input, other)
    return _dispatch.apply_binary(_igammac, input, other)


# ---------------------------------------------------------------- gamma samples
# Note [Implicit gamma gradient]
#     A sample x of Gamma(a, 1) is a function of a with its quantile u = P(a, x) held fixed, so
#     dx/da = -(dP/da) / (dP/dx) (implicit reparameterisation, Figurnov et al. 2018), and
#     dP/dx = x^(a-1) e^-x / Gamma(a) = pref / x with pref = x^a e^-x / Gamma(a). The prefactor
#     cancels, so nothing underflows for the tiny samples of a small a:
#     * x < a + 1: P = pref (1 + S) / a with S = sum_n>=1 x^n / ((a+1)...(a+n)), and
#       dx/da = -(x / a) ((log x - psi(a+1)) (1 + S) + dS/da), dS/da = -sum_n s_n H_n with
#       H_n = sum_k<=n 1/(a+k): a series of terms of one sign, summed with S;
#     * beyond: Q = pref h with h Q's continued fraction, dx/da = x ((log x - psi(a)) h + dh/da),
#       dh/da by a complex step (Im h(a + i eps) / eps, exact to rounding, no difference taken).
#     torch's ``_standard_gamma_grad`` uses fitted approximations instead (about 1e-3 relative in
#     places); these are float64 series, checked against finite differences of ``igamma``.
_COMPLEX_STEP = 1e-20


def _lower_series_derivative(xp, a, x):
    """``dx/da`` for the elements with ``x < a + 1`` (Note [Implicit gamma gradient])."""
    state = {"k": a.copy(), "x": x, "term": xp.ones_like(a), "s": xp.zeros_like(a), "harmonic": xp.zeros_like(a),
             "ds": xp.zeros_like(a), "coefficient": xp.log(x) - _digamma_kernel(xp, a + 1.0), "scale": -x / a}

    def step(s):
        s["k"] += 1.0
        s["term"] *= s["x"] / s["k"]
        s["harmonic"] += 1.0 / s["k"]
        s["s"] += s["term"]
        s["ds"] -= s["term"] * s["harmonic"]

    return _until_converged(
        xp, state, step, lambda s: s["term"] * (1.0 + s["harmonic"]) < (1.0 + s["s"]) * _EPS,
        lambda s: s["scale"] * (s["coefficient"] * (1.0 + s["s"]) + s["ds"]),
    )


def _upper_fraction_derivative(xp, a, x):
    """``dx/da`` for the elements with ``x >= a + 1`` (Note [Implicit gamma gradient])."""
    stepped = _upper_fraction(xp, a + 1j * _COMPLEX_STEP, x.astype(complex))
    h, dh = stepped.real, stepped.imag / _COMPLEX_STEP
    return x * ((xp.log(x) - _digamma_kernel(xp, a)) * h + dh)


@defop("standard_gamma_grad", differentiable=False)
def _standard_gamma_grad(xp, a, x):
    dtype = xp.result_type(a, x)
    a, x = xp.broadcast_arrays(_float64(xp, a), _float64(xp, x))
    shape = a.shape
    a, x = a.ravel(), x.ravel()
    out = xp.full(a.shape, xp.nan)
    with np.errstate(all="ignore"):
        regular = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
        by_series = regular & (x < a + 1.0)
        for mask, method in ((by_series, _lower_series_derivative), (regular & ~by_series, _upper_fraction_derivative)):
            picked = xp.nonzero(mask)[0]
            out[picked] = method(xp, a[picked], x[picked])
    return out.reshape(shape).astype(dtype)


def standard_gamma_grad(input, output):
    """``d output / d input`` for gamma samples ``output`` drawn with concentrations ``input``
    (``torch._standard_gamma_grad``): the implicit reparameterisation gradient (Note [Implicit
    gamma gradient]); NaN where a concentration or sample is not positive and finite. Not
    differentiable.

    Raises:
        NotImplementedError: for integer or bool tensors.
    """
    _check_floating("_standard_gamma_grad", input, output)
    return _dispatch.apply_binary(_standard_gamma_grad, input, output)


@defop("standard_gamma", saves=(0,), saves_output=True)
def _reparameterized_gamma(xp, a, sample):
    return sample


_reparameterized_gamma.derivative(lambda node, g: (g * standard_gamma_grad(node.saved[0], node.output), None))


def reparameterized_gamma(concentration, sample):
    """``sample`` (gamma samples drawn with ``concentration``, the same shape) as a function of
    ``concentration`` for autograd: its gradient is Note [Implicit gamma gradient]'s."""
    return _dispatch.apply_binary(_reparameterized_gamma, concentration, sample)
