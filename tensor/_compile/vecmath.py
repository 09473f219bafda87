"""Scalar math for generated kernels that LLVM can vectorise.

numba calls ``np.tanh`` once per element through libm (~30 ns an element here), which no
loop vectoriser can widen. ``tanh_f32`` is a clamped rational approximation in plain
arithmetic (the odd degree-13 / even degree-6 minimax fit Eigen uses for float32): within
4 ulp of the correctly rounded result, exactly +-1 for ``|x| > 7.9``, NaN in gives NaN, and with ``error_model="numpy"``
the loop around it becomes SIMD code. ``exp_f32`` and ``exp_f64`` replace libm's ``exp``
the same way (Note [Vector exp]). Imported by the generated kernels only, so numba loads
with the first kernel.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["exp_f32", "exp_f64", "tanh_f32"]

_CLAMP = np.float32(7.90531110763549805)  # beyond it the result is +-1 (within 4 ulp of tanh)
_ONE = np.float32(1.0)
_P = tuple(
    np.float32(c)
    for c in (
        -2.76076847742355e-16,
        2.00018790482477e-13,
        -8.60467152213735e-11,
        5.12229709037114e-08,
        1.48572235717979e-05,
        6.37261928875436e-04,
        4.89352455891786e-03,
    )
)
_Q = tuple(
    np.float32(c) for c in (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03)
)


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def tanh_f32(x):
    """tanh of a float32, in arithmetic a loop vectoriser can widen (see the module docstring)."""
    v = x if not x > _CLAMP else _CLAMP  # written so that NaN passes through both clamps
    v = v if not v < -_CLAMP else -_CLAMP
    v2 = v * v
    p = _P[0]
    for c in _P[1:]:
        p = v2 * p + c
    q = _Q[0]
    for c in _Q[1:]:
        q = v2 * q + c
    r = np.float32(v * (p / q))
    r = _ONE if x > _CLAMP else r  # saturated exactly, so that 1 + tanh(x) is 0 for x << 0
    return -_ONE if x < -_CLAMP else r


# Note [Vector exp]: ``exp(x) = 2**k * exp(r)`` with ``k = rint(x / ln 2)`` and
# ``|r| <= ln(2) / 2``; ``exp(r)`` is its Taylor polynomial (its first omitted term is below
# the dtype's half ulp) and ``2**k`` is built from its exponent bits, so every step is an
# instruction the loop vectoriser widens (``np.rint`` is ``llvm.rint``). float32 works in
# float64 and rounds once at the end: that rounding makes overflow ``inf``, underflow ``0``
# and subnormal results exact to the last bit without a branch. float64 subtracts ``k ln 2``
# in two parts (Cody-Waite) and scales by ``2**k`` as two powers of two, each a normal
# number, so that subnormal results round once too. Inputs are clamped (NaN passing through)
# to where the result has already saturated, which keeps ``k`` in range for the bit tricks;
# NaN gives NaN, ``-inf`` 0 and ``inf`` inf.
_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 in 32 bits: k * _LN2_HI is exact for |k| < 2**21
_LN2_LO = 1.9082149292705877e-10
_EXP_TAYLOR_F32 = tuple(1.0 / math.factorial(n) for n in range(7, -1, -1))
_EXP_TAYLOR_F64 = tuple(1.0 / math.factorial(n) for n in range(13, -1, -1))


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def _pow2(k):
    """``2.0 ** k`` for an integral float64 ``k`` in [-1022, 1023], from its exponent bits."""
    return np.int64((np.int64(k) + 1023) << 52).view(np.float64)


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def exp_f32(x):
    """exp of a float32 in vectorisable float64 arithmetic (Note [Vector exp])."""
    v = np.float64(x)
    v = v if not v > 100.0 else 100.0  # exp(100) overflows float32, exp(-110) underflows it
    v = v if not v < -110.0 else -110.0
    k = np.rint(v * _LOG2E)
    k = k if k == k else 0.0
    r = v - k * 0.6931471805599453
    p = _EXP_TAYLOR_F32[0]
    for c in _EXP_TAYLOR_F32[1:]:
        p = p * r + c
    return np.float32(p * _pow2(k))


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def exp_f64(x):
    """exp of a float64 in vectorisable arithmetic, within 2 ulp (Note [Vector exp])."""
    v = x if not x > 710.0 else 710.0  # beyond these the result is inf / 0
    v = v if not v < -746.0 else -746.0
    k = np.rint(v * _LOG2E)
    k = k if k == k else 0.0
    r = (v - k * _LN2_HI) - k * _LN2_LO
    p = _EXP_TAYLOR_F64[0]
    for c in _EXP_TAYLOR_F64[1:]:
        p = p * r + c
    half = np.floor(k * 0.5)
    return (p * _pow2(half)) * _pow2(k - half)
