"""Matrix decompositions and inverses with derivatives: inv, solve, det, slogdet, cholesky, eigh,
svd, qr (the primitives of ``tensor.linalg``).

Note [Packed outputs]: the op table's kernels return one array, so decompositions with several
outputs (eigh, svd, qr) return them flattened and concatenated along the last dim; the public
function slices them apart (differentiable views), and the derivative splits the incoming
gradient the same way. Derivatives are the real-valued formulas PyTorch uses, written in tensor
ops, so second derivatives work.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _dispatch
from .elementwise import where
from .layout import diag_embed, tril
from .registry import defop
from .shape import cat

# The top-level (torch.*) names; the rest are reached through tensor.linalg.
__all__ = ["det", "slogdet", "logdet", "inverse", "cholesky", "qr"]

_eigh_result = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
_svd_result = namedtuple("svd", ["U", "S", "Vh"])
_torch_svd_result = namedtuple("svd", ["U", "S", "V"])
_qr_result = namedtuple("qr", ["Q", "R"])
_slogdet_result = namedtuple("slogdet", ["sign", "logabsdet"])


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular or not positive-definite matrix)."""


def _checked(name, fn, *args):
    try:
        return fn(*args)
    except np.linalg.LinAlgError as exc:
        raise LinAlgError(f"linalg.{name}: {exc}") from None


def _square(name, A):
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"linalg.{name}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got {A.dtype.name}")


def _eye_like(A):
    n = A.shape[-1]
    return diag_embed(A.new_ones(A.shape[:-2] + (n,)))


@defop("inv", saves_output=True)
def _inv(xp, a):
    return _checked("inv", xp.linalg.inv, a)


_inv.derivative(lambda node, g: (-(node.output.mT @ g @ node.output.mT),))


def inv(A):
    """The inverse of each square matrix in ``A``.

    Raises:
        RuntimeError: for non-square or integer input.
        LinAlgError: if a matrix is singular.
    """
    _square("inv", A)
    return _dispatch.apply_unary(_inv, A)


@defop("solve", saves=(0,), saves_output=True)
def _solve(xp, a, b):
    return _checked("solve", xp.linalg.solve, a, b)


@_solve.derivative
def _(node, g):
    (a,) = node.saved
    needs_a, needs_b = node.needs_input_grad
    gb = solve(a.mT, g)  # the public solve expanded both operands to one batch shape
    return (-(gb @ node.output.mT) if needs_a else None), (gb if needs_b else None)


