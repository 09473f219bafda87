"""Randomized low-rank factorizations: ``svd_lowrank`` and ``pca_lowrank`` (PyTorch's
``torch.svd_lowrank``/``torch.pca_lowrank``).

Note [Randomized SVD]
    The method is Halko, Martinsson and Tropp's ("Finding structure with randomness", 2009):
    a Gaussian test matrix ``R`` (``n x q``) gives a sample ``A R`` of ``A``'s range, whose
    orthonormal basis ``Q`` (a QR decomposition) is sharpened by ``niter`` rounds of subspace
    iteration (``A^H Q``, then ``A`` times that, re-orthonormalised each time, which keeps
    rounding from collapsing the small directions); then ``A ~ Q (Q^H A)`` and the SVD of the
    small ``q x n`` matrix ``Q^H A`` gives ``A``'s leading singular triplets. For ``m < n`` the
    method runs on ``A^H``, so that the basis is taken in the smaller dim. An ``A`` of rank at
    most ``q`` is factored exactly (up to rounding). Batched over leading dims, and
    differentiable, as every step is a differentiable op; the draws come from the default
    generator (``tensor.manual_seed`` makes them repeatable).
"""

from __future__ import annotations

from . import _random, linalg
from ._tensor import Tensor

__all__ = ["pca_lowrank", "svd_lowrank"]


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """``(U, S, V)``, an approximate rank-``q`` SVD of ``A - M`` (``M`` broadcast to ``A``'s
    shape; None: ``A``), ``A - M ~ U diag(S) V^H``, by randomized subspace iteration with
    ``niter`` rounds (Note [Randomized SVD]). ``U`` is ``(*, m, q)``, ``S`` ``(*, q)`` and ``V``
    ``(*, n, q)``.

    Raises:
        ValueError: for a negative ``niter`` or a ``q`` outside ``[0, min(m, n)]`` (PyTorch checks
            these in ``pca_lowrank`` only; its ``svd_lowrank`` returns other shapes for them).
    """
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    m, n = A.shape[-2:]
    _check(q, niter, m, n)
    if M is not None:
        A = A - M.broadcast_to(A.shape)
    wide = m < n
    if wide:
        A = A.mH
    Q = _range_basis(A, q, niter)
    U, S, Vh = linalg.svd(Q.mH @ A, full_matrices=False)
    U, V = Q @ U, Vh.mH
    return (V, S, U) if wide else (U, S, V)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """``(U, S, V)``, the leading ``q`` principal directions of the rows of ``A`` (of ``A`` less its
    column means, with ``center``): ``svd_lowrank`` of the centred matrix. ``q`` defaults to
    ``min(6, m, n)``. The principal components are ``A @ V``; ``S ** 2 / (m - 1)`` their variances.

    Raises:
        ValueError: for a negative ``niter`` or a ``q`` outside ``[0, min(m, n)]``.
    """
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    _check(q, niter, m, n)
    if center:
        A = A - A.mean(dim=-2, keepdim=True)
    return svd_lowrank(A, q, niter=niter)


def _check(q, niter, m: int, n: int) -> None:
    if not (isinstance(q, int) and 0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (isinstance(niter, int) and niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")


def _range_basis(A: Tensor, q: int, niter: int) -> Tensor:
    """An orthonormal ``(*, m, q)`` basis of (most of) ``A``'s range (Note [Randomized SVD])."""
    dtype = A.dtype if A.is_floating_point() or A.is_complex() else None
    sample = _random.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    Q = linalg.qr(A @ sample).Q
    for _ in range(niter):
        Q = linalg.qr(A.mH @ Q).Q
        Q = linalg.qr(A @ Q).Q
    return Q
