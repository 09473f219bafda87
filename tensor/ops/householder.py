"""QR in LAPACK's compact (Householder) form: ``geqrf``, ``householder_product`` (``orgqr``) and
``ormqr``.

``geqrf`` is LAPACK's, through numpy/CuPy's ``qr(mode='raw')`` (no derivative, as in torch). The
other two apply the reflectors ``H_i = I - tau_i v_i v_i^H`` one by one with tensor ops (``v_i`` is
column ``i`` of the input's strict lower triangle with a unit head), so their gradients, for the
reflectors and for ``tau``, come from those ops.
"""

from __future__ import annotations

from collections import namedtuple

from .. import _creation, _dispatch
from .comparison import where
from .diagonals import tril
from .lu import check_float_matrix, conj_transpose
from .registry import defop

__all__ = ["geqrf", "orgqr", "ormqr"]

_geqrf_result = namedtuple("geqrf", ["a", "tau"])


@defop("geqrf", differentiable=False)
def _geqrf(xp, a):
    # Note [Packed outputs]: the reflectors and R, then one row holding tau (k <= n values).
    h, tau = xp.linalg.qr(a, mode="raw")  # h is LAPACK's array, transposed
    row = xp.zeros(a.shape[:-2] + (1, a.shape[-1]), dtype=h.dtype)
    row[..., 0, : tau.shape[-1]] = tau
    return xp.concatenate([xp.swapaxes(h, -1, -2), row], axis=-2)


def geqrf(input):
    """``(a, tau)``: the QR factorisation in LAPACK's form (``R`` on and above the diagonal of ``a``,
    the Householder vectors below it, their scales in ``tau``). Not differentiable, as in torch.

    Raises:
        RuntimeError: for fewer than 2 dims or integer input.
    """
    check_float_matrix("geqrf", input, integer_error=NotImplementedError)
    m, n = input.shape[-2:]
    packed = _dispatch.apply_unary(_geqrf, input)
    return _geqrf_result(packed[..., :m, :], packed[..., m, : min(m, n)])


def _reflectors(A, k: int):
    """The Householder vectors as the columns of an (m, k) matrix: unit head, zeros above it."""
    m = A.shape[-2]
    return tril(A[..., :k], -1) + _creation.eye(m, k, dtype=A.dtype, device=A.device)


def _check_tau(name: str, A, tau, m: int, n: int) -> None:
    if tau.ndim != A.ndim - 1 or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(
            f"{name}: Expected batch dimensions of tau ({list(tau.shape[:-1])}) to match those of "
            f"the input ({list(A.shape[:-2])})"
        )
    if tau.shape[-1] > n:
        raise RuntimeError(
            f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1] ({n} < {tau.shape[-1]})"
        )
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype.name} does not match input dtype {A.dtype.name}")


def _apply(C, V, tau, *, left: bool, adjoint: bool):
    """``Q C``, ``Q^H C``, ``C Q`` or ``C Q^H`` with ``Q = H_1 ... H_k`` given by ``V`` and ``tau``."""
    k = tau.shape[-1]
    first_to_last = left == adjoint  # Q^H C and C Q apply H_1 first
    for i in range(k) if first_to_last else reversed(range(k)):
        v = V[..., :, i : i + 1]
        t = tau[..., i, None, None]
        t = t.conj() if adjoint and t.dtype.is_complex else t
        if left:
            C = C - (t * v) @ (conj_transpose(v) @ C)
        else:
            C = C - ((C @ v) * t) @ conj_transpose(v)
    return C


def householder_product(A, tau):
    """The first ``n`` columns of ``H_1 ... H_k`` from ``A`` (m, n) and ``tau`` (k): the ``Q`` of
    ``geqrf``'s result. Differentiable in ``A`` (its strict lower triangle) and ``tau``.

        >>> import tensor
        >>> tensor.linalg.householder_product(*tensor.geqrf(tensor.tensor([[3.0, 1.0], [4.0, 2.0]])))
        tensor([[-0.6000, -0.8000],
                [-0.8000,  0.6000]])

    Raises:
        RuntimeError: unless ``m >= n >= k``, or for mismatched batch shapes or dtypes.
    """
    check_float_matrix("torch.linalg.householder_product", A, integer_error=NotImplementedError)
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(
            f"torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
            f"input.shape[-1] ({m} < {n})"
        )
    _check_tau("torch.linalg.householder_product", A, tau, m, n)
    eye = _creation.eye(m, n, dtype=A.dtype, device=A.device).expand(A.shape[:-2] + (m, n))
    if tau.shape[-1] == 0:  # no reflector: the identity, still on A's graph (a zero gradient), as torch
        return where(eye == eye, eye, A)
    return _apply(eye, _reflectors(A, tau.shape[-1]), tau, left=True, adjoint=False)


def orgqr(input, tau):
    """``torch.orgqr``: ``linalg.householder_product``."""
    return householder_product(input, tau)


def ormqr(input, tau, other, left: bool = True, transpose: bool = False):
    """``Q @ other`` (``left=False``: ``other @ Q``; ``transpose=True``: with ``Q^H``), ``Q`` the
    (m, m) product of the Householder reflectors in ``input`` and ``tau`` (as from ``geqrf``).

    Raises:
        RuntimeError: for mismatched shapes, batch dims or dtypes.
    """
    check_float_matrix("torch.ormqr", input, integer_error=NotImplementedError)
    m, n = input.shape[-2:]
    _check_tau("torch.ormqr", input, tau, m, n)
    if other.ndim < 2:
        raise RuntimeError(f"torch.ormqr: other must have at least 2 dimensions, got {other.ndim}")
    side = other.shape[-2] if left else other.shape[-1]
    if tau.shape[-1] != min(side, n):
        raise RuntimeError(
            f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{-2 if left else -1}], input.shape[-1]) "
            f"({tau.shape[-1]} != {min(side, n)})"
        )
    if side != m:
        raise RuntimeError(
            f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to input.shape[-2] ({side} != {m})"
        )
    if other.dtype is not input.dtype:
        raise RuntimeError(f"torch.ormqr: other dtype {other.dtype.name} does not match input dtype {input.dtype.name}")
    return _apply(other, _reflectors(input, tau.shape[-1]), tau, left=left, adjoint=transpose)
