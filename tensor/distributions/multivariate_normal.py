"""``MultivariateNormal`` (PyTorch's ``torch.distributions.MultivariateNormal``).

It is kept as its lower Cholesky factor ``L`` (``covariance = L L^T``), from whichever of
``covariance_matrix``, ``precision_matrix`` and ``scale_tril`` is given, as PyTorch keeps it:
``rsample`` is ``loc + L eps``, and ``log_prob`` solves ``L z = value - loc`` (triangular) and
reads ``log det`` off ``L``'s diagonal.
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import LOG_SQRT_2PI, Located

__all__ = ["MultivariateNormal"]


def batch_mahalanobis(tril: Tensor, x: Tensor) -> Tensor:
    """``|tril^-1 x|^2`` over the vectors ``x``, for lower-triangular ``tril``; the batch dims of
    both broadcast."""
    shape = tuple(tensor.broadcast_shapes(x.shape[:-1], tril.shape[:-2]))
    n = x.shape[-1]
    solved = tensor.linalg.solve_triangular(tril.expand(shape + (n, n)), x.expand(shape + (n,)).unsqueeze(-1),
                                            upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


class MultivariateNormal(Located):
    """The normal distribution over vectors of mean ``loc`` and covariance ``covariance_matrix``
    (or ``precision_matrix``, its inverse, or ``scale_tril``, its Cholesky factor): exactly
    one of the three. Batch dims of ``loc`` and the matrix broadcast.

    Raises:
        ValueError: for none or several of the matrices, a ``loc`` without a dim, or a matrix
            that is not square; with ``validate_args``, for a matrix that is not positive
            definite (or a ``scale_tril`` not lower-triangular with a positive diagonal).
    """

    arg_constraints = {
        "loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        matrix = given[0]
        if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
            raise ValueError("the covariance, precision or scale_tril matrix must be square, with at least two dims, "
                             f"got shape {tuple(matrix.shape)}")
        batch = tuple(tensor.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1]))
        n = loc.shape[-1]
        self.loc = loc.expand(batch + (n,))
        name = "covariance_matrix" if covariance_matrix is not None else (
            "precision_matrix" if precision_matrix is not None else "scale_tril")
        setattr(self, name, matrix.expand(batch + (n, n)))
        super().__init__(batch, (n,), validate_args)
        self._unbroadcasted_scale_tril = scale_tril_from(name, matrix)

    def __getattr__(self, name: str):
        # The matrices not given, derived on first use (PyTorch's lazy_property).
        if name.startswith("_") or name not in MATRICES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = matrix_from(name, self._unbroadcasted_scale_tril).expand(
            self._batch_shape + self._event_shape + self._event_shape)
        self.__dict__[name] = value
        return value

    @property
    def variance(self) -> Tensor:
        """The covariance's diagonal."""
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc + L eps`` for standard normal ``eps``: differentiable in the parameters."""
        shape = self._extended_shape(sample_shape)
        eps = tensor.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at the vectors ``value``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape or with a NaN.
        """
        if self._validate_args:
            self._validate_sample(value)
        tril = self._unbroadcasted_scale_tril
        half_log_det = tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * batch_mahalanobis(tril, value - self.loc) - self._event_shape[0] * LOG_SQRT_2PI - half_log_det

    def entropy(self) -> Tensor:
        """``n / 2 (1 + log 2 pi) + log det L``."""
        n = self._event_shape[0]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (0.5 * n * (1.0 + math.log(2 * math.pi)) + half_log_det).expand(self._batch_shape)

    def expand(self, batch_shape, _instance=None):
        """The same distribution with the batch broadcast to ``batch_shape``."""
        batch_shape = tuple(batch_shape)
        n = self._event_shape[0]
        new = MultivariateNormal(self.loc.expand(batch_shape + (n,)),
                                 scale_tril=self._unbroadcasted_scale_tril.expand(batch_shape + (n, n)),
                                 validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        given = [name for name in self.arg_constraints if name in self.__dict__]
        shown = [f"{name}: {tuple(self.__dict__[name].shape)}" for name in given]
        return f"MultivariateNormal({', '.join(shown)})"


MATRICES = ("covariance_matrix", "precision_matrix", "scale_tril")


def scale_tril_from(name: str, matrix: Tensor) -> Tensor:
    """The lower Cholesky factor of the covariance that ``matrix``, given as ``name`` (one of
    ``MATRICES``), stands for."""
    if name == "scale_tril":
        return matrix
    if name == "covariance_matrix":
        return tensor.linalg.cholesky(matrix)
    return _precision_to_scale_tril(matrix)


def matrix_from(name: str, tril: Tensor) -> Tensor:
    """The matrix ``name`` (one of ``MATRICES``) of the covariance whose lower Cholesky factor is ``tril``."""
    if name == "scale_tril":
        return tril
    if name == "covariance_matrix":
        return tril @ tril.mT
    return tensor.cholesky_inverse(tril)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The lower Cholesky factor of ``precision``'s inverse, without forming the inverse."""
    flipped = tensor.linalg.cholesky(precision.flip((-2, -1))).flip((-2, -1))
    eye = tensor.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return tensor.linalg.solve_triangular(flipped.mT, eye, upper=False)
