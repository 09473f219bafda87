"""``LowRankMultivariateNormal`` (PyTorch's ``torch.distributions.LowRankMultivariateNormal``): the
normal distribution over vectors whose covariance is ``W W^T + diag(D)`` for an ``n x m`` factor
``W`` (``cov_factor``) and a positive ``D`` (``cov_diag``).

Note [Capacitance matrix]
    The ``n x n`` covariance is never factored. As torch does, the Woodbury identity and the
    matrix determinant lemma reduce its inverse and determinant to those of the ``m x m``
    capacitance matrix ``C = I + W^T D^-1 W``, kept as its Cholesky factor ``L_C``::

        log det(W W^T + D) = 2 log det L_C + sum(log D)
        x^T (W W^T + D)^-1 x = sum(x^2 / D) - |L_C^-1 W^T D^-1 x|^2
        (W W^T + D)^-1 = D^-1 - A^T A,  with A = L_C^-1 W^T D^-1 (``_woodbury_factor``)
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import LOG_SQRT_2PI, Distribution, Located
from .multivariate_normal import batch_mahalanobis

__all__ = ["LowRankMultivariateNormal"]


def trace_of_square(x: Tensor) -> Tensor:
    """``trace(x x^T)``: the sum of squares over the last two dims."""
    return x.pow(2).sum((-2, -1))


def _with_unit_diagonal_added(matrix: Tensor) -> Tensor:
    return matrix + tensor.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)


def _check_shapes(loc: Tensor, cov_factor: Tensor, cov_diag: Tensor) -> None:
    """Raise torch's ValueError for parameters whose event dims do not agree."""
    if loc.dim() < 1:
        raise ValueError("loc must be at least one-dimensional.")
    n = loc.shape[-1]
    if cov_factor.dim() < 2:
        raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
    if cov_factor.shape[-2] != n:
        raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
    if tuple(cov_diag.shape[-1:]) != (n,):
        raise ValueError(f"cov_diag must be a batch of vectors with shape {(n,)}")


class LowRankMultivariateNormal(Located):
    """The normal distribution over vectors of mean ``loc`` and covariance
    ``cov_factor @ cov_factor.mT + diag(cov_diag)`` (Note [Capacitance matrix]); the batch dims
    of the three broadcast.

    Raises:
        ValueError: for parameters whose shapes disagree or do not broadcast; with
            ``validate_args``, for a ``cov_diag`` not positive (or a NaN).
    """

    arg_constraints = {
        "loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args=None) -> None:
        _check_shapes(loc, cov_factor, cov_diag)
        try:
            loc_, self.cov_factor, diag_ = tensor.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                    cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor "
                             f"{tuple(cov_factor.shape)}, cov_diag {tuple(cov_diag.shape)}") from e
        self.loc, self.cov_diag = loc_[..., 0], diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        # validated before factoring: a negative cov_diag is a ValueError, not a failed Cholesky
        super().__init__(self.loc.shape[:-1], loc.shape[-1:], validate_args)
        factor_over_diag = cov_factor.mT / cov_diag.unsqueeze(-2)
        self._capacitance_tril = tensor.linalg.cholesky(_with_unit_diagonal_added(factor_over_diag @ cov_factor))

    def expand(self, batch_shape, _instance=None):
        """The same distribution with the batch broadcast to ``batch_shape`` (nothing refactored)."""
        new = LowRankMultivariateNormal.__new__(LowRankMultivariateNormal)
        shape = tuple(batch_shape) + tuple(self._event_shape)
        new.loc, new.cov_diag = self.loc.expand(shape), self.cov_diag.expand(shape)
        new.cov_factor = self.cov_factor.expand(shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def variance(self) -> Tensor:
        """The covariance's diagonal, ``sum(W^2, -1) + D``."""
        variance = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return variance.expand(self._batch_shape + self._event_shape)

    @property
    def covariance_matrix(self) -> Tensor:
        """``W W^T + diag(D)``."""
        w = self._unbroadcasted_cov_factor
        return (w @ w.mT + self._unbroadcasted_cov_diag.diag_embed()).expand(self._matrix_shape())

    @property
    def precision_matrix(self) -> Tensor:
        """``D^-1 - A^T A`` by the Woodbury identity (Note [Capacitance matrix])."""
        a = self._woodbury_factor()
        return (self._unbroadcasted_cov_diag.reciprocal().diag_embed() - a.mT @ a).expand(self._matrix_shape())

    @property
    def scale_tril(self) -> Tensor:
        """The covariance's lower Cholesky factor, as ``D^1/2 chol(I + D^-1/2 W W^T D^-1/2)``: the
        inner matrix's eigenvalues are at least 1, so its factorisation is well conditioned."""
        sqrt_diag = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled = self._unbroadcasted_cov_factor / sqrt_diag
        inner = tensor.linalg.cholesky(_with_unit_diagonal_added(scaled @ scaled.mT))
        return (sqrt_diag * inner).expand(self._matrix_shape())

    def _woodbury_factor(self) -> Tensor:
        """``A = L_C^-1 W^T D^-1`` (Note [Capacitance matrix])."""
        factor_over_diag = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        return tensor.linalg.solve_triangular(self._capacitance_tril, factor_over_diag, upper=False)

    def _log_det(self) -> Tensor:
        """``log det(W W^T + D)`` by the matrix determinant lemma."""
        capacitance_log_det = 2 * self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return capacitance_log_det + self._unbroadcasted_cov_diag.log().sum(-1)

    def _mahalanobis(self, x: Tensor) -> Tensor:
        """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        projected = ((w.mT / d.unsqueeze(-2)) @ x.unsqueeze(-1)).squeeze(-1)
        return (x.pow(2) / d).sum(-1) - batch_mahalanobis(self._capacitance_tril, projected)

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc + W eps_W + sqrt(D) eps_D`` for standard normal ``eps``: differentiable in the parameters."""
        shape = self._extended_shape(sample_shape)
        like = {"dtype": self.loc.dtype, "device": self.loc.device}
        eps_w = tensor.randn(tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:]), **like)
        eps_d = tensor.randn(shape, **like)
        return (self.loc + (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at the vectors ``value``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape or with a NaN.
        """
        if self._validate_args:
            self._validate_sample(value)
        n = self._event_shape[0]
        return -0.5 * (self._mahalanobis(value - self.loc) + self._log_det()) - n * LOG_SQRT_2PI

    def entropy(self) -> Tensor:
        """``n / 2 (1 + log 2 pi) + log det(W W^T + D) / 2``."""
        n = self._event_shape[0]
        return (0.5 * (n * (1.0 + math.log(2 * math.pi)) + self._log_det())).expand(self._batch_shape)
