"""The LDL family: ``ldl_factor``, ``ldl_factor_ex``, ``ldl_solve`` (no derivatives, as in torch).

Note [Bunch-Kaufman]: numpy has no LAPACK ``sytrf``, so the factorisation is written here as
LAPACK's unblocked ``?sytf2`` / ``?hetf2`` with ``uplo='L'``: symmetric pivoting that picks 1x1
or 2x2 diagonal blocks by the Bunch-Kaufman test (alpha = (1 + sqrt(17)) / 8), so ``LD`` and
``pivots`` are LAPACK's (and torch's): ``L``'s strict lower triangle and the blocks of ``D``
(diagonal and first subdiagonal), 1-based pivots, negative for both rows of a 2x2 block, and
interchanges that apply only to the trailing matrix (``L`` is a product of permuted factors,
which ``ldl_solve`` undoes step by step as ``?sytrs``). Each step's pivot choice depends on
the previous one, so matrices of a batch are factored one after another (the steps themselves
are vectorised over the trailing matrix), on the host (``_backend.on_host``: on a GPU that is one
copy each way instead of a sync per step). Where numpy's bundled OpenBLAS has LAPACK, the host
calls its ``?sytrf``/``?hetrf`` and ``?sytrs``/``?hetrs`` instead (Note [LAPACK through ctypes]
in tensor/_lapack.py); the code here is the fallback.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .. import _backend, _dispatch, _dtype
from .decomp import LinAlgError
from .lu import check_float_matrix
from .registry import defop

__all__: list[str] = []

_ALPHA = (1 + 17**0.5) / 8
_ldl_result = namedtuple("ldl_factor", ["LD", "pivots"])
_ldl_ex_result = namedtuple("ldl_factor_ex", ["LD", "pivots", "info"])


def _cabs1(z):
    """LAPACK's ``|re| + |im|`` magnitude (``abs`` for real values)."""
    return abs(z.real) + abs(z.imag)


class _Factor:
    """One matrix's Bunch-Kaufman factorisation in place (Note [Bunch-Kaufman])."""

    def __init__(self, xp, a, hermitian: bool):
        self.xp, self.a, self.n = xp, a, a.shape[0]
        self.hermitian = hermitian and xp.iscomplexobj(a)
        self.conj = xp.conj if self.hermitian else (lambda z: z)
        self.pivots = np.zeros(self.n, dtype=np.int32)
        self.info = 0

    def diag_abs(self, i):
        value = self.a[i, i]
        return float(abs(value.real)) if self.hermitian else float(_cabs1(value))

    def choose(self, k):
        """``(kp, kstep)``: the row to bring to ``k + kstep - 1`` and the block size."""
        a, n, xp = self.a, self.n, self.xp
        absakk = self.diag_abs(k)
        imax, colmax = k, 0.0
        if k < n - 1:
            column = _cabs1(a[k + 1 :, k])
            imax = k + 1 + int(xp.argmax(column))
            colmax = float(column[imax - k - 1])
        if max(absakk, colmax) == 0 or absakk != absakk:
            self.info = self.info or k + 1
            return None, 1
        if absakk >= _ALPHA * colmax:
            return k, 1
        rowmax = float(_cabs1(a[imax, k:imax]).max())
        if imax < n - 1:
            rowmax = max(rowmax, float(_cabs1(a[imax + 1 :, imax]).max()))
        if absakk >= _ALPHA * colmax * (colmax / rowmax):
            return k, 1
        if self.diag_abs(imax) >= _ALPHA * rowmax:
            return imax, 1
        return imax, 2

    def interchange(self, k, kk, kp, kstep):
        """Swap rows and columns ``kk`` and ``kp`` of the trailing (lower-stored) matrix."""
        a, conj = self.a, self.conj
        below = a[kp + 1 :, kk].copy()
        a[kp + 1 :, kk] = a[kp + 1 :, kp]
        a[kp + 1 :, kp] = below
        between = conj(a[kk + 1 : kp, kk]).copy()
        a[kk + 1 : kp, kk] = conj(a[kp, kk + 1 : kp])
        a[kp, kk + 1 : kp] = between
        a[kp, kk] = conj(a[kp, kk])
        a[kk, kk], a[kp, kp] = a[kp, kp].copy(), a[kk, kk].copy()
        if kstep == 2:
            a[k + 1, k], a[kp, k] = a[kp, k].copy(), a[k + 1, k].copy()

    def update(self, k, kstep):
        a, conj, xp = self.a, self.conj, self.xp
        if kstep == 1:
            d11 = 1 / (a[k, k].real if self.hermitian else a[k, k])
            x = a[k + 1 :, k].copy()
            a[k + 1 :, k + 1 :] -= d11 * xp.outer(x, conj(x))
            a[k + 1 :, k] = x * d11
            return
        x0, x1 = a[k + 2 :, k].copy(), a[k + 2 :, k + 1].copy()
        if self.hermitian:
            d = abs(a[k + 1, k])
            d11, d22, d21 = a[k + 1, k + 1].real / d, a[k, k].real / d, a[k + 1, k] / d
            d = 1 / (d11 * d22 - 1) / d
            wk, wkp1 = d * (d11 * x0 - d21 * x1), d * (d22 * x1 - conj(d21) * x0)
        else:
            d21 = a[k + 1, k]
            d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
            d21 = 1 / (d11 * d22 - 1) / d21
            wk, wkp1 = d21 * (d11 * x0 - x1), d21 * (d22 * x1 - x0)
        a[k + 2 :, k + 2 :] -= xp.outer(x0, conj(wk)) + xp.outer(x1, conj(wkp1))
        a[k + 2 :, k], a[k + 2 :, k + 1] = wk, wkp1

    def run(self):
        k, n = 0, self.n
        while k < n:
            kp, kstep = self.choose(k)
            if kp is not None and kp != k + kstep - 1:
                self.interchange(k, k + kstep - 1, kp, kstep)
            if self.hermitian:
                for i in range(k, k + kstep):
                    self.a[i, i] = self.a[i, i].real
            if kp is not None and k + kstep < n:
                self.update(k, kstep)
            kp = k if kp is None else kp
            self.pivots[k : k + kstep] = kp + 1 if kstep == 1 else -(kp + 1)
            k += kstep
        return self


