"""Scalar math for generated kernels that LLVM can vectorise.

numba calls ``np.tanh`` once per element through libm (~30 ns an element here), which no
loop vectoriser can widen. ``tanh_f32`` is a clamped rational approximation in plain
arithmetic (the odd degree-13 / even degree-6 minimax fit Eigen uses for float32): within
4 ulp of the correctly rounded result, exactly +-1 for ``|x| > 7.9``, NaN in gives NaN, and with ``error_model="numpy"``
the loop around it becomes SIMD code. Imported by the generated kernels only, so numba
loads with the first kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["tanh_f32"]

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
