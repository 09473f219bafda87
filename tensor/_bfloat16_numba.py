"""numba kernels for float32 <-> bfloat16 conversions (Note [bfloat16 conversions] in
tensor/_backend.py).

Imported by the backend seam only on the first large conversion when numba is installed (the
``compile`` extra), so ``import tensor`` never loads numba. Both kernels work on the bit
patterns (``uint32`` for float32, ``uint16`` for bfloat16), branch-free so that LLVM widens
the loops, and are bit-identical to ml_dtypes' casts: rounding to nearest even, infinities kept,
every NaN becomes the quiet NaN ``0x7FC0`` with its sign (Eigen's rule, which ml_dtypes uses);
widening is exact (the bits shifted up). ``cache=True`` keeps the machine code in
``__pycache__``, and ``load_cached`` installs it from there without numba's full start-up.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._compile.codegen_numba import load_cached

__all__ = ["narrow", "round_to", "widen"]

_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}
_U16, _ABS, _INF, _ROUND, _LSB = (
    np.uint32(16),
    np.uint32(0x7FFFFFFF),
    np.uint32(0x7F800000),
    np.uint32(0x7FFF),
    np.uint32(1),
)
_SIGN, _QNAN, _ZERO = np.uint32(0x8000), np.uint32(0x7FC0), np.uint32(0)


@njit(**_JIT)
def _bfloat16_bits(bits):
    """The bfloat16 bits (in the low half) of float32 ``bits``: round to nearest even; a NaN
    becomes the quiet NaN with its sign."""
    high = bits >> _U16
    rounded = (bits + _ROUND + (high & _LSB)) >> _U16
    nan = _ZERO - np.uint32((bits & _ABS) > _INF)  # all ones for a NaN, else 0
    return (((high & _SIGN) | _QNAN) & nan) | (rounded & ~nan)


@njit(**_JIT)
def _narrow(src, dst):
    for i in range(src.shape[0]):
        dst[i] = np.uint16(_bfloat16_bits(src[i]))


@njit(**_JIT)
def _round(src, dst):
    for i in range(src.shape[0]):
        dst[i] = _bfloat16_bits(src[i]) << _U16


@njit(**_JIT)
def _widen(src, dst):
    for i in range(src.shape[0]):
        dst[i] = np.uint32(src[i]) << _U16


def _call(kernel, src, dst) -> None:
    if not kernel.overloads:
        load_cached(kernel, (src, dst))  # from disk without numba's full start-up (Note [Warm start])
    kernel(src, dst)


def narrow(src: np.ndarray, dst: np.ndarray) -> None:
    """Round the float32 elements of 1-d ``src`` to bfloat16 into ``dst`` (same length)."""
    _call(_narrow, src.view(np.uint32), dst.view(np.uint16))


def round_to(src: np.ndarray, dst: np.ndarray) -> None:
    """Round the float32 elements of 1-d ``src`` to bfloat16 and widen them back into float32
    ``dst``: ``narrow`` then ``widen`` in one pass, without the bfloat16 array."""
    _call(_round, src.view(np.uint32), dst.view(np.uint32))


def widen(src: np.ndarray, dst: np.ndarray) -> None:
    """Widen the bfloat16 elements of 1-d ``src`` to float32 into ``dst`` (exact)."""
    _call(_widen, src.view(np.uint16), dst.view(np.uint32))