@defop("ldl_factor", differentiable=False)
def _ldl_factor(xp, a, hermitian):
    return _backend.on_host(xp, _sytrf, a, hermitian)


def _sytrf(xp, a, hermitian):
    # Note [Packed outputs]: LD, then a row of pivots and a row whose first entry is info.
    n = a.shape[-1]
    flat = a.reshape((math.prod(a.shape[:-2]), n, n))
    out = xp.zeros((flat.shape[0], n + 2, n), dtype=a.dtype)
    lapack = _backend.lapack(xp)
    factored = lapack.sytrf(flat, hermitian) if lapack is not None and n else None
    if factored is not None:
        out[:, :n], out[:, n], out[:, n + 1, 0] = factored
        return out.reshape(a.shape[:-2] + (n + 2, n))
    for i in range(flat.shape[0]):
        factor = _Factor(xp, flat[i].copy(), hermitian).run()
        out[i, :n] = xp.tril(factor.a)
        out[i, n] = xp.asarray(factor.pivots)
        if n:
            out[i, n + 1, 0] = factor.info
    return out.reshape(a.shape[:-2] + (n + 2, n))


def ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False):
    """``(LD, pivots, info)``: the Bunch-Kaufman factorisation ``A = L D L^T`` (``L D L^H`` with
    ``hermitian``) of symmetric ``A`` (its lower triangle is read), in LAPACK's compact form
    (Note [Bunch-Kaufman]); ``info`` is the 1-based index of a zero 1x1 block of ``D``, or 0.

    Raises:
        RuntimeError: for non-square or integer input.
        LinAlgError: with ``check_errors=True``, if some ``info`` is not 0.
    """
    check_float_matrix("torch.linalg.ldl_factor_ex", A, square=True)
    n = A.shape[-1]
    packed = _dispatch.apply_unary(_ldl_factor, A, (hermitian,))
    LD = packed[..., :n, :]
    pivots = packed[..., n, :].real.to(_dtype.int32)
    info = packed[..., n + 1, 0].real.to(_dtype.int32) if n else pivots.new_zeros(A.shape[:-2])
    if check_errors:
        _raise_singular("torch.linalg.ldl_factor_ex", info)
    return _ldl_ex_result(LD, pivots, info)


def _raise_singular(name, info):
    for batch, i in enumerate(info.reshape(-1).tolist()):
        if i:
            raise LinAlgError(
                f"{name}: The factorization could not be completed because the input is singular: "
                f"D[{i},{i}] is zero{f' (batch element {batch})' if info.ndim else ''}"
            )


