"""``tensor.linalg``: PyTorch's ``torch.linalg`` namespace.

The primitives with derivatives live in ``tensor.ops.decomp`` (inv, solve, det, slogdet,
cholesky, eigh, svd, qr) and ``tensor.ops.norms``; the rest are compositions of them.

    >>> import tensor
    >>> A = tensor.tensor([[2.0, 1.0], [1.0, 3.0]])
    >>> tensor.linalg.solve(A, tensor.tensor([3.0, 5.0]))
    tensor([0.8000, 1.4000])
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from . import _autocast, _backend, _dispatch, _dtype
from .ops.comparison import where
from .ops.decomp import (
    LinAlgError,
    _checked,
    _eye_like,
    cholesky,
    cholesky_with_info,
    det,
    eigh,
    eigvalsh,
    inv,
    is_all_zero,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from .ops.diagonals import diag_embed
from .ops.diagonals import diagonal as _diagonal
from .ops.householder import householder_product
from .ops.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .ops.linalg import matmul
from .ops.lu import check_float_matrix, conj_transpose, lu, lu_factor, lu_factor_ex, solve_triangular
from .ops.lu import linalg_lu_solve as lu_solve
from .ops.math_extra import cross as _cross
from .ops.norms import matrix_norm, vector_norm
from .ops.registry import defop

__all__ = [
    "LinAlgError",
    "norm",
    "vector_norm",
    "matrix_norm",
    "inv",
    "inv_ex",
    "solve",
    "solve_ex",
    "det",
    "slogdet",
    "svd",
    "svdvals",
    "qr",
    "cholesky",
    "cholesky_ex",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "lstsq",
    "pinv",
    "matrix_power",
    "matrix_rank",
    "cross",
    "multi_dot",
    "vander",
    "matmul",
    "diagonal",
    "vecdot",
    "matrix_exp",
    "cond",
    "solve_triangular",
    "tensorinv",
    "tensorsolve",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "householder_product",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
]

_lstsq_result = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
_eig_result = namedtuple("eig", ["eigenvalues", "eigenvectors"])
# torch.return_types' names: ``inverse``/``L``/``result``, then ``info``
_inv_ex_result = namedtuple("linalg_inv_ex", ["inverse", "info"])
_cholesky_ex_result = namedtuple("linalg_cholesky_ex", ["L", "info"])
_solve_ex_result = namedtuple("linalg_solve_ex", ["result", "info"])


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """A vector norm (1-d input, an int ``dim``, or ``ord=None``) or a matrix norm (2-d input or a
    2-tuple ``dim``), as ``torch.linalg.norm`` chooses.

    Raises:
        RuntimeError: for a matrix ``ord`` on an input that is not a matrix, or an ``ord`` without
            ``dim`` on an input that is neither 1-d nor 2-d.
    """
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is None and A.ndim not in (1, 2):
        raise RuntimeError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D."
        )
    if dim is None and A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: ord={ord!r} needs a matrix (2-d input or a 2-tuple dim)")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def _info(A):
    return A.new_zeros(A.shape[:-2], dtype=_dtype.int32)


@_autocast.as_op("linalg_inv_ex")
def inv_ex(A, *, check_errors: bool = False):
    """``(inverse, info)``: ``inv(A)`` with ``info`` 0 per matrix; for a singular matrix ``info`` is
    the (1-based) index of its LU factor's first zero pivot and ``inverse`` holds what solving
    with that factor gives (infinities), as PyTorch's (that result is not differentiable).

    Raises:
        LinAlgError: with ``check_errors``, for a singular matrix.
    """
    try:
        return _inv_ex_result(inv(A), _info(A))
    except LinAlgError:
        if check_errors:
            raise
    factor = lu_factor_ex(A)
    with np.errstate(all="ignore"):  # the infinities of a zero pivot, as LAPACK gives them (CuPy does not warn)
        return _inv_ex_result(lu_solve(factor.LU, factor.pivots, _eye_like(A)), factor.info)


@_autocast.as_op("linalg_cholesky_ex")
def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):
    """``(L, info)``: ``cholesky(A)`` with ``info`` 0 per matrix; where a matrix is not positive
    definite, its ``info`` is the order of the first leading minor that is not and its ``L`` is
    factored up to there, as PyTorch's (that result is not differentiable).

    Raises:
        LinAlgError: with ``check_errors``, for a matrix that is not positive definite.
    """
    try:
        return _cholesky_ex_result(cholesky(A, upper=upper), _info(A))
    except LinAlgError:
        if check_errors:
            raise
    L, info = cholesky_with_info(A)
    return _cholesky_ex_result(conj_transpose(L) if upper else L, info)


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):
    """``(result, info)``: ``solve(A, B, left=left)`` with ``info`` as ``inv_ex`` gives it; for a
    singular ``A``, ``result`` is what solving with its LU factor gives (infinities, NaNs).

    Raises:
        LinAlgError: with ``check_errors``, for a singular ``A``.
        RuntimeError: for shapes ``solve`` refuses.
    """
    try:
        return _solve_ex_result(solve(A, B, left=left), _info(A))
    except LinAlgError:
        if check_errors:
            raise
    factor = lu_factor_ex(A)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    with np.errstate(all="ignore"):  # as in inv_ex
        result = lu_solve(factor.LU, factor.pivots, B.unsqueeze(-1) if vector else B, left=left)
    return _solve_ex_result(result.squeeze(-1) if vector else result, factor.info)


@defop("eig", saves_output=True)
def _eig(xp, a):
    # Note [Packed outputs]: the eigenvalues as row 0, then the eigenvectors (unit columns).
    values, vectors = _checked("eig", _backend.linalg_eig, xp, a)
    complex_type = _dtype.to_complex(_dtype.from_numpy_dtype(a.dtype)).numpy
    return xp.concatenate([values[..., None, :], vectors], axis=-2).astype(complex_type, copy=False)


@_eig.derivative
def _(node, g):
    # PyTorch's linalg_eig_backward: with E_ij = conj(L_j - L_i) (1 on the diagonal),
    # gA = V^-H (diag(gL) + (V^H gV - V^H V diag(re(V^H gV))) / E) V^H, real for real A.
    values, V = node.output[..., 0, :], node.output[..., 1:, :]
    gL, gV = g[..., 0, :], g[..., 1:, :]
    Vh = conj_transpose(V)
    if is_all_zero(gV):
        gA = lu_solve(*lu_factor(Vh), gL.unsqueeze(-1) * Vh)
        return (gA if node.input_meta[0][1].kind == "c" else gA.real,)
    VhgV = Vh @ gV
    diag = VhgV.diagonal(0, -2, -1)
    if not bool((diag.imag.abs() <= 1e-2 + 1e-2 * diag.abs()).all()):
        raise RuntimeError(
            "linalg_eig_backward: The eigenvectors in the complex case are specified up to multiplication "
            "by e^{i phi}. The specified loss function depends on this quantity, so it is ill-defined."
        )
    VhgV = VhgV - Vh @ (V * diag.real.unsqueeze(-2))
    lconj = values.conj()
    E = lconj.unsqueeze(-2) - lconj.unsqueeze(-1)
    eye = _eye_like(E) != 0
    inner = where(eye, VhgV, VhgV / where(eye, 1, E)) + diag_embed(gL)
    gA = lu_solve(*lu_factor(Vh), inner @ Vh)
    return (gA if node.input_meta[0][1].kind == "c" else gA.real,)


@_autocast.as_op("linalg_eig")
def eig(A):
    """Eigenvalues and eigenvectors (unit columns) of a general square matrix, as complex tensors.

    Differentiable as in PyTorch; the eigenvectors are defined up to a phase, so a loss must not
    depend on it (the backward raises RuntimeError if it does).
    """
    check_float_matrix("linalg.eig", A, square=True)
    packed = _dispatch.apply_unary(_eig, A)
    return _eig_result(packed[..., 0, :], packed[..., 1:, :])


@_autocast.as_op("linalg_eigvals")
def eigvals(A):
    """The (complex) eigenvalues of a general square matrix."""
    return eig(A).eigenvalues


def _per_matrix(value):
    """A tolerance as ``_tolerance`` compares it: a Python number, or a tensor of one value per
    matrix given a trailing dim to broadcast against the singular values."""
    return value.unsqueeze(-1) if _dispatch.is_tensor(value) else value


def _tolerance(S, atol, rtol, shape):
    """The singular-value cutoff of pinv and matrix_rank: max(atol, rtol * largest value), where
    ``rtol`` defaults to 0 if ``atol > 0`` and to ``eps * max(m, n)`` otherwise (numbers or
    per-matrix tensors)."""
    atol, rtol = _per_matrix(atol), _per_matrix(rtol)
    if rtol is None:
        eps = 1.1920928955078125e-07 if S.dtype.itemsize == 4 else 2.220446049250313e-16
        default = max(shape[-2:]) * eps
        if atol is None:
            rtol = default
        else:
            rtol = where(atol > 0, 0.0, default) if _dispatch.is_tensor(atol) else (0.0 if atol > 0 else default)
    top = S.amax(-1, keepdim=True) if S.shape[-1] else S.new_zeros(S.shape[:-1] + (1,))
    cutoff = top * rtol
    return cutoff if atol is None else where(cutoff > atol, cutoff, atol if _dispatch.is_tensor(atol) else float(atol))


def _inverse_above(values, cutoff):
    """``1 / values`` where ``|values| > cutoff``, else 0 (the pseudo-inverse of a diagonal)."""
    keep = values.abs() > cutoff
    return where(keep, 1.0 / where(keep, values, 1.0), 0.0)


@_autocast.as_op("pinverse")
def pinv(A, rcond=None, hermitian: bool = False, *, atol=None, rtol=None):
    """The Moore-Penrose pseudo-inverse, from the SVD (singular values under the cutoff
    ``max(atol, rtol * largest)`` count as 0); with ``hermitian``, from ``eigh`` of ``A``'s lower
    triangle (eigenvalues by magnitude). The legacy ``rcond`` is ``rtol`` with ``atol = 0``.

    Raises:
        RuntimeError: for integer input, or a non-square ``A`` with ``hermitian``.
    """
    if rcond is not None:
        atol, rtol = 0.0, rcond
    if hermitian:
        values, V = eigh(A)
        inverse = _inverse_above(values, _tolerance(values.abs(), atol, rtol, A.shape))
        return (V * inverse.unsqueeze(-2)) @ conj_transpose(V)
    U, S, Vh = svd(A, full_matrices=False)
    S_inv = _inverse_above(S, _tolerance(S, atol, rtol, A.shape))
    return (conj_transpose(Vh) * S_inv.unsqueeze(-2)) @ conj_transpose(U)


def pinverse(input, rcond: float = 1e-15):
    """``torch.pinverse``: ``pinv`` with the relative cutoff ``rcond``."""
    return pinv(input, rtol=rcond)


@_autocast.as_op("linalg_matrix_rank")
def matrix_rank(A, tol=None, hermitian: bool = False, *, atol=None, rtol=None):
    """The number of singular values above the cutoff ``max(atol, rtol * largest)`` (with
    ``hermitian``, eigenvalue magnitudes of ``A``'s lower triangle). The legacy ``tol`` is
    ``atol`` with ``rtol = 0``.

    Raises:
        RuntimeError: for integer input, or a non-square ``A`` with ``hermitian``.
    """
    if tol is not None:
        atol, rtol = tol, 0.0
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    return (S > _tolerance(S, atol, rtol, A.shape)).sum(-1)


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@_autocast.as_op("linalg_lstsq")
def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of ``A X = B`` (via the pseudo-inverse; differentiable), with the
    outputs PyTorch's CPU ``driver`` gives (default 'gelsy'): ``rank`` (empty for 'gels'),
    ``singular_values`` ('gelsd', 'gelss'; else empty) and the squared ``residuals`` (tall ``A``
    only, for 'gels' always, for 'gelsd'/'gelss' when every matrix has full rank, never for
    'gelsy'). 'gels' assumes full rank and ignores ``rcond``; the others truncate the singular
    values below ``rcond`` times the largest (default ``eps * max(m, n)``).

    Raises:
        RuntimeError: for an unknown ``driver``.
    """
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of {_LSTSQ_DRIVERS}, got {driver!r}")
    vector = B.ndim == A.ndim - 1
    rhs = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2:]
    empty = A.new_zeros((0,), dtype=_dtype.to_real(A.dtype))
    if driver == "gels":
        X = pinv(A, atol=0.0, rtol=0.0) @ rhs
        rank, S, full_rank = A.new_zeros((0,), dtype=_dtype.int64), empty, True
    else:
        S = svdvals(A)
        X = pinv(A, rtol=rcond) @ rhs
        rank = (S > _tolerance(S, None, rcond, A.shape)).sum(-1)
        full_rank = driver != "gelsy" and bool((rank == n).all())
    residuals = empty
    if m > n and full_rank:
        error = A @ X - rhs
        residuals = ((error.abs() if error.dtype.is_complex else error) ** 2).sum(-2)
    return _lstsq_result(X.squeeze(-1) if vector else X, residuals, rank, S if driver in ("gelsd", "gelss") else empty)


