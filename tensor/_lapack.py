"""LAPACK's LU and Bunch-Kaufman routines (and BLAS's triangular solve) on numpy arrays, through
the bundled OpenBLAS.

Note [LAPACK through ctypes]: numpy has no ``getrf``/``sytrf``, and the numpy versions in
``tensor/ops/lu.py`` and ``ldl.py`` take a Python step per column (a 128x128 ``lu_factor`` in
~15 ms against torch's 0.3 ms). Here the batch is copied once into Fortran order (each matrix's
transpose made contiguous), each matrix goes to the routine by one ctypes call, and the result
is transposed back: a Python loop over matrices, not over columns. The routines are found by
``tensor/_openblas.py``; ``_backend.lapack(xp)`` hands this module to the op kernels on the CPU
only, and they keep their numpy code for GPUs and for numpy builds without the library.
``solve_triangular`` (so ``lu_solve`` and the LU derivative) calls BLAS's ``trsm`` the same way
(its numpy version is ``linalg.solve``, a full LU of the triangular matrix), and ``lu_unpack``'s
permutation is ``laswp`` on ``0..m-1`` (not a numpy step per pivot). A call costs ~11 us even
on a 4x4 matrix (ctypes and OpenBLAS's own set-up), so large batches of tiny matrices stay with
the numpy code, one vectorised step per column: ``getrf``, ``trsm`` and ``laswp`` are called for
at most 16 matrices or for 16x16 and larger (1000 4x4 LUs: 13.5 ms by LAPACK, 1.6 ms by numpy;
256 8x8: 3.5 against 1.7 ms; 128 16x16: 2.2 against 2.7 ms; 512 32x32: 18 against 34 ms; load
~2-4). The LDL code steps per matrix anyway, so ``sytrf``/``sytrs`` are always called. Pivots
from the user are checked first: LAPACK would read and write outside the matrix for invalid
ones. Measured in BENCHMARKS.md (issue 16, LU / LDL): a 128x128 ``lu_factor`` 14x faster than
the numpy code.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _openblas

__all__ = ["available", "getrf", "row_permutation", "sytrf", "sytrs", "trsm"]

_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c"}
_PREFIX[np.dtype(np.complex128)] = "z"
_LOWER, _UPPER, _RIGHT = ctypes.c_char_p(b"L"), ctypes.c_char_p(b"U"), ctypes.c_char_p(b"R")
_NO, _UNIT = ctypes.c_char_p(b"N"), ctypes.c_char_p(b"U")
_ONE_CHAR = ctypes.c_size_t(1)  # gfortran's hidden length of the ``uplo`` string
_FEW = 16  # see _worth_calling


def available() -> bool:
    """True if the bundled OpenBLAS has LAPACK (and ``DISTRIB_NO_LAPACK`` is not set)."""
    return _openblas.lapack("dgetrf") is not None


def _routine(kind: str, dtype) -> _openblas.Routine | None:
    prefix = _PREFIX.get(np.dtype(dtype))
    return None if prefix is None else _openblas.lapack(prefix + kind)


def _worth_calling(count: int, n: int) -> bool:
    """Whether ``count`` calls on n x n matrices beat the numpy code vectorised over the batch
    (Note [LAPACK through ctypes]: ~11 us a call, whatever the size)."""
    return count <= _FEW or n >= _FEW


def _fortran(a):
    """A copy of ``a`` (count, m, n) as a C-contiguous (count, n, m): each matrix in Fortran order.
    Always a copy: LAPACK factors it in place, and for an input already in Fortran order
    ``ascontiguousarray`` would hand back the input's own memory (the op's input, overwritten)."""
    return np.array(a.swapaxes(-1, -2), order="C", copy=True)


def _c_order(buf):
    """``_fortran``'s inverse: the (count, m, n) C-contiguous matrices (a copy; a strided view
    would make later results, such as ``concatenate``'s, Fortran-ordered)."""
    return np.ascontiguousarray(buf.swapaxes(-1, -2))


def _pointers(buf):
    step = buf.strides[0] if buf.ndim else 0
    return [ctypes.c_void_p(buf.ctypes.data + i * step) for i in range(buf.shape[0])]


def getrf(a):
    """``(LU, pivots)`` of ``a`` (count, m, n) by ``?getrf``, or None for a dtype LAPACK lacks;
    ``pivots`` (count, min(m, n)) int32, 1-based. (``info``, the first zero on ``U``'s diagonal,
    is read off ``LU``.)"""
    routine = _routine("getrf", a.dtype)
    count, m, n = a.shape
    if routine is None or not _worth_calling(count, min(m, n)):
        return None
    buf = _fortran(a)
    pivots = np.zeros((count, min(m, n)), dtype=routine.int_type)
    info = np.zeros(count, dtype=routine.int_type)
    M, N = routine.int_type(m), routine.int_type(n)
    lda = routine.int_type(max(1, m))
    for mat, piv, inf in zip(_pointers(buf), _pointers(pivots), _pointers(info), strict=True):
        routine.fn(ctypes.byref(M), ctypes.byref(N), mat, ctypes.byref(lda), piv, inf)
    return _c_order(buf), pivots.astype(np.int32)


