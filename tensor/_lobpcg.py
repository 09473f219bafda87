"""``tensor.lobpcg``: a few extreme eigenpairs of a large symmetric (generalized) eigenproblem by
the locally optimal block preconditioned conjugate gradient method (Knyazev, 2001).

Note [LOBPCG]: each iteration does Rayleigh-Ritz on the span of the current block ``X``, its
(preconditioned) residuals ``W`` and the previous search directions ``P``. The basis is made
``B``-orthonormal by its Gram matrix's eigendecomposition (SVQB): directions whose Gram
eigenvalue falls below ``eps * largest`` are dropped, which keeps the step stable when ``P`` or
``W`` become nearly dependent near convergence. The iteration runs without recording; the
eigenvalues returned are the Rayleigh quotients ``x^T A x`` (``x`` detached, B-normalised), whose gradient with
respect to ``A`` is ``x x^T``, the eigenvalue derivative. The eigenvectors returned are ``x`` minus
one Newton step for ``A x = lambda x`` on ``x``'s orthogonal complement, ``(A - lambda)^+ (A x -
lambda x)``: a correction of the size of the residual whose derivative is the eigenvector's,
``-(A - lambda)^+ dA x``, the formula for a simple eigenvalue (``B`` given: eigenvalues only).
"""

from __future__ import annotations

import itertools

from . import _creation, _random
from ._typeinfo import finfo
from .ops.decomp import eigh, solve
from .ops.join_split import cat

__all__ = ["lobpcg"]


def _svqb(S, B):
    """A ``B``-orthonormal basis of the columns of ``S`` (nearly dependent directions dropped)."""
    BS = S if B is None else B @ S
    gram = S.mT @ BS
    values, vectors = eigh(0.5 * (gram + gram.mT))
    keep = values > values.amax() * finfo(S.dtype).eps * S.shape[-1] * 10
    keep_index = keep.nonzero().reshape(-1)
    vectors = vectors.index_select(-1, keep_index) / values.index_select(-1, keep_index).sqrt()
    return S @ vectors


def _rayleigh_ritz(A, B, S, n: int, largest: bool):
    """The ``n`` extreme Ritz values and vectors of ``A`` on the span of ``S``, and ``S``'s basis."""
    Q = _svqb(S, B)
    T = Q.mT @ (A @ Q)
    values, vectors = eigh(0.5 * (T + T.mT))
    order = slice(values.shape[-1] - n, None) if largest else slice(0, n)
    values, vectors = values[order], vectors[:, order]
    if largest:
        values, vectors = values.flip(-1), vectors.flip(-1)
    return values, vectors, Q


def _check(A, k, n, X, m):
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"lobpcg: A must be a square 2-D matrix, got shape {list(A.shape)}")
    if not A.dtype.is_floating_point:
        raise ValueError(f"lobpcg: A must be a real floating point matrix, got {A.dtype.name}")
    if X is not None and (X.ndim != 2 or X.shape[0] != m):
        raise ValueError(f"lobpcg: X must be a 2-D matrix with {m} rows, got shape {list(X.shape)}")
    if not 0 < k <= n:
        raise ValueError(f"lobpcg: expected 0 < k <= n, got k={k}, n={n}")
    if m < 3 * n:
        raise ValueError(
            f"LPBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x the "
            f"number of requested eigenpairs (={n})"
        )


def lobpcg(
    A,
    k: int | None = None,
    B=None,
    X=None,
    n: int | None = None,
    iK=None,
    niter: int | None = None,
    tol: float | None = None,
    largest: bool | None = None,
    method: str | None = None,
    tracker=None,
    ortho_iparams=None,
    ortho_fparams=None,
    ortho_bparams=None,
):
    """The ``k`` largest (``largest=False``: smallest) eigenpairs ``(E, X)`` of symmetric ``A``
    (of ``A x = lambda B x`` with symmetric positive-definite ``B``), as ``torch.lobpcg``.

    ``X`` is the initial block (``n`` random columns by default, ``n = k``); ``iK`` a
    preconditioner applied to the residuals; iteration stops when every residual
    ``|A x - lambda B x| / ((|A| + |lambda| |B|) |x|)`` is below ``tol`` (the square root of the
    dtype's eps by default) or after ``niter`` iterations (1000; -1: until convergence). ``E``
    and ``X`` have gradients with respect to ``A`` (symmetrised, as torch's; ``E`` only when ``B``
    is given; Note [LOBPCG]); ``method``, ``tracker`` and the
    ``ortho_*`` tuning parameters of torch's implementation are not used.

        >>> import tensor
        >>> tensor.lobpcg(tensor.diag(tensor.arange(1.0, 10.0, dtype=tensor.float64)), k=2)[0]
        tensor([9.0000, 8.0000], dtype=tensor.float64)

    Raises:
        ValueError: for a non-square or non-float ``A``, a bad ``X``, ``k`` or ``n``, or
            ``A`` with fewer than ``3 n`` rows (as torch).
    """
    m = A.shape[-1] if A.ndim else 0
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if X is None else X.shape[-1]) if n is None else n
    _check(A, k, n, X, m)
    largest = True if largest is None else largest
    niter = 1000 if niter is None else niter
    tol = finfo(A.dtype).eps ** 0.5 if tol is None else tol
    # The iteration runs on detached tensors: nothing is recorded (Note [LOBPCG]).
    Ad, B, iK = (None if t is None else t.detach() for t in (A, B, iK))
    start = _random.randn(m, n, dtype=A.dtype, device=A.device) if X is None else X.detach()
    if start.shape[-1] < n:
        start = cat([start, _random.randn(m, n - start.shape[-1], dtype=A.dtype, device=A.device)], -1)
    norm_A = Ad.abs().sum(0).amax()
    norm_B = 1.0 if B is None else B.abs().sum(0).amax()
    values, C, Q = _rayleigh_ritz(Ad, B, start, n, largest)
    Xb, P = Q @ C, None
    for _ in range(niter) if niter >= 0 else itertools.count():
        BX = Xb if B is None else B @ Xb
        R = Ad @ Xb - BX * values
        error = R.norm(dim=0) / ((norm_A + values.abs() * norm_B) * Xb.norm(dim=0))
        if bool((error[:k] < tol).all()):
            break
        W = R if iK is None else iK @ R
        values, C, Q = _rayleigh_ritz(Ad, B, cat([Xb, W] if P is None else [Xb, W, P], -1), n, largest)
        X_new = Q @ C
        P = X_new - Xb @ (BX.mT @ X_new)  # the step, B-orthogonal to the old block
        Xb = X_new
    Xb, values = Xb[:, :k], values[:k]
    if not A.requires_grad or B is not None:
        return (Xb * (A @ Xb)).sum(0), Xb
    AX = (0.5 * (A + A.mT)) @ Xb  # gradients for the symmetric A, as torch's
    return (Xb * AX).sum(0), Xb - _newton_step(Ad, Xb, values, AX)


def _newton_step(A, X, values, AX):
    """``(A - lambda_i)^+ (I - x_i x_i^T) (A x_i - lambda_i x_i)`` for each eigenpair: zero at an
    eigenpair (up to the residual), with the eigenvector's derivative ``-(A - lambda_i)^+ dA x_i``
    (Note [LOBPCG]). ``A`` is the detached matrix; the gradient flows through ``AX``."""
    residual = AX - X * values
    residual = residual - X * (X * residual).sum(0)
    eye = _creation.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    shifted = (A - values[:, None, None] * eye + X.mT.unsqueeze(-1) * X.mT.unsqueeze(-2)).detach()
    return solve(shifted, residual.mT.unsqueeze(-1)).squeeze(-1).mT