def matrix_power(A, n: int):
    """``A`` multiplied by itself ``n`` times (``n < 0``: of its inverse; ``n = 0``: the identity,
    which stays on ``A``'s graph with a zero gradient, as PyTorch's).

    Raises:
        RuntimeError: for a non-square ``A``, or a negative ``n`` with integer ``A``.
    """
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, got shape {list(A.shape)}")
    if n == 0:
        return where(A.new_ones((), dtype=_dtype.bool_), _eye_like(A), A)
    base = inv(A) if n < 0 else A
    result, n = None, abs(n)
    while n:  # binary powering
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def cross(input, other, *, dim: int = -1):
    """The cross product of 3-vectors along ``dim`` (-1 by default)."""
    return _cross(input, other, dim)


def multi_dot(tensors):
    """The product of a chain of matrices (the first and last may be 1-d vectors).

    Raises:
        RuntimeError: for fewer than two tensors or middle tensors that are not 2-d.
    """
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    chain = [
        first.unsqueeze(0) if first.ndim == 1 else first,
        *tensors[1:-1],
        last.unsqueeze(-1) if last.ndim == 1 else last,
    ]
    for i, t in enumerate(chain):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    out = chain[0]
    for t in chain[1:]:
        out = out @ t
    if first.ndim == 1:
        out = out.squeeze(0)
    if last.ndim == 1:
        out = out.squeeze(-1)
    return out