def ldl_factor(A, *, hermitian: bool = False):
    """``(LD, pivots)`` of symmetric (or Hermitian) ``A``; see ``ldl_factor_ex``.

        >>> import tensor
        >>> tensor.linalg.ldl_factor(tensor.tensor([[0.0, 1.0], [1.0, 0.0]])).pivots  # one 2x2 block
        tensor([-2, -2], dtype=tensor.int32)

    Raises:
        LinAlgError: if ``D`` has a zero 1x1 block (the matrix is singular).
    """
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_singular("torch.linalg.ldl_factor", info)
    return _ldl_result(LD, pivots)


def _sytrs(xp, a, pivots, b, hermitian):
    """Solve ``A X = B`` for one matrix from its LD and pivots, as LAPACK's ``?sytrs`` (lower)."""
    n = a.shape[0]
    conj = xp.conj if hermitian else (lambda z: z)
    b = b.copy()

    def swap(i, j):
        if i != j:
            b[[i, j]] = b[[j, i]]

    k = 0
    while k < n:  # L D Y = B
        if pivots[k] > 0:
            swap(k, pivots[k] - 1)
            b[k + 1 :] -= xp.outer(a[k + 1 :, k], b[k])
            b[k] /= a[k, k].real if hermitian else a[k, k]
            k += 1
            continue
        swap(k + 1, -pivots[k] - 1)
        b[k + 2 :] -= xp.outer(a[k + 2 :, k], b[k]) + xp.outer(a[k + 2 :, k + 1], b[k + 1])
        akm1k = a[k + 1, k]
        akm1, ak = a[k, k] / conj(akm1k), a[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = b[k] / conj(akm1k), b[k + 1] / akm1k
        b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    k = n - 1
    while k >= 0:  # L^T X = Y (L^H)
        step = 1 if pivots[k] > 0 else 2
        for i in range(k, k - step, -1):
            b[i] -= conj(a[k + 1 :, i]) @ b[k + 1 :]
        swap(k, abs(pivots[k]) - 1)
        k -= step
    return b


@defop("ldl_solve", differentiable=False)
def _ldl_solve(xp, ld, pivots, b, hermitian):
    return _backend.on_host(xp, _batched_sytrs, ld, pivots, b, hermitian)


def _batched_sytrs(xp, ld, pivots, b, hermitian):
    n = ld.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    count = math.prod(batch)
    ld = xp.broadcast_to(ld, batch + (n, n)).reshape((count, n, n))
    pivots = np.broadcast_to(pivots, batch + (n,)).reshape((count, n)).astype(np.int64)
    b = xp.broadcast_to(b, batch + b.shape[-2:]).reshape((count,) + b.shape[-2:])
    hermitian = hermitian and xp.iscomplexobj(ld)
    lapack = _backend.lapack(xp)
    solved = lapack.sytrs(ld, pivots, b, hermitian) if lapack is not None and count and n else None
    if solved is not None:
        return solved.reshape(batch + b.shape[-2:])
    with np.errstate(divide="ignore", invalid="ignore"):  # a singular D gives inf/nan, as LAPACK
        out = xp.stack([_sytrs(xp, ld[i], pivots[i], b[i], hermitian) for i in range(count)]) if count else b.copy()
    return out.reshape(batch + b.shape[-2:])


def ldl_solve(LD, pivots, B, *, hermitian: bool = False):
    """The solution of ``A X = B`` from ``A``'s ``ldl_factor`` (same ``hermitian``).

    Raises:
        RuntimeError: for mismatched shapes or dtypes, or non-integer pivots.
    """
    check_float_matrix("torch.linalg.ldl_solve", LD, square=True)
    n = LD.shape[-1]
    if pivots.dtype is not _dtype.int32 or pivots.shape[-1:] != (n,):
        raise RuntimeError(
            f"torch.linalg.ldl_solve: Expected pivots of dtype int32 and last dim {n}, "
            f"got {pivots.dtype.name} of shape {list(pivots.shape)}"
        )
    if B.ndim < 2 or B.shape[-2] != n:
        raise RuntimeError(
            f"torch.linalg.ldl_solve: Incompatible shapes of A and B for the equation AX = B "
            f"({n}x{n} and {list(B.shape)})"
        )
    if B.dtype is not LD.dtype:
        raise RuntimeError(
            f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, but got {LD.dtype.name} "
            f"and {B.dtype.name}"
        )
    return _dispatch.apply(_ldl_solve, (LD, pivots, B), (hermitian,))
