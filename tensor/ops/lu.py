"""Triangular solves and the LU family: ``solve_triangular``, ``lu_factor(_ex)``, ``lu``,
``lu_unpack``, ``lu_solve``, with derivatives.

numpy has no LAPACK ``getrf``: on the CPU it is called in numpy's bundled OpenBLAS (Note [LAPACK
through ctypes] in tensor/_lapack.py); elsewhere the factorisation is written here (Note [Blocked
LU]). Its results follow LAPACK's conventions, as torch's do: ``LU`` holds ``L``'s strict lower triangle
(unit diagonal implied) and ``U``; ``pivots`` are 1-based int32 row swaps, applied in order.

Note [Blocked LU]: right-looking LU with partial pivoting, vectorised over the batch. A panel
of ``_BLOCK`` columns is factored column by column (the pivot is the first largest magnitude,
``|re| + |im|`` for complex as LAPACK's ``i?amax``; whole rows are swapped); then the rows right
of the panel are solved with the panel's unit lower triangle and the trailing matrix gets one
GEMM. A zero pivot column is left as it is (LAPACK's ``info``: the first zero on ``U``'s
diagonal), so singular matrices factor without an error, as in LAPACK.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from .. import _backend, _creation, _dispatch, _dtype
from .decomp import LinAlgError, check_float_matrix, conj_transpose
from .diagonals import tril, triu
from .join_split import cat
from .registry import defop

__all__ = ["lu", "lu_solve", "lu_unpack"]  # check_float_matrix, conj_transpose: re-exported from decomp

_BLOCK = 32
_factor_result = namedtuple("lu_factor", ["LU", "pivots"])
_factor_ex_result = namedtuple("lu_factor_ex", ["LU", "pivots", "info"])
_lu_result = namedtuple("lu", ["P", "L", "U"])
_unpack_result = namedtuple("lu_unpack", ["P", "L", "U"])


def _magnitude(xp, a):
    return xp.abs(a.real) + xp.abs(a.imag) if xp.iscomplexobj(a) else xp.abs(a)


def _unit_lower(xp, block):
    eye = xp.eye(block.shape[-1], dtype=block.dtype)
    return xp.tril(block, -1) + eye


def _getrf(xp, a, pivot):
    """LU of ``a`` (..., m, n) as LAPACK's getrf: ``(LU, pivots)`` (1-based), by LAPACK itself
    on the CPU (Note [LAPACK through ctypes] in tensor/_lapack.py), else Note [Blocked LU]."""
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    lapack = _backend.lapack(xp)
    factored = lapack.getrf(a.reshape((math.prod(batch), m, n))) if lapack is not None and pivot else None
    if factored is not None:
        return factored[0].reshape(a.shape), factored[1].reshape(batch + (k,))
    lu = a.reshape((math.prod(batch), m, n)).copy()
    rows = xp.arange(lu.shape[0])
    pivots = xp.broadcast_to(xp.arange(1, k + 1, dtype=np.int32), (lu.shape[0], k)).copy()
    for j0 in range(0, k, _BLOCK):
        j1 = min(j0 + _BLOCK, k)
        for j in range(j0, j1):
            if pivot:
                p = j + xp.argmax(_magnitude(xp, lu[:, j:, j]), axis=1)
                pivots[:, j] = p + 1
                row = lu[rows, j].copy()
                lu[rows, j] = lu[rows, p]
                lu[rows, p] = row
            head = lu[:, j, j][:, None]
            nonzero = head != 0
            lu[:, j + 1 :, j] = xp.where(nonzero, lu[:, j + 1 :, j] / xp.where(nonzero, head, 1), lu[:, j + 1 :, j])
            lu[:, j + 1 :, j + 1 : j1] -= lu[:, j + 1 :, j : j + 1] * lu[:, j : j + 1, j + 1 : j1]
        if j1 < n:
            lu[:, j0:j1, j1:] = xp.linalg.solve(_unit_lower(xp, lu[:, j0:j1, j0:j1]), lu[:, j0:j1, j1:])
            lu[:, j1:, j1:] -= lu[:, j1:, j0:j1] @ lu[:, j0:j1, j1:]
    return lu.reshape(batch + (m, n)), pivots.reshape(batch + (k,))


@defop("lu_factor", saves_output=True)
def _lu_factor(xp, a, pivot):
    # Note [Packed outputs]: LU, then one row holding the pivots (as values of LU's dtype).
    lu, pivots = _getrf(xp, a, pivot)
    row = xp.zeros(a.shape[:-2] + (1, a.shape[-1]), dtype=lu.dtype)
    row[..., 0, : pivots.shape[-1]] = pivots
    return xp.concatenate([lu, row], axis=-2)


def _split_packed(packed, m):
    k = min(m, packed.shape[-1])
    return packed[..., :m, :], packed[..., m, :k].detach().real.to(_dtype.int32)


@_lu_factor.derivative
def _(node, g):
    # PyTorch's linalg_lu_backward with gL = g.tril(-1), gU = g.triu(); A = P L U.
    m, n = node.input_shapes[0][-2:]
    k = min(m, n)
    P, L, U = lu_unpack(*_split_packed(node.output, m))
    g = g[..., :m, :]
    gL, gU = tril(g, -1)[..., :k], triu(g)[..., :k, :]
    if m == n:
        gA = tril(conj_transpose(L) @ gL, -1) + triu(gU @ conj_transpose(U))
        gA = solve_triangular(conj_transpose(U), gA, upper=False, left=False)
        gA = solve_triangular(conj_transpose(L), gA, upper=True, unitriangular=True)
    elif m < n:
        U1 = U[..., :k]
        gA = tril(conj_transpose(L) @ gL - gU @ conj_transpose(U), -1)
        gA = solve_triangular(conj_transpose(U1), gA, upper=False, left=False)
        gA = cat([gA + gU[..., :k], gU[..., k:]], -1)
        gA = solve_triangular(conj_transpose(L), gA, upper=True, unitriangular=True)
    else:
        L1 = L[..., :k, :]
        gA = triu(gU @ conj_transpose(U) - conj_transpose(L) @ gL)
        gA = solve_triangular(conj_transpose(L1), gA, upper=True, unitriangular=True)
        gA = cat([gA + gL[..., :k, :], gL[..., k:, :]], -2)
        gA = solve_triangular(conj_transpose(U), gA, upper=False, left=False)
    return (P @ gA,)


@defop("lu_info", differentiable=False)
def _lu_info(xp, lu):
    zero = xp.diagonal(lu, axis1=-2, axis2=-1) == 0
    if not zero.shape[-1]:
        return xp.zeros(zero.shape[:-1], dtype=np.int32)
    return xp.where(zero.any(-1), xp.argmax(zero, axis=-1) + 1, 0).astype(np.int32)


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):
    """``(LU, pivots, info)``: the LU factorisation with partial pivoting in LAPACK's compact form.

    ``info`` is 0, or the 1-based index of the first zero on ``U``'s diagonal. ``pivot=False``
    factors without row swaps (``pivots`` are then ``1..k``).

    Raises:
        RuntimeError: for fewer than 2 dims.
        NotImplementedError: for integer or 16-bit input (as PyTorch's LAPACK kernel).
        LinAlgError: with ``check_errors=True``, if some ``info`` is not 0.
    """
    check_float_matrix("linalg.lu_factor_ex", A, integer_error=NotImplementedError)
    packed = _dispatch.apply_unary(_lu_factor, A, (pivot,))
    LU, pivots = _split_packed(packed, A.shape[-2])
    info = _dispatch.apply_unary(_lu_info, LU)
    if check_errors:
        _raise_singular("linalg.lu_factor_ex", info)
    return _factor_ex_result(LU, pivots, info)


def _raise_singular(name, info):
    bad = info.reshape(-1).tolist()
    for batch, i in enumerate(bad):
        if i:
            where = f" (batch element {batch})" if info.ndim else ""
            raise LinAlgError(
                f"{name}: U[{i},{i}] is zero{where} and using it on lu_solve would result in a division by "
                f"zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) "
                f"or linalg.lu_factor_ex(A, pivot)"
            )


def lu_factor(A, *, pivot: bool = True):
    """``(LU, pivots)`` of ``A`` (see ``lu_factor_ex``).

        >>> import tensor
        >>> tensor.linalg.lu_factor(tensor.tensor([[1.0, 2.0], [3.0, 4.0]])).pivots  # row 1 swapped with row 2
        tensor([2, 2], dtype=tensor.int32)

    Raises:
        LinAlgError: if some ``U`` has a zero on its diagonal (``lu_factor_ex`` does not raise).
    """
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_singular("linalg.lu_factor", info)
    return _factor_result(LU, pivots)


def _swap_rows(xp, pivots, m):
    """The rows ``0..m-1`` after the interchanges ``pivots`` (count, k), 1-based: (count, m)."""
    swaps = pivots.astype(np.int64) - 1
    perm = xp.broadcast_to(xp.arange(m), (swaps.shape[0], m)).copy()
    rows = xp.arange(swaps.shape[0])
    for i in range(swaps.shape[1]):
        p = swaps[:, i]
        first = perm[:, i].copy()
        perm[:, i] = perm[rows, p]
        perm[rows, p] = first
    return perm


@defop("lu_permutation", differentiable=False)
def _lu_permutation(xp, pivots, like, m):
    batch = pivots.shape[:-1]
    pivots = pivots.reshape((math.prod(batch), pivots.shape[-1]))
    lapack = _backend.lapack(xp)
    perm = lapack.row_permutation(pivots, m) if lapack is not None else None
    perm = _swap_rows(xp, pivots, m) if perm is None else perm
    rows = xp.arange(pivots.shape[0])
    P = xp.zeros((pivots.shape[0], m, m), dtype=like.dtype)
    P[rows[:, None], perm, xp.arange(m)] = 1
    return P.reshape(batch + (m, m))


def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True):
    """``(P, L, U)`` with ``A = P @ L @ U`` from ``lu_factor``'s ``(LU, pivots)``; a part not
    unpacked is an empty tensor. Gradients flow to ``LU_data``.

    Raises:
        RuntimeError: for mismatched shapes or non-integer pivots.
    """
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if LU_pivots.dtype.is_floating_point or LU_pivots.dtype.is_complex:
        raise RuntimeError(f"lu_unpack: LU_pivots is expected to be an integer tensor, got {LU_pivots.dtype.name}")
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise RuntimeError(
            f"lu_unpack: Expected LU_pivots.shape == {list(LU_data.shape[:-2]) + [k]} for LU_data of shape "
            f"{list(LU_data.shape)}, got {list(LU_pivots.shape)}"
        )
    empty = LU_data.new_zeros((0,))
    P = _dispatch.apply(_lu_permutation, (LU_pivots, LU_data), (m,)) if unpack_pivots else empty
    if not unpack_data:
        return _unpack_result(P, empty, empty)
    eye = _creation.eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
    return _unpack_result(P, tril(LU_data, -1)[..., :k] + eye, triu(LU_data)[..., :k, :])


def lu(A, *, pivot: bool = True):
    """``(P, L, U)`` with ``A = P @ L @ U``: ``L`` unit lower (m, k), ``U`` upper (k, n), ``k = min(m, n)``.

    >>> import tensor
    >>> P, L, U = tensor.linalg.lu(tensor.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> U
    tensor([[3.0000, 4.0000],
            [0.0000, 0.6667]])
    """
    check_float_matrix("linalg.lu", A, integer_error=NotImplementedError)
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    return _lu_result(*lu_unpack(LU, pivots))


def torch_lu(A, pivot: bool = True, get_infos: bool = False):
    """``torch.lu``: ``(LU, pivots)`` or ``(LU, pivots, infos)``; it raises nothing on singular input."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


def _substitute(xp, t, b, upper):
    """Row-by-row substitution: inf/nan (as LAPACK's trsm) where ``t`` has a zero on its diagonal."""
    n = t.shape[-1]
    x = xp.zeros(np.broadcast_shapes(t.shape[:-1], b.shape[:-1]) + b.shape[-1:], dtype=b.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in reversed(range(n)) if upper else range(n):
            done = slice(i + 1, n) if upper else slice(0, i)
            rest = b[..., i, :] - (t[..., i : i + 1, done] @ x[..., done, :])[..., 0, :]
            x[..., i, :] = rest / t[..., i, i][..., None]
    return x


@defop("solve_triangular", saves=(0,), saves_output=True)
def _solve_triangular(xp, t, b, upper, unitriangular):
    lapack = _backend.lapack(xp)
    n, k = b.shape[-2:]
    count = math.prod(b.shape[:-2])
    solved = lapack.trsm(t.reshape((count, n, n)), b.reshape((count, n, k)), upper, unitriangular) if lapack else None
    if solved is not None:
        return solved.reshape(b.shape)
    t = xp.triu(t) if upper else xp.tril(t)
    if unitriangular:
        n = t.shape[-1]
        t[..., range(n), range(n)] = 1
    try:
        return xp.linalg.solve(t, b)
    except np.linalg.LinAlgError:
        return _substitute(xp, t, b, upper)


@_solve_triangular.derivative
def _(node, g):
    (T,) = node.saved
    upper, unitriangular = node.params
    gB = solve_triangular(conj_transpose(T), g, upper=not upper, unitriangular=unitriangular)
    gT = -(gB @ conj_transpose(node.output)) if node.needs_input_grad[0] else None
    if gT is not None:
        offset = 1 if unitriangular else 0
        gT = triu(gT, offset) if upper else tril(gT, -offset)
    return gT, gB


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):
    """The solution of ``A X = B`` (``X A = B`` with ``left=False``) reading only ``A``'s upper or
    lower triangle (and a unit diagonal with ``unitriangular``); gradients reach only that triangle.
    A zero on the diagonal gives inf/nan, as LAPACK's ``trsm``.

    Raises:
        RuntimeError: for non-square ``A``, mismatched shapes or dtypes.
        NotImplementedError: for integer or 16-bit input (as PyTorch's kernel).
    """
    check_float_matrix("linalg.solve_triangular", A, square=True, integer_error=NotImplementedError)
    if not left:
        At, Bt = conj_transpose(A), conj_transpose(B)
        return conj_transpose(solve_triangular(At, Bt, upper=not upper, unitriangular=unitriangular))
    if B.ndim < 2 or B.shape[-2] != A.shape[-1]:
        raise RuntimeError(
            f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
            f"({A.shape[-2]}x{A.shape[-1]} and {list(B.shape)})"
        )
    if A.dtype is not B.dtype:
        raise RuntimeError(
            f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of type "
            f"{A.dtype.name} and B of type {B.dtype.name} instead"
        )
    batch = tuple(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]))
    A, B = A.expand(batch + A.shape[-2:]), B.expand(batch + B.shape[-2:])
    return _dispatch.apply(_solve_triangular, (A, B), (upper, unitriangular))