def vander(x, *, N=None):
    """The Vandermonde matrix ``x[..., i] ** j`` for ``j < N`` (``N`` = the length of ``x``)."""
    n = x.shape[-1] if N is None else N
    return x.unsqueeze(-1) ** x.new_tensor(list(range(n)), dtype=_dtype.int64)


def vecdot(x, y, *, dim: int = -1):
    """The dot product ``sum(conj(x) * y)`` along ``dim`` (broadcasting).

    Raises:
        RuntimeError: for integer inputs.
    """
    for t in (x, y):
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError(
                f"linalg.vecdot: Expected a floating point or complex tensor as input. Got {t.dtype.name}"
            )
    return (x.conj() * y).sum(dim)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """The diagonals of the matrices in ``A`` (``dim1``, ``dim2``: the last two dims by default)."""
    return _diagonal(A, offset, dim1, dim2)


@_autocast.as_op("matrix_exp")
def matrix_exp(A):
    """The matrix exponential, by scaling and squaring a degree-18 Taylor series (differentiable)."""
    norm1 = float(A.abs().sum(-2).amax().item()) if A.numel() else 0.0
    squarings = max(0, int(norm1).bit_length())
    X = A / (2**squarings)
    term = diag_embed(A.new_ones(A.shape[:-1]))
    result = term
    for k in range(1, 19):
        term = term @ X / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


