"""``Wishart`` (PyTorch's ``torch.distributions.Wishart``): the distribution of ``X^T X`` over
positive-definite matrices, for ``df`` rows ``X`` drawn from a zero-mean normal of covariance
``covariance_matrix``.

Like ``MultivariateNormal``, it is kept as the covariance's lower Cholesky factor ``L``, from
whichever of ``covariance_matrix``, ``precision_matrix`` and ``scale_tril`` is given. Samples are
Bartlett's: ``(L A)(L A)^T`` for ``A`` lower triangular with ``sqrt(chi2(df - i))`` on the
diagonal and standard normals below it, so ``rsample`` is differentiable in ``df`` (through the
chi-squared draws' implicit gradient) and in ``L``.

Departure: torch flags every sample whose batch holds a *nonsingular* matrix as singular (it
tests ``support.check`` where it means its negation), so it warns "Singular sample detected." on
every call and draws everything twice. Here only matrices that fail the positive-definite check
are drawn again (up to ``max_try_correction`` times), with the warning only then.
"""

from __future__ import annotations

import math
import warnings
from numbers import Number

import tensor
from tensor import Tensor

from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .multivariate_normal import MATRICES, matrix_from, scale_tril_from

__all__ = ["Wishart"]


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma ``sum_i digamma(x - i / 2)`` over ``i < p``."""
    halves = tensor.arange(p, dtype=x.dtype, device=x.device) / 2
    return tensor.digamma(x.unsqueeze(-1) - halves).sum(-1)


class Wishart(Distribution):
    """The Wishart distribution of ``df`` degrees of freedom (more than the dimension less one)
    and scale matrix ``covariance_matrix`` (or its inverse ``precision_matrix``, or its Cholesky
    factor ``scale_tril``): exactly one of the three. Batch dims of ``df`` and the matrix broadcast.

    Raises:
        AssertionError: for none or several of the matrices (torch's type).
        ValueError: for a matrix of fewer than two dims, or a ``df`` not above the dimension less
            one; with ``validate_args``, for a matrix that is not positive definite (or a
            ``scale_tril`` not lower-triangular with a positive diagonal).
    """

    support = constraints.positive_definite
    has_rsample = True

    @property
    def arg_constraints(self) -> dict:
        """The matrices' constraints, and ``df`` above the dimension less one."""
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self._event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None) -> None:
        given = {name: m for name, m in zip(MATRICES, (covariance_matrix, precision_matrix, scale_tril))
                 if m is not None}
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        (name, matrix), = given.items()
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        p = matrix.shape[-1]
        if isinstance(df, Number):
            batch = tuple(matrix.shape[:-2])
            self.df = tensor.tensor(float(df), dtype=matrix.dtype, device=matrix.device)
        else:
            batch = tuple(tensor.broadcast_shapes(matrix.shape[:-2], df.shape))
            self.df = df.expand(batch)
        if (self.df <= p - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        if (self.df < p).any():
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        setattr(self, name, matrix.expand(batch + (p, p)))
        super().__init__(batch, matrix.shape[-2:], validate_args)
        self._unbroadcasted_scale_tril = scale_tril_from(name, matrix)

    def __getattr__(self, name: str):
        # The matrices not given, derived on first use (PyTorch's lazy_property).
        if name.startswith("_") or name not in MATRICES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = matrix_from(name, self._unbroadcasted_scale_tril).expand(self._batch_shape + self._event_shape)
        self.__dict__[name] = value
        return value

    def expand(self, batch_shape, _instance=None):
        """The same distribution with the batch broadcast to ``batch_shape``."""
        new = Wishart.__new__(Wishart)
        batch_shape = tuple(batch_shape)
        shape = batch_shape + tuple(self._event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(shape)
        new.df = self.df.expand(batch_shape)
        for name in MATRICES:
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _df_matrix(self) -> Tensor:
        """``df`` with two trailing dims, to scale matrices."""
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        """``df * covariance``."""
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """``(df - p - 1) * covariance``, NaN where ``df <= p + 1`` (no mode)."""
        factor = self._df_matrix() - self._event_shape[-1] - 1
        return tensor.where(factor <= 0, math.nan, factor) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        """``df (V_ij^2 + V_ii V_jj)`` for the covariance ``V``."""
        cov = self.covariance_matrix
        diagonal = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (cov.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape: tuple) -> Tensor:
        """``(L A)(L A)^T`` with Bartlett's ``A`` (see the module docstring)."""
        tril = self._unbroadcasted_scale_tril
        p = self._event_shape[-1]
        chi2_df = self.df.unsqueeze(-1) - tensor.arange(p, dtype=tril.dtype, device=tril.device)
        diagonal = Chi2(chi2_df, validate_args=False).rsample(sample_shape).sqrt()
        diagonal = diagonal.clamp(min=tensor.finfo(diagonal.dtype).eps)
        below = tensor.randn(self._extended_shape(sample_shape), dtype=tril.dtype, device=tril.device).tril(-1)
        factor = tril @ (below + diagonal.diag_embed())
        return factor @ factor.mT

    def rsample(self, sample_shape=(), max_try_correction=None) -> Tensor:
        """Bartlett samples, each singular one drawn again up to ``max_try_correction`` (default
        10) times; one still singular may give ``-inf`` in ``log_prob``.

        Warns:
            UserWarning: "Singular sample detected." when a draw is singular.
        """
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = tuple(sample_shape)
        sample = self._bartlett_sample(sample_shape)
        singular = ~self.support.check(sample)
        if singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
        for _ in range(max_try_correction):
            if not singular.any():
                break
            sample = tensor.where(singular[..., None, None], self._bartlett_sample(sample_shape), sample)
            singular = ~self.support.check(sample)
        return sample

    def _half_log_det(self) -> Tensor:
        """``log det(L)``: half the covariance's log-determinant."""
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at the positive-definite matrices ``value``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape or not positive definite.
        """
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = tensor.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * math.log(2) / 2 + self._half_log_det()) - tensor.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * tensor.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self) -> Tensor:
        """The differential entropy of each distribution."""
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * math.log(2) / 2 + self._half_log_det()) + tensor.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)