def sytrf(a, hermitian: bool):
    """``(LD, pivots, info)`` of symmetric ``a`` (count, n, n) by ``?sytrf`` (``?hetrf`` if
    ``hermitian`` and complex) with ``uplo='L'``, or None for a dtype LAPACK lacks. ``LD`` is the
    lower triangle (the rest zero), ``pivots`` (count, n) and ``info`` (count,) int32."""
    kind = "hetrf" if hermitian and np.iscomplexobj(a) else "sytrf"
    routine = _routine(kind, a.dtype)
    if routine is None:
        return None
    count, n, _ = a.shape
    buf = _fortran(a)
    pivots = np.zeros((count, n), dtype=routine.int_type)
    info = np.zeros(count, dtype=routine.int_type)
    lwork = max(1, 64 * n)  # LAPACK's block size times n: enough for the blocked algorithm
    work = np.empty(lwork, dtype=a.dtype)
    N, lda, LWORK = routine.int_type(n), routine.int_type(max(1, n)), routine.int_type(lwork)
    work_ptr = ctypes.c_void_p(work.ctypes.data)
    for mat, piv, inf in zip(_pointers(buf), _pointers(pivots), _pointers(info), strict=True):
        routine.fn(_LOWER, ctypes.byref(N), mat, ctypes.byref(lda), piv, work_ptr, ctypes.byref(LWORK), inf, _ONE_CHAR)
    return np.tril(_c_order(buf)), pivots.astype(np.int32), info.astype(np.int32)


def _bunch_kaufman_pivots(pivots) -> bool:
    """True if every row of ``pivots`` (count, n) is in ``1..n`` in magnitude and its negative
    entries (2x2 blocks) come in runs of even length, as ``sytrf`` makes them."""
    n = pivots.shape[-1]
    if not pivots.size:
        return True
    if np.abs(pivots).min() < 1 or np.abs(pivots).max() > n:
        return False
    edges = np.diff(np.pad(pivots < 0, ((0, 0), (1, 1))).astype(np.int8), axis=-1).ravel()
    return not ((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)) % 2).any()


def row_permutation(pivots, m: int):
    """The rows of ``P`` (count, m) int64 as LAPACK's row interchanges ``pivots`` (count, k)
    (1-based) leave ``0..m-1``, by ``?laswp``; None if a pivot is outside ``1..m``."""
    routine = _openblas.lapack("dlaswp")
    count, k = pivots.shape
    if routine is None or not _worth_calling(count, m) or (pivots.size and (pivots.min() < 1 or pivots.max() > m)):
        return None
    rows = np.tile(np.arange(m, dtype=np.float64), (count, 1))
    piv = np.ascontiguousarray(pivots, dtype=routine.int_type)
    one, lda = routine.int_type(1), routine.int_type(max(1, m))
    last = routine.int_type(k)
    for mat, p in zip(_pointers(rows), _pointers(piv), strict=True):
        routine.fn(ctypes.byref(one), mat, ctypes.byref(lda), ctypes.byref(one), ctypes.byref(last), p,
                   ctypes.byref(one))  # fmt: skip
    return rows.astype(np.int64)


def sytrs(ld, pivots, b, hermitian: bool):
    """The solutions of ``A X = B`` (count, n, k) from ``sytrf``'s ``LD`` (count, n, n) and
    ``pivots`` by ``?sytrs``/``?hetrs`` (``uplo='L'``), or None for a dtype LAPACK lacks or
    pivots that ``sytrf`` cannot have made (LAPACK would index outside the matrix: the numpy
    code then reports them). A zero block of ``D`` gives inf/nan, as LAPACK's."""
    kind = "hetrs" if hermitian and np.iscomplexobj(ld) else "sytrs"
    routine = _routine(kind, ld.dtype)
    if routine is None or not _bunch_kaufman_pivots(pivots):
        return None
    count, n, k = b.shape
    lds = _fortran(ld)
    out = _fortran(b)
    piv = np.ascontiguousarray(pivots, dtype=routine.int_type)
    info = routine.int_type(0)
    N, K, lda = routine.int_type(n), routine.int_type(k), routine.int_type(max(1, n))
    for mat, p, rhs in zip(_pointers(lds), _pointers(piv), _pointers(out), strict=True):
        routine.fn(_LOWER, ctypes.byref(N), ctypes.byref(K), mat, ctypes.byref(lda), p, rhs, ctypes.byref(lda),
                   ctypes.byref(info), _ONE_CHAR)  # fmt: skip
    return _c_order(out)


def trsm(t, b, upper: bool, unitriangular: bool):
    """The solutions of ``T X = B`` (count, n, k) for triangular ``t`` (count, n, n), reading only
    its ``upper`` or lower triangle (a unit diagonal with ``unitriangular``), by BLAS's ``?trsm``,
    or None for a dtype BLAS lacks. A zero on the diagonal gives inf/nan.

    No Fortran copies: a C-order matrix is its transpose in Fortran order, so the C buffers hold
    ``T^T`` and ``B^T``, and ``X^T`` is the right-side solve ``X^T T^T = B^T`` in place of ``B^T``.
    """
    routine = _routine("trsm", t.dtype)
    count, n, k = b.shape
    if routine is None or not _worth_calling(count, n):
        return None
    t = np.ascontiguousarray(t)
    out = np.array(b, order="C")
    alpha = np.ones(1, dtype=t.dtype)
    N, K = routine.int_type(n), routine.int_type(k)
    ldt, ldb = routine.int_type(max(1, n)), routine.int_type(max(1, k))
    uplo, diag = _LOWER if upper else _UPPER, _UNIT if unitriangular else _NO  # T^T flips the triangle
    alpha_ptr = ctypes.c_void_p(alpha.ctypes.data)
    for mat, rhs in zip(_pointers(t), _pointers(out), strict=True):
        routine.fn(_RIGHT, uplo, _NO, diag, ctypes.byref(K), ctypes.byref(N), alpha_ptr, mat, ctypes.byref(ldt), rhs,
                   ctypes.byref(ldb), _ONE_CHAR, _ONE_CHAR, _ONE_CHAR, _ONE_CHAR)  # fmt: skip
    return out
