"""Matrix decompositions and inverses with derivatives: inv, solve, det, slogdet, cholesky, eigh,
svd, qr (the primitives of ``tensor.linalg``).

Note [Packed outputs]: the op table's kernels return one array, so decompositions with several
outputs (eigh, svd, qr) return them flattened and concatenated along the last dim; the public
function slices them apart (differentiable views), and the derivative splits the incoming
gradient the same way (a complex input's real eigen/singular values are packed as complex and
taken back with ``real``). Derivatives are PyTorch's formulas, written in tensor ops so second
derivatives work; for complex input they follow its convention (the gradient of a real loss is
the conjugate Wirtinger derivative), which turns the real formulas' transposes into conjugate
transposes.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _autocast, _dispatch
from .comparison import where
from .diagonals import diag_embed, tril
from .join_split import cat
from .registry import defop

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


def conj_transpose(x):
    """The conjugate transpose of the last two dims (the transpose for real tensors)."""
    return x.mT.conj() if x.dtype.is_complex else x.mT


def check_float_matrix(name: str, A, *, square: bool = False, integer_error: type = RuntimeError) -> None:
    """Raise torch's errors unless ``A`` is a (batch of) float32/64 or complex matrix:
    RuntimeError for the rank or shape, ``integer_error`` for an integer dtype (torch's LAPACK
    kernels raise NotImplementedError, its checked entry points RuntimeError), NotImplementedError
    for 16- and 8-bit floats (LAPACK has none, and torch's CPU kernels refuse them too)."""
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices"
        )
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise integer_error(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.name}")
    if A.dtype.is_floating_point and A.dtype.itemsize < 4:
        raise NotImplementedError(f"{name}: not implemented for {A.dtype.name}; convert to float32 first")


def _eye_like(A):
    n = A.shape[-1]
    return diag_embed(A.new_ones(A.shape[:-2] + (n,)))


@defop("inv", saves_output=True)
def _inv(xp, a):
    return _checked("inv", xp.linalg.inv, a)


@_inv.derivative
def _(node, g):
    inverse_h = conj_transpose(node.output)
    return (-(inverse_h @ g @ inverse_h),)


@_autocast.as_op("linalg_inv")
def inv(A):
    """The inverse of each square matrix in ``A``.

    Raises:
        RuntimeError: for non-square or integer input.
        LinAlgError: if a matrix is singular.
    """
    check_float_matrix("linalg.inv", A, square=True)
    return _dispatch.apply_unary(_inv, A)


@defop("solve", saves=(0,), saves_output=True)
def _solve(xp, a, b):
    return _checked("solve", xp.linalg.solve, a, b)


@_solve.derivative
def _(node, g):
    (a,) = node.saved
    needs_a, needs_b = node.needs_input_grad
    gb = solve(conj_transpose(a), g)  # the public solve expanded both operands to one batch shape
    return (-(gb @ conj_transpose(node.output)) if needs_a else None), (gb if needs_b else None)


