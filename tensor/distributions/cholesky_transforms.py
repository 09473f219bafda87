"""Transforms onto matrices (PyTorch's ``torch.distributions.transforms``): ``LowerCholeskyTransform``
and ``PositiveDefiniteTransform`` from square matrices, and ``CorrCholeskyTransform`` from vectors
onto Cholesky factors of correlation matrices (Note [Transform event dims] in transform_base.py).
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import softplus
from .transform_base import Transform

__all__ = ["CorrCholeskyTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform"]


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal: the strictly lower part
    kept, the diagonal exponentiated (the rest dropped, so not bijective on all matrices)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse_call(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: ``L L^T`` for ``L`` their ``LowerCholeskyTransform``."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse_call(self, y):
        return LowerCholeskyTransform().inv(tensor.linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Vectors of ``D (D - 1) / 2`` reals to ``D x D`` Cholesky factors of correlation matrices
    (torch's, after Stan): the vector fills the strictly lower triangle row by row through
    ``tanh``, and each row is then a signed stick-breaking of the unit norm, the diagonal taking
    what is left."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky

    def _call(self, x):
        eps = tensor.finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(-1 + eps, 1 - eps), diag=-1)
        # y = sign(r) sqrt(r^2 prod_{k<j}(1 - r_k^2)) = r prod_{k<j} sqrt(1 - r_k^2)
        remaining = (1 - r.pow(2)).sqrt().cumprod(-1)
        eye = tensor.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return (r + eye) * _shifted_right(remaining)

    def _inverse_call(self, y):
        remaining = _shifted_right(1 - (y * y).cumsum(-1))
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(remaining, diag=-1).sqrt()
        return (t.log1p() - (-t).log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y):
        """Of ``x`` and the flattened strict lower triangle of ``y`` (the spaces' dims differ)."""
        # diag=-2 reads each row's remaining length before its entry, without the shift
        stick_breaking = 0.5 * tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2).log().sum(-1)
        tanh = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape) -> tuple:
        """``(..., N)`` to ``(..., D, D)`` for ``N = D (D - 1) / 2``.

        Raises:
            ValueError: for no dims, or an ``N`` that is no such number.
        """
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape) -> tuple:
        """``(..., D, D)`` to ``(..., D (D - 1) / 2)``.

        Raises:
            ValueError: for fewer than two dims, or matrices that are not square.
        """
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


def _shifted_right(x: Tensor) -> Tensor:
    """``x`` moved one place right along its last dim, a 1 entering on the left."""
    return tensor.cat([tensor.ones_like(x[..., :1]), x[..., :-1]], -1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of ``mat``'s lower triangle up to diagonal ``diag``, row by row (torch's
    ``torch.distributions.utils.tril_matrix_to_vec``).

    Raises:
        ValueError: for a ``diag`` outside ``[-n, n - 1]``.
    """
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = tensor.tril_indices(n, n, offset=diag, device=mat.device)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The ``D x D`` lower-triangular matrix (up to diagonal ``diag``) filled with ``vec`` row by
    row (torch's ``torch.distributions.utils.vec_to_tril_matrix``); gathered from ``vec`` with a
    zero appended, so that it differentiates as an index.

    Raises:
        ValueError: for a length that fills no such triangle.
    """
    # the positive root of D^2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 len = 0
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > tensor.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    rows, cols = tensor.tril_indices(n, n, offset=diag)
    positions = tensor.full((n, n), vec.shape[-1], dtype=tensor.int64)  # the appended zero
    positions[rows, cols] = tensor.arange(rows.shape[0])
    padded = tensor.cat([vec, tensor.zeros_like(vec[..., :1])], -1)
    return padded[..., positions.to(vec.device)]