def solve(A, B, *, left: bool = True):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``); ``B`` may be a (batch of) vector.

    Raises:
        RuntimeError: for non-square ``A`` or mismatched shapes.
        LinAlgError: if ``A`` is singular.
    """
    _square("solve", A)
    if not left:
        return solve(A.mT, B.mT).mT
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2] != A.shape[-1]:
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            f"({A.shape[-2]}x{A.shape[-1]} and {rhs.shape[-2]}x{rhs.shape[-1]})"
        )
    if rhs.dtype is not A.dtype:
        rhs = rhs.to(A.dtype)
    batch = np.broadcast_shapes(A.shape[:-2], rhs.shape[:-2])
    out = _dispatch.apply(_solve, (A.expand(batch + A.shape[-2:]), rhs.expand(batch + rhs.shape[-2:])))
    return out.squeeze(-1) if vector else out


@defop("det", saves=(0,), saves_output=True)
def _det(xp, a):
    return xp.linalg.det(a)


@_det.derivative
def _(node, g):
    # d det(A) = tr(adj(A) dA): det(A) A^-T for invertible A; for singular A (PyTorch too) the
    # adjugate from the SVD, adj(A)^T = det(U) det(V) U adj(S) V^T, adj(S)_i = prod_{j != i} s_j.
    (A,) = node.saved
    if not bool((node.output == 0).any()):
        return ((g * node.output)[..., None, None] * inv(A).mT,)
    U, S, Vh = svd(A, full_matrices=False)
    ones = S.new_ones(S.shape[:-1] + (1,))
    before = cat([ones, S[..., :-1]], -1).cumprod(-1)
    after = cat([ones, S.flip(-1)[..., :-1]], -1).cumprod(-1).flip(-1)
    sign = (det(U) * det(Vh)).detach()
    adj_t = (U * (before * after).unsqueeze(-2)) @ Vh
    return ((g * sign)[..., None, None] * adj_t,)


def det(A):
    """The determinant of each square matrix in ``A``.

    Raises:
        RuntimeError: for non-square or integer input.
    """
    _square("det", A)
    return _dispatch.apply_unary(_det, A)


@defop("slogdet_sign", differentiable=False)
def _slogdet_sign(xp, a):
    return xp.linalg.slogdet(a)[0]


@defop("logabsdet", saves=(0,))
def _logabsdet(xp, a):
    return xp.linalg.slogdet(a)[1]


_logabsdet.derivative(lambda node, g: (g[..., None, None] * inv(node.saved[0]).mT,))


def slogdet(A):
    """``(sign, log|det|)`` of each square matrix in ``A``; the gradient flows through ``logabsdet``."""
    _square("slogdet", A)
    return _slogdet_result(_dispatch.apply_unary(_slogdet_sign, A), _dispatch.apply_unary(_logabsdet, A))


@defop("cholesky", saves_output=True)
def _cholesky(xp, a):
    return _checked("cholesky", xp.linalg.cholesky, a)


@_cholesky.derivative
def _(node, g):
    # gA = sym(L^-T Phi(L^T gL) L^-1), Phi: the lower triangle with the diagonal halved.
    L = node.output
    phi = tril(L.mT @ tril(g))
    phi = phi - 0.5 * diag_embed(phi.diagonal(0, -2, -1))
    L_inv = inv(L)
    s = L_inv.mT @ phi @ L_inv
    return (0.5 * (s + s.mT),)


def cholesky(A, *, upper: bool = False):
    """The Cholesky factor ``L`` (lower; ``upper=True``: ``L^T``) of symmetric positive-definite ``A``.

    Raises:
        LinAlgError: if a matrix is not positive-definite.
    """
    _square("cholesky", A)
    L = _dispatch.apply_unary(_cholesky, A)
    return L.mT if upper else L


def cholesky_with_info(A):
    """``(L, info)`` for a batch ``cholesky`` refused: the factorization column by column, as
    LAPACK's ``potrf`` does it, with ``info`` 0 for a positive-definite matrix and otherwise the
    order of its first leading minor that is not, where its ``L`` stops (the rest zero). Not
    differentiable (``linalg.cholesky_ex``'s failure path)."""
    xp = A._device.backend.xp
    a = A._data.reshape((-1,) + tuple(A.shape[-2:]))
    count, n = a.shape[0], a.shape[-1]
    L = xp.zeros_like(a)
    info = xp.zeros(count, dtype=np.int32)
    alive = xp.ones(count, dtype=bool)
    for j in range(n):
        row = L[:, j, :j]
        d = (a[:, j, j] - (row * row.conj()).sum(-1)).real
        failed = alive & ~(d > 0)
        info[failed] = j + 1
        alive &= ~failed
        pivot = xp.sqrt(xp.where(alive, d, 1.0))
        L[:, j, j] = xp.where(alive, pivot, 0)
        below = a[:, j + 1 :, j] - (L[:, j + 1 :, :j] * row.conj()[:, None, :]).sum(-1)
        L[:, j + 1 :, j] = xp.where(alive[:, None], below / pivot[:, None], 0)
    return _dispatch.make(L.reshape(A.shape), A._device), _dispatch.make(info.reshape(A.shape[:-2]), A._device)


def _off_diagonal_inverse(values):
    """``F[i, j] = 1 / (values[j] - values[i])`` off the diagonal, 0 on it."""
    diff = values.unsqueeze(-2) - values.unsqueeze(-1)
    eye = _eye_like(diff) != 0
    return where(eye, 0.0, 1.0 / where(eye, 1.0, diff))


@defop("eigh", saves_output=True)
def _eigh(xp, a, uplo):
    values, vectors = _checked("eigh", xp.linalg.eigh, a, uplo)
    return xp.concatenate([values[..., None, :], vectors], axis=-2)


@_eigh.derivative
def _(node, g):
    values, vectors = node.output[..., 0, :], node.output[..., 1:, :]
    g_values, g_vectors = g[..., 0, :], g[..., 1:, :]
    inner = diag_embed(g_values) + _off_diagonal_inverse(values) * (vectors.mT @ g_vectors)
    return (vectors @ inner @ vectors.mT,)


def eigh(A, UPLO: str = "L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric ``A`` (its ``UPLO`` triangle)."""
    _square("eigh", A)
    packed = _dispatch.apply_unary(_eigh, A, (UPLO,))
    return _eigh_result(packed[..., 0, :], packed[..., 1:, :])


def eigvalsh(A, UPLO: str = "L"):
    """The eigenvalues (ascending) of symmetric ``A``."""
    return eigh(A, UPLO).eigenvalues


def _split(packed, shapes):
    """Slice a Note [Packed outputs] array back into its parts of the given trailing shapes."""
    parts, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        parts.append(packed[..., start : start + size].reshape(packed.shape[:-1] + shape))
        start += size
    return parts


def _svd_shapes(m, n, full):
    k = min(m, n)
    return ((m, m if full else k), (k,), (n if full else k, n))


@defop("svd", saves_output=True)
def _svd(xp, a, full):
    u, s, vh = _checked("svd", xp.linalg.svd, a, full)
    batch = a.shape[:-2]
    return xp.concatenate([u.reshape(batch + (-1,)), s, vh.reshape(batch + (-1,))], axis=-1)


@_svd.derivative
def _(node, g):
    (full,) = node.params
    m, n = node.input_shapes[0][-2:]
    U, S, Vh = _split(node.output, _svd_shapes(m, n, full))
    gU, gS, gVh = _split(g, _svd_shapes(m, n, full))
    if full and m != n:
        raise NotImplementedError(
            "svd backward with full_matrices=True is only defined for square matrices; use full_matrices=False"
        )
    V, gV = Vh.mT, gVh.mT
    UhgU, VhgV = U.mT @ gU, V.mT @ gV
    F = _off_diagonal_inverse(S * S)
    inner = (F * (UhgU - UhgU.mT)) * S.unsqueeze(-2) + S.unsqueeze(-1) * (F * (VhgV - VhgV.mT))
    gA = U @ (inner + diag_embed(gS)) @ Vh
    if m > n:
        gA = gA + ((gU - U @ UhgU) / S.unsqueeze(-2)) @ Vh
    if n > m:
        gA = gA + U @ ((gV - V @ VhgV) / S.unsqueeze(-2)).mT
    return (gA,)


def svd(A, full_matrices: bool = True):
    """The singular value decomposition ``A = U diag(S) Vh`` (S descending).

    Gradients need ``full_matrices=False`` unless ``A`` is square.

    Raises:
        RuntimeError: for fewer than 2 dims or integer input.
        LinAlgError: if the SVD does not converge.
    """
    if A.ndim < 2 or not A.dtype.is_floating_point:
        raise RuntimeError(
            f"linalg.svd: expected a floating point tensor with at least 2 dimensions, got {A.ndim}-d {A.dtype.name}"
        )
    m, n = A.shape[-2:]
    packed = _dispatch.apply_unary(_svd, A, (full_matrices,))
    return _svd_result(*_split(packed, _svd_shapes(m, n, full_matrices)))


def svdvals(A):
    """The singular values of ``A``, descending."""
    return svd(A, full_matrices=False).S


@defop("qr", saves_output=True)
def _qr(xp, a, mode):
    q, r = _checked("qr", xp.linalg.qr, a, mode)
    batch = a.shape[:-2]
    return xp.concatenate([q.reshape(batch + (-1,)), r.reshape(batch + (-1,))], axis=-1)


def _qr_shapes(m, n, mode):
    k = min(m, n)
    return ((m, m if mode == "complete" else k), (m if mode == "complete" else k, n))


@_qr.derivative
def _(node, g):
    (mode,) = node.params
    m, n = node.input_shapes[0][-2:]
    if m < n or (mode == "complete" and m != n):
        raise NotImplementedError("qr backward is implemented for m >= n with mode='reduced'")
    Q, R = _split(node.output, _qr_shapes(m, n, mode))
    gQ, gR = _split(g, _qr_shapes(m, n, mode))
    M = R @ gR.mT - gQ.mT @ Q
    copyltu = tril(M) + tril(M, -1).mT
    return (solve(R, (gQ + Q @ copyltu).mT).mT,)


def qr(A, mode: str = "reduced"):
    """The QR decomposition ``A = Q R`` (``mode`` 'reduced' or 'complete'; 'r' gives an empty Q).

    Raises:
        RuntimeError: for an unknown ``mode`` or fewer than 2 dims.
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    if A.ndim < 2:
        raise RuntimeError(f"linalg.qr: The input tensor A must have at least 2 dimensions (got {A.ndim})")
    m, n = A.shape[-2:]
    kernel_mode = "reduced" if mode == "r" else mode
    packed = _dispatch.apply_unary(_qr, A, (kernel_mode,))
    Q, R = _split(packed, _qr_shapes(m, n, kernel_mode))
    return _qr_result(A.new_zeros((0,)) if mode == "r" else Q, R)


def inverse(input):
    """``linalg.inv`` under its ``torch.inverse`` name."""
    return inv(input)


def logdet(input):
    """``log(det(input))``: NaN for a negative determinant, -inf for a zero one."""
    sign, logabs = slogdet(input)
    return where(sign < 0, float("nan"), logabs)


def torch_svd(input, some: bool = True, compute_uv: bool = True):
    """``torch.svd``: ``(U, S, V)`` with ``V`` (not ``Vh``); reduced unless ``some=False``."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        return _torch_svd_result(U.new_zeros(U.shape), S, Vh.new_zeros(Vh.shape))
    return _torch_svd_result(U, S, Vh.mT)