@_autocast.as_op("linalg_solve")
def solve(A, B, *, left: bool = True):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``); ``B`` may be a (batch of) vector.

    Raises:
        RuntimeError: for non-square ``A`` or mismatched shapes.
        LinAlgError: if ``A`` is singular.
    """
    check_float_matrix("linalg.solve", A, square=True)
    if not left:
        return solve(A.mT, B.mT).mT  # X A = B  <=>  A^T X^T = B^T
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
    # d det(A) = tr(adj(A) dA), so gA = g adj(A)^H: conj(det(A)) A^-H for invertible A; for singular
    # A (PyTorch too) the adjugate from the SVD, adj(A)^H = conj(det(U) det(Vh)) U adj(S) Vh with
    # adj(S)_i = prod_{j != i} s_j.
    (A,) = node.saved
    if not bool((node.output == 0).any()):
        return ((g * node.output.conj())[..., None, None] * conj_transpose(inv(A)),)
    U, S, Vh = svd(A, full_matrices=False)
    ones = S.new_ones(S.shape[:-1] + (1,))
    before = cat([ones, S[..., :-1]], -1).cumprod(-1)
    after = cat([ones, S.flip(-1)[..., :-1]], -1).cumprod(-1).flip(-1)
    sign = (det(U) * det(Vh)).detach().conj()
    adj_t = (U * (before * after).unsqueeze(-2)) @ Vh
    return ((g * sign)[..., None, None] * adj_t,)


def det(A):
    """The determinant of each square matrix in ``A``.

    Raises:
        RuntimeError: for non-square or integer input.
    """
    check_float_matrix("linalg.det", A, square=True)
    return _dispatch.apply_unary(_det, A)


@defop("slogdet_sign", saves=(0,), saves_output=True)
def _slogdet_sign(xp, a):
    return xp.linalg.slogdet(a)[0]


@_slogdet_sign.derivative
def _(node, g):
    # A real sign is piecewise constant; a complex one, det/|det|, moves with the phase of det:
    # gA = i Im(g conj(sign)) A^-H, as PyTorch.
    if not node.output.dtype.is_complex:
        return (None,)
    phase = 1j * (g * node.output.conj()).imag
    return (phase[..., None, None] * conj_transpose(inv(node.saved[0])),)


@defop("logabsdet", saves=(0,))
def _logabsdet(xp, a):
    return xp.linalg.slogdet(a)[1]


_logabsdet.derivative(lambda node, g: (g[..., None, None] * conj_transpose(inv(node.saved[0])),))


def slogdet(A):
    """``(sign, log|det|)`` of each square matrix in ``A`` (``sign`` is ``det/|det|``, complex
    for complex ``A``; ``log|det|`` real).

    Raises:
        RuntimeError: for non-square or integer input.
    """
    check_float_matrix("linalg.slogdet", A, square=True)
    return _slogdet_result(_dispatch.apply_unary(_slogdet_sign, A), _dispatch.apply_unary(_logabsdet, A))


@defop("cholesky", saves_output=True)
def _cholesky(xp, a):
    return _checked("cholesky", xp.linalg.cholesky, a)


@_cholesky.derivative
def _(node, g):
    # PyTorch's cholesky_backward: gA = L^-H Phi L^-1 with M = tril(L^H gL) and
    # Phi = (M + tril(M, -1)^H) / 2 (Hermitian off the diagonal, which keeps M's halved).
    L = node.output
    M = tril(conj_transpose(L) @ g)
    phi = 0.5 * (M + conj_transpose(tril(M, -1)))
    L_inv = inv(L)
    return (conj_transpose(L_inv) @ phi @ L_inv,)


@_autocast.as_op("linalg_cholesky")
def cholesky(A, *, upper: bool = False):
    """The Cholesky factor ``L`` (lower; ``upper=True``: ``L^H``) of Hermitian positive-definite ``A``.

    Raises:
        RuntimeError: for non-square or integer input.
        LinAlgError: if a matrix is not positive-definite.
    """
    check_float_matrix("linalg.cholesky", A, square=True)
    L = _dispatch.apply_unary(_cholesky, A)
    return conj_transpose(L) if upper else L


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


def is_all_zero(t) -> bool:
    """Whether ``t`` is all zeros: the gradient an unused output of a packed op receives (PyTorch's
    "undefined" gradient), for which the derivatives skip their eigen/singular-vector terms, whose
    ``1 / (s_j - s_i)`` factors are infinite for repeated values."""
    return not bool(t.any())


def _off_diagonal_inverse(values):
    """``F[i, j] = 1 / (values[j] - values[i])`` off the diagonal, 0 on it."""
    diff = values.unsqueeze(-2) - values.unsqueeze(-1)
    eye = _eye_like(diff) != 0
    return where(eye, 0.0, 1.0 / where(eye, 1.0, diff))


@defop("eigh", saves_output=True)
def _eigh(xp, a, uplo):
    values, vectors = _checked("eigh", xp.linalg.eigh, a, uplo)
    return xp.concatenate([values[..., None, :], vectors], axis=-2)


def _check_phase_invariant(name, VhgV):
    """PyTorch's check that a loss does not depend on the phases of complex singular/eigen vectors
    (the imaginary part of ``diag(V^H gV)`` must vanish)."""
    if not VhgV.dtype.is_complex:
        return
    phase = VhgV.diagonal(0, -2, -1).imag
    if not bool((phase.abs() <= 1e-2).all()):
        raise RuntimeError(
            f"{name}: The eigenvectors in the complex case are specified up to multiplication by e^{{i phi}}. "
            "The specified loss function depends on this quantity, so it is ill-defined."
        )


@_eigh.derivative
def _(node, g):
    # PyTorch's linalg_eig_backward for Hermitian A: V^H gV projected on the skew-Hermitian
    # matrices, so the gradient is Hermitian.
    values, vectors = node.output[..., 0, :].real, node.output[..., 1:, :]
    g_values, g_vectors = g[..., 0, :].real, g[..., 1:, :]
    vectors_h = conj_transpose(vectors)
    if is_all_zero(g_vectors):
        return ((vectors * g_values.unsqueeze(-2)) @ vectors_h,)
    VhgV = vectors_h @ g_vectors
    _check_phase_invariant("linalg_eigh_backward", VhgV)
    skew = 0.5 * (VhgV - conj_transpose(VhgV))
    inner = diag_embed(g_values) + _off_diagonal_inverse(values) * skew
    return (vectors @ inner @ vectors_h,)


@_autocast.as_op("linalg_eigh")
def eigh(A, UPLO: str = "L"):
    """Eigenvalues (ascending, real) and orthonormal eigenvectors of Hermitian ``A`` (its ``UPLO``
    triangle).

    Raises:
        RuntimeError: for non-square input.
        NotImplementedError: for integer input (as PyTorch).
        LinAlgError: if the algorithm does not converge.
    """
    check_float_matrix("linalg.eigh", A, square=True, integer_error=NotImplementedError)
    packed = _dispatch.apply_unary(_eigh, A, (UPLO,))
    values = packed[..., 0, :]
    return _eigh_result(values.real if A.dtype.is_complex else values, packed[..., 1:, :])


@_autocast.as_op("linalg_eigvalsh")
def eigvalsh(A, UPLO: str = "L"):
    """The eigenvalues (ascending) of symmetric ``A``."""
    return eigh(A, UPLO).eigenvalues


def _flat_matrices(x):
    """``x`` (..., m, n) as (..., m * n) (also for an empty batch, which ``reshape(-1)`` refuses)."""
    return x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))


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
    return xp.concatenate([_flat_matrices(u), s.astype(u.dtype, copy=False), _flat_matrices(vh)], axis=-1)


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
    if U.dtype.is_complex:
        S, gS = S.real, gS.real
    if is_all_zero(gU) and is_all_zero(gVh):
        return ((U * gS.unsqueeze(-2)) @ Vh,)
    V, gV = conj_transpose(Vh), conj_transpose(gVh)
    UhgU, VhgV = conj_transpose(U) @ gU, conj_transpose(V) @ gV
    _check_phase_invariant("linalg_svd_backward", UhgU + VhgV)
    skew_u, skew_v = UhgU - conj_transpose(UhgU), VhgV - conj_transpose(VhgV)
    F = _off_diagonal_inverse(S * S)
    inner = (F * skew_u) * S.unsqueeze(-2) + S.unsqueeze(-1) * (F * skew_v) + diag_embed(gS)
    if U.dtype.is_complex:  # PyTorch's term for the imaginary diagonal of U^H gU
        inner = inner + diag_embed(skew_u.diagonal(0, -2, -1) / (2 * S))
    gA = U @ inner @ Vh
    if m > n:
        gA = gA + ((gU - U @ UhgU) / S.unsqueeze(-2)) @ Vh
    if n > m:
        gA = gA + U @ conj_transpose((gV - V @ VhgV) / S.unsqueeze(-2))
    return (gA,)


@_autocast.as_op("linalg_svd")
def svd(A, full_matrices: bool = True):
    """The singular value decomposition ``A = U diag(S) Vh`` (S real, descending).

    Gradients need ``full_matrices=False`` unless ``A`` is square.

    Raises:
        RuntimeError: for fewer than 2 dims or integer input.
        LinAlgError: if the SVD does not converge.
    """
    check_float_matrix("linalg.svd", A)
    m, n = A.shape[-2:]
    packed = _dispatch.apply_unary(_svd, A, (full_matrices,))
    U, S, Vh = _split(packed, _svd_shapes(m, n, full_matrices))
    return _svd_result(U, S.real if A.dtype.is_complex else S, Vh)


@_autocast.as_op("linalg_svdvals")
def svdvals(A):
    """The singular values of ``A``, descending."""
    return svd(A, full_matrices=False).S


@defop("qr", saves_output=True)
def _qr(xp, a, mode):
    q, r = _checked("qr", xp.linalg.qr, a, mode)
    return xp.concatenate([_flat_matrices(q), _flat_matrices(r)], axis=-1)


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
    # PyTorch's linalg_qr_backward: M = R gR^H - gQ^H Q made Hermitian from its strict lower
    # triangle, with the real part of its diagonal.
    M = R @ conj_transpose(gR) - conj_transpose(gQ) @ Q
    lower = tril(M, -1)
    diagonal = M.diagonal(0, -2, -1)
    hermitian = lower + conj_transpose(lower) + diag_embed(diagonal.real if M.dtype.is_complex else diagonal)
    return (conj_transpose(solve(R, conj_transpose(gQ + Q @ hermitian))),)


@_autocast.as_op("linalg_qr")
def qr(A, mode: str = "reduced"):
    """The QR decomposition ``A = Q R`` (``mode`` 'reduced' or 'complete'; 'r' gives an empty Q).

    Raises:
        RuntimeError: for an unknown ``mode``, fewer than 2 dims or integer input.
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    check_float_matrix("linalg.qr", A)
    m, n = A.shape[-2:]
    kernel_mode = "reduced" if mode == "r" else mode
    packed = _dispatch.apply_unary(_qr, A, (kernel_mode,))
    Q, R = _split(packed, _qr_shapes(m, n, kernel_mode))
    return _qr_result(A.new_zeros((0,)) if mode == "r" else Q, R)


def inverse(input):
    """``linalg.inv`` under its ``torch.inverse`` name."""
    return inv(input)


def logdet(input):
    """``log(det(input))``: NaN for a negative determinant, -inf for a zero one; for a complex
    matrix the principal complex logarithm, ``log|det| + i arg(det)``."""
    sign, logabs = slogdet(input)
    if input.is_complex():
        return logabs + sign.log()  # sign is on the unit circle: its log is i arg(det)
    return where(sign < 0, float("nan"), logabs)


def torch_svd(input, some: bool = True, compute_uv: bool = True):
    """``torch.svd``: ``(U, S, V)`` with ``V`` (not ``Vh``); reduced unless ``some=False``."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        return _torch_svd_result(U.new_zeros(U.shape), S, Vh.new_zeros(Vh.shape))
    return _torch_svd_result(U, S, conj_transpose(Vh))
