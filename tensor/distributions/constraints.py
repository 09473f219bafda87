"""Constraints on a distribution's parameters and support (PyTorch's
``torch.distributions.constraints``): each checks values elementwise, giving a bool tensor."""

from __future__ import annotations

import tensor

__all__ = [
    "Constraint", "boolean", "greater_than", "greater_than_eq", "half_open_interval", "independent",
    "integer_interval", "interval", "lower_cholesky", "multinomial", "nonnegative", "nonnegative_integer", "one_hot",
    "positive", "positive_definite", "real", "real_vector", "simplex", "unit_interval",
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
        self.base, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
        self.is_discrete, self.event_dim = base.is_discrete, base.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        result = self.base.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(dim=-1)
        return result

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base!r}, {self.reinterpreted_batch_ndims})"


class _OneHot(Constraint):
    """Vectors of 0s with a single 1 (over the last dim)."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(dim=-1) & (value.sum(-1) == 1)


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)
        return lower & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _PositiveDefinite(Constraint):
    """Symmetric matrices with a Cholesky factor."""

    event_dim = 2

    def check(self, value):
        symmetric = ((value - value.mT).abs() <= 1e-6 * value.abs().amax(dim=(-2, -1), keepdim=True).clamp(min=1))
        return symmetric.reshape(*value.shape[:-2], -1).all(-1) & (tensor.linalg.cholesky_ex(value).info == 0)


real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
nonnegative_integer = _IntegerGreaterThanEq(0)
simplex = _Simplex()
one_hot = _OneHot()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
real_vector = _IndependentConstraint(real, 1)
multinomial = _Multinomial
independent = _IndependentConstraint
greater_than, greater_than_eq = _GreaterThan, _GreaterThanEq
interval, half_open_interval, integer_interval = _Interval, _HalfOpenInterval, _IntegerInterval