@_autocast.as_op("linalg_cond")
def cond(A, p=None):
    """The condition number in the ``p`` norm (the ratio of extreme singular values for None, 2,
    -2; otherwise ``norm(A) * norm(inv(A))``, inf for a singular matrix). Real, also for complex
    ``A``; 0 for a 0x0 matrix.

    Raises:
        RuntimeError: for an unknown ``p``, integer input, or a non-square ``A`` unless ``p`` is
            None, 2 or -2.
    """
    if A.ndim >= 2 and A.shape[-2:] == (0, 0):
        return matrix_norm(A)  # 0 (torch's value for empty matrices, whatever p)
    if p in (None, 2, -2):
        S = svdvals(A)
        if not S.shape[-1]:  # an m x 0 or 0 x n matrix
            return S.sum(-1)
        high, low = S[..., 0], S[..., -1]  # descending; one value each, also for ties (as PyTorch)
        return high / low if p != -2 else low / high
    inverse, info = inv_ex(A)
    return where(info > 0, math.inf, matrix_norm(A, p) * matrix_norm(inverse, p))


@_autocast.as_op("linalg_tensorinv")
def tensorinv(A, ind: int = 2):
    """The inverse of ``A`` seen as a linear map from its last dims to its first ``ind`` dims.

    Raises:
        RuntimeError: if the two groups of dims have different numbers of elements.
    """
    rows = 1
    for s in A.shape[:ind]:
        rows *= s
    if rows * rows != A.numel():
        raise RuntimeError(
            f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {list(A.shape)} with ind={ind}"
        )
    return inv(A.reshape(rows, -1)).reshape(A.shape[ind:] + A.shape[:ind])


@_autocast.as_op("linalg_tensorsolve")
def tensorsolve(A, B, dims=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``."""
    if dims is not None:
        order = [d % A.ndim for d in dims]
        A = A.movedim(order, list(range(A.ndim - len(order), A.ndim)))
    rest = A.shape[B.ndim :]
    return solve(A.reshape(B.numel(), -1), B.reshape(-1)).reshape(rest)
