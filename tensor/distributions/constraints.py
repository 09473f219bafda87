"""Constraints on a distribution's parameters and support (PyTorch's
``torch.distributions.constraints``): each checks values elementwise, giving a bool tensor."""

from __future__ import annotations

import tensor

__all__ = [
    "Constraint", "boolean", "corr_cholesky", "dependent", "greater_than", "greater_than_eq", "half_open_interval",
    "independent", "integer_interval", "interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular",
    "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive", "positive_definite",
    "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex", "square", "symmetric",
    "unit_interval",
]


class Constraint:
    """A set of valid values; ``check(value)`` is a bool tensor, True where ``value`` is in it.
    ``event_dim`` is how many trailing dims make one value (1 for ``simplex``)."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """Elementwise membership (over the trailing ``event_dim`` dims together)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder for a support that depends on other variables: it cannot be checked."""

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is the ``dependent`` placeholder."""
    return isinstance(constraint, _Dependent)


class _Real(Constraint):
    def check(self, value):
        return value == value  # False only for NaN


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """``[lower_bound, upper_bound]``."""

    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"{type(self).__name__.lstrip('_')}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    """``[lower_bound, upper_bound)``."""

    def check(self, value):
        return (self.lower_bound <= value) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & super().check(value)


class _IntegerGreaterThanEq(_GreaterThanEq):
    is_discrete = True

    def check(self, value):
        return (value % 1 == 0) & super().check(value)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Simplex(Constraint):
    """Nonnegative vectors summing to 1 over the last dim."""

    event_dim = 1

    def check(self, value):
        return (value >= 0).all(dim=-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Vectors of nonnegative counts over the last dim summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, value):
        return (value >= 0).all(dim=-1) & (value.sum(dim=-1) <= self.upper_bound)


class _IndependentConstraint(Constraint):
    """``base`` over values whose last ``reinterpreted_batch_ndims`` dims make one event."""

    def __init__(self, base: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
        self.is_discrete, self.event_dim = base.is_discrete, base.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(dim=-1)
        return result

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _OneHot(Constraint):
    """Vectors of 0s with a single 1 (over the last dim)."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(dim=-1) & (value.sum(-1) == 1)


class _LowerTriangular(Constraint):
    """Lower-triangular matrices."""

    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)


class _LowerCholesky(_LowerTriangular):
    """Lower-triangular square matrices with a positive diagonal."""

    def check(self, value):
        return super().check(value) & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(_LowerCholesky):
    """Cholesky factors of correlation matrices: lower Cholesky factors whose rows have unit norm
    (to ``10 n eps`` for ``n`` columns, torch's tolerance)."""

    def check(self, value):
        tolerance = tensor.finfo(value.dtype).eps * value.shape[-1] * 10
        unit_rows = ((tensor.linalg.vector_norm(value.detach(), dim=-1) - 1).abs() <= tolerance).all(-1)
        return super().check(value) & unit_rows


class _Square(Constraint):
    """Square matrices: one bool for the whole batch, from the shape."""

    event_dim = 2

    def check(self, value):
        return tensor.full(value.shape[:-2], value.shape[-2] == value.shape[-1], dtype=tensor.bool,
                           device=value.device)


class _Symmetric(_Square):
    """Square matrices equal to their transpose (to a relative 1e-6)."""

    def check(self, value):
        if value.shape[-2] != value.shape[-1]:
            return super().check(value)
        scale = value.abs().amax(dim=(-2, -1), keepdim=True).clamp(min=1)
        return ((value - value.mT).abs() <= 1e-6 * scale).reshape(*value.shape[:-2], -1).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with a Cholesky factor."""

    def check(self, value):
        symmetric = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return symmetric
        return symmetric & (tensor.linalg.cholesky_ex(value).info == 0)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric matrices with no negative eigenvalue."""

    def check(self, value):
        symmetric = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return symmetric
        return symmetric & (tensor.linalg.eigvalsh(value) >= 0).all(-1)


dependent = _Dependent()
real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
nonnegative_integer = _IntegerGreaterThanEq(0)
positive_integer = _IntegerGreaterThanEq(1)
simplex = _Simplex()
one_hot = _OneHot()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
lower_triangular = _LowerTriangular()
square = _Square()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
real_vector = _IndependentConstraint(real, 1)
multinomial = _Multinomial
independent = _IndependentConstraint
greater_than, greater_than_eq, less_than = _GreaterThan, _GreaterThanEq, _LessThan
interval, half_open_interval, integer_interval = _Interval, _HalfOpenInterval, _IntegerInterval
