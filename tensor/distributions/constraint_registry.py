"""``biject_to`` and ``transform_to`` (PyTorch's ``torch.distributions.constraint_registry``): the
transform from unconstrained reals onto a constraint's set, found by the constraint's type. Of the
matrix constraints, both reach Cholesky factors of correlation matrices; only ``transform_to``
reaches lower Cholesky and positive (semi)definite matrices, as in torch.
``biject_to`` gives bijections (for HMC); ``transform_to`` may give a cheaper non-bijective map
(softmax onto the simplex)."""

from __future__ import annotations

from collections.abc import Callable
from numbers import Number

from . import constraints
from .cholesky_transforms import CorrCholeskyTransform, LowerCholeskyTransform, PositiveDefiniteTransform
from .structured_transforms import IndependentTransform, SoftmaxTransform, StickBreakingTransform
from .transform_base import ComposeTransform, Transform, identity_transform
from .transforms import AffineTransform, ExpTransform, SigmoidTransform

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Factories of transforms keyed by constraint type; calling it with a constraint builds its transform."""

    def __init__(self) -> None:
        self._registry: dict = {}

    def register(self, constraint, factory: Callable | None = None):
        """Register ``factory(constraint) -> Transform`` for the type of ``constraint`` (a
        Constraint subclass or instance); usable as a decorator.

        Raises:
            TypeError: for a ``constraint`` that is neither.
        """
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint) -> Transform:
        """The transform onto ``constraint``'s set.

        Raises:
            NotImplementedError: for a constraint type with no registered factory.
        """
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _to_real(constraint):
    return identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    return IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    return IndependentTransform(transform_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _to_greater_than(constraint):  # positive and nonnegative too: they share the types
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _to_less_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _to_interval(constraint):
    low, high = constraint.lower_bound, constraint.upper_bound
    if isinstance(low, Number) and low == 0 and isinstance(high, Number) and high == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(low, high - low)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return LowerCholeskyTransform()  # not bijective onto all matrices: no biject_to, as torch


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return CorrCholeskyTransform()
