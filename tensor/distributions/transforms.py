"""Transforms of random variables (PyTorch's ``torch.distributions.transforms``): the elementwise
``ExpTransform``, ``SigmoidTransform``, ``TanhTransform`` (a squashed Normal, as soft actor-critic
policies use), ``SoftplusTransform``, ``PowerTransform``, ``AbsTransform`` and ``AffineTransform``
here; ``Transform``, ``ComposeTransform`` and ``identity_transform`` from transform_base.py; the
event-coupling ``IndependentTransform``, ``SoftmaxTransform`` and ``StickBreakingTransform`` from
structured_transforms.py; and ``LowerCholeskyTransform``, ``PositiveDefiniteTransform`` and
``CorrCholeskyTransform`` onto matrices from cholesky_transforms.py (Note [Transform event dims]).
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .cholesky_transforms import CorrCholeskyTransform, LowerCholeskyTransform, PositiveDefiniteTransform
from .distribution import broadcast_all, clamp_to_unit_interval, softplus, sum_rightmost
from .structured_transforms import IndependentTransform, SoftmaxTransform, StickBreakingTransform
from .transform_base import ComposeTransform, Transform, identity_transform

__all__ = [
    "AbsTransform", "AffineTransform", "ComposeTransform", "CorrCholeskyTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform", "PowerTransform",
    "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform", "TanhTransform",
    "Transform", "identity_transform",
]


class ExpTransform(Transform):
    """``y = exp(x)``."""

    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse_call(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        """``x``."""
        return x


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``, kept in ``[tiny, 1 - eps]`` both ways as torch's, so that the
    inverse of a small ``y`` is its own logit down to the smallest normal number."""

    codomain = constraints.unit_interval

    def _call(self, x):
        return clamp_to_unit_interval(tensor.sigmoid(x))

    def _inverse_call(self, y):
        y = clamp_to_unit_interval(y)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        """``log sigmoid(x) + log sigmoid(-x)``, through softplus."""
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``; the inverse is plain ``atanh`` (infinite at ``+-1``, as torch's: use
    ``cache_size=1`` to invert a ``tanh`` that rounded to 1)."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse_call(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        """``log(1 - tanh(x) ** 2)``, as ``2 (log 2 - x - softplus(-2x))``, exact for large ``|x|``."""
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``."""

    codomain = constraints.positive

    def _call(self, x):
        return softplus(x)

    def _inverse_call(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        """``log sigmoid(x)``."""
        return -softplus(-x)


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse is the nonnegative root)."""

    codomain = constraints.positive
    bijective = False

    def _call(self, x):
        return x.abs()

    def _inverse_call(self, y):
        return y


class _Parameterised(Transform):
    """A transform with tensor (or number) parameters, equal to another of its type with equal ones."""

    _parameters: tuple = ()

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and all(
            _equal(getattr(self, name), getattr(other, name)) for name in self._parameters)

    __hash__ = object.__hash__

    def forward_shape(self, shape) -> tuple:
        """``shape`` broadcast with the parameters'."""
        shapes = (getattr(getattr(self, name), "shape", ()) for name in self._parameters)
        return tuple(tensor.broadcast_shapes(shape, *shapes))

    inverse_shape = forward_shape


def _equal(a, b) -> bool:
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return bool((a == b).all())
    return a == b


class PowerTransform(_Parameterised):
    """``y = x ** exponent`` on positive numbers."""

    domain = constraints.positive
    codomain = constraints.positive
    _parameters = ("exponent",)

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with ``cache_size``."""
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size)

    @property
    def sign(self):
        """The sign of ``exponent``."""
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse_call(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        """``log |exponent y / x|``."""
        return (self.exponent * y / x).abs().log()


class AffineTransform(_Parameterised):
    """``y = loc + scale * x`` (broadcast); with ``event_dim``, over events of that many trailing
    dims, so the log-determinant sums over them."""

    _parameters = ("loc", "scale")

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:
        """The event dims given."""
        return self._event_dim

    @property
    def domain(self):
        """The reals over ``event_dim`` dims."""
        return constraints.independent(constraints.real, self._event_dim) if self._event_dim else constraints.real

    codomain = domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size)

    @property
    def sign(self):
        """The sign of ``scale``: a number, or a tensor for a tensor ``scale``."""
        if isinstance(self.scale, Tensor):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse_call(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        """``log |scale|``, broadcast to ``x`` and summed over the event dims."""
        scale = self.scale if isinstance(self.scale, Tensor) else tensor.tensor(float(self.scale), dtype=x.dtype)
        result = scale.abs().log().expand(tensor.broadcast_shapes(scale.shape, x.shape))
        return sum_rightmost(result, self._event_dim)