def linalg_lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False):
    """The solution of ``A X = B`` from ``A``'s ``lu_factor`` (``adjoint=True``: ``A^H X = B``;
    ``left=False``: ``X A = B``). Differentiable in ``LU`` and ``B``.

    Raises:
        RuntimeError: for non-square ``LU``, mismatched shapes of ``LU``, ``pivots`` and ``B``.
    """
    check_float_matrix("linalg.lu_solve", LU, square=True)
    if not left:
        return conj_transpose(linalg_lu_solve(LU, pivots, conj_transpose(B), adjoint=not adjoint))
    if B.ndim < 2 or B.shape[-2] != LU.shape[-1]:
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B "
            f"({LU.shape[-2]}x{LU.shape[-1]} and {list(B.shape)})"
        )
    P = lu_unpack(LU, pivots, unpack_data=False).P
    if adjoint:
        Y = solve_triangular(conj_transpose(LU), B, upper=False)
        return P @ solve_triangular(conj_transpose(LU), Y, upper=True, unitriangular=True)
    Y = solve_triangular(LU, P.mT @ B, upper=False, unitriangular=True)
    return solve_triangular(LU, Y, upper=True)


def lu_solve(b, LU_data, LU_pivots):
    """``torch.lu_solve``: ``linalg.lu_solve(LU_data, LU_pivots, b)``."""
    return linalg_lu_solve(LU_data, LU_pivots, b)
