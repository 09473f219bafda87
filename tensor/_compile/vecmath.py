"""Scalar math for generated kernels that LLVM can vectorise.

numba calls ``np.tanh`` once per element through libm (~30 ns an element here), which no
loop vectoriser can widen. ``tanh_f32`` is a clamped rational approximation in plain
arithmetic (the odd degree-13 / even degree-6 minimax fit Eigen uses for float32): within
4 ulp of the correctly rounded result, exactly +-1 for ``|x| > 7.9``, NaN in gives NaN, and with ``error_model="numpy"``
the loop around it becomes SIMD code. ``exp_f32`` and ``exp_f64`` replace libm's ``exp``
the same way (Note [Vector exp]), ``fmaximum``/``fminimum`` running maxima and minima
(Note [Vector max]), and ``assume_equal`` states an input's static sizes (Note [Static
shapes]). Imported by the generated kernels only, so numba loads with the first kernel.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["assume_equal", "exp_f32", "exp_f64", "fmaximum", "fminimum", "tanh_f32"]

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
# ``|r| <= ln(2) / 2``, ``x - k ln 2`` subtracted in two parts (Cody-Waite: ``k`` times the
# high part is exact); ``exp(r)`` is its Taylor polynomial (its first omitted term is below
# the dtype's half ulp) and ``2**k`` is built from exponent bits, so every step is an
# instruction the loop vectoriser widens (``np.rint`` is ``llvm.rint``). ``2**k`` is applied
# as two powers of two, each a normal number, so that a subnormal result is rounded once and
# an overflowing one becomes ``inf``. Inputs are clamped (NaN passing through) to where the
# result has already saturated, which keeps ``k`` in range for the bit tricks. Within 1 ulp
# of the correctly rounded result over the whole range (``tests/tensor/test_compile_codegen.py``);
# NaN gives NaN, ``-inf`` 0 and ``inf`` inf.
_F32 = np.float32
_LOG2E = 1.4426950408889634
_EXP_F32 = (_F32(89.0), _F32(-104.0), _F32(_LOG2E), _F32(0.693359375), _F32(-2.12194440e-4))
_EXP_F64 = (710.0, -746.0, _LOG2E, 0.6931471803691238, 1.9082149292705877e-10)
_TAYLOR_F32 = tuple(_F32(1.0 / math.factorial(n)) for n in range(7, -1, -1))
_TAYLOR_F64 = tuple(1.0 / math.factorial(n) for n in range(13, -1, -1))


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def _pow2_f32(k):
    """``2 ** k`` for an integral float32 ``k`` in [-126, 127], from its exponent bits."""
    return np.int32((np.int32(k) + 127) << 23).view(np.float32)


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def _pow2_f64(k):
    """``2 ** k`` for an integral float64 ``k`` in [-1022, 1023], from its exponent bits."""
    return np.int64((np.int64(k) + 1023) << 52).view(np.float64)


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def exp_f32(x):
    """exp of a float32 in arithmetic a loop vectoriser can widen (Note [Vector exp])."""
    high, low, log2e, ln2_hi, ln2_lo = _EXP_F32
    v = x if not x > high else high  # exp(89) overflows float32, exp(-104) underflows it
    v = v if not v < low else low
    k = np.rint(v * log2e)
    k = k if k == k else _F32(0.0)
    r = (v - k * ln2_hi) - k * ln2_lo
    p = _TAYLOR_F32[0]
    for c in _TAYLOR_F32[1:]:
        p = p * r + c
    half = np.floor(k * _F32(0.5))
    return (p * _pow2_f32(half)) * _pow2_f32(k - half)


@njit(error_model="numpy", fastmath={"contract"}, cache=True)
def exp_f64(x):
    """exp of a float64 in arithmetic a loop vectoriser can widen (Note [Vector exp])."""
    high, low, log2e, ln2_hi, ln2_lo = _EXP_F64
    v = x if not x > high else high
    v = v if not v < low else low
    k = np.rint(v * log2e)
    k = k if k == k else 0.0
    r = (v - k * ln2_hi) - k * ln2_lo
    p = _TAYLOR_F64[0]
    for c in _TAYLOR_F64[1:]:
        p = p * r + c
    half = np.floor(k * 0.5)
    return (p * _pow2_f64(half)) * _pow2_f64(k - half)


# Note [Vector max]: a running maximum written ``if v > m or v != v: m = v`` (numpy's NaN
# semantics) is a branch LLVM does not vectorise, and its max-reduction idiom needs
# fast-math no-NaN flags. ``fmaximum``/``fminimum`` are LLVM's NaN-propagating
# ``llvm.maximum``/``llvm.minimum``, which the loop vectoriser turns into vector max
# instructions and one ``vector.reduce.fmaximum`` per row (~7x faster on a float32 row max).
def _nan_propagating(name):
    def typer(typingctx, a, b):
        if not (isinstance(a, types.Float) and a == b):
            return None

        def codegen(context, builder, signature, args):
            t = args[0].type
            return builder.call(builder.module.declare_intrinsic(name, [t], ir.FunctionType(t, [t, t])), args)

        return a(a, b), codegen

    return intrinsic(typer)


fmaximum = _nan_propagating("llvm.maximum")
fminimum = _nan_propagating("llvm.minimum")


# Note [Static shapes]: numba indexes a C-contiguous array through its runtime shape, so LLVM
# sees ``a[i, r]`` of an ``(n, 2)`` array as ``a[i * s + r]`` with ``s`` unknown: it vectorises
# the loop over ``i`` only in a copy guarded by ``s == 1`` (a unit stride) and runs the scalar
# copy otherwise. The 20M-point k-means kernel ran scalar that way, at ~1 s. A generated kernel
# states each input's static sizes, ``assume_equal(a0.shape[1], 2)``, at the top of its outer
# loop's body (the function numba's ``prange`` outlines), and LLVM substitutes the constant:
# the loop then reads both coordinates of four points with two vector loads (4.7x faster).
@intrinsic
def assume_equal(typingctx, value, size):
    """Tells LLVM that the integer ``value`` equals ``size`` (``llvm.assume``), which it must:
    LLVM may compile code that is wrong for any other value (Note [Static shapes])."""
    if not (isinstance(value, types.Integer) and isinstance(size, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        size_ = context.cast(builder, args[1], signature.args[1], signature.args[0])
        assume = builder.module.declare_intrinsic("llvm.assume", fnty=ir.FunctionType(ir.VoidType(), [ir.IntType(1)]))
        builder.call(assume, [builder.icmp_signed("==", args[0], size_)])
        return context.get_dummy_value()

    return types.none(value, size), codegen
