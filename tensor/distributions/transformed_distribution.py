"""``TransformedDistribution`` and ``LogNormal``, a Normal through ``exp`` (PyTorch's
``torch.distributions.transformed_distribution`` and ``log_normal``).

Note [Transformed densities]
    For ``y = f(x)`` with ``f`` a bijection, ``log p_Y(y) = log p_X(f^-1(y)) - log |det J_f(x)|``.
    ``TransformedDistribution`` applies its transforms in order to the base distribution's draws
    (reparameterised when the base's are), and in ``log_prob`` walks them backwards, inverting
    each and subtracting its ``log_abs_det_jacobian``. A transform whose events are wider than the
    base's (``AffineTransform(..., event_dim=1)`` on a batch of scalars) makes the base
    ``Independent`` over those dims and moves them from the batch to the event shape, as PyTorch
    does (Note [Transform event dims] in transform_base.py). A transform made with
    ``cache_size=1`` remembers its last ``(x, y)``, so that the inverse of a value it just produced
    is the exact ``x`` (``atanh`` of a ``tanh`` that rounded to 1 is infinite), as in PyTorch.
"""

from __future__ import annotations

import tensor
from tensor import Tensor

from . import constraints
from .continuous import Normal
from .distribution import Distribution, Independent, sum_rightmost
from .transform_base import ComposeTransform, Transform
from .transforms import ExpTransform

__all__ = ["LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (one or a list, applied in order;
    Note [Transformed densities]).

    Raises:
        ValueError: for something other than Transforms, or a base with fewer dims than the
            transforms' events need.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms, validate_args=None) -> None:
        self.transforms = [transforms] if isinstance(transforms, Transform) else list(transforms)
        for t in self.transforms:
            if not isinstance(t, Transform):
                raise ValueError(f"transforms must be a Transform or a list of Transforms, got {type(t).__name__}")
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        chain = ComposeTransform(self.transforms)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least {chain.domain.event_dim}, "
                             f"but got {base_shape}.")
        forward_shape = chain.forward_shape(base_shape)
        expanded_base_shape = tuple(chain.inverse_shape(forward_shape))
        if tuple(base_shape) != expanded_base_shape:  # the transforms' parameters broadcast the base
            base_batch = expanded_base_shape[:len(expanded_base_shape) - base_event_dim]
            base_distribution = base_distribution.expand(base_batch)
        if chain.domain.event_dim > base_event_dim:
            base_distribution = Independent(base_distribution, chain.domain.event_dim - base_event_dim)
        self.base_dist = base_distribution
        event_dim = max(chain.codomain.event_dim, base_event_dim + chain.codomain.event_dim - chain.domain.event_dim)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args)

    @property
    def has_rsample(self) -> bool:
        """Whether the base distribution has a reparameterised sample."""
        return self.base_dist.has_rsample

    @property
    def support(self):
        """The last transform's codomain over the event dims (the base's support without transforms)."""
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        extra = len(self._event_shape) - support.event_dim
        return constraints.independent(support, extra) if extra > 0 else support

    def sample(self, sample_shape=()) -> Tensor:
        """The base's draws through the transforms (without gradients)."""
        with tensor.no_grad():
            return self._forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()) -> Tensor:
        """The base's reparameterised draws through the transforms."""
        return self._forward(self.base_dist.rsample(sample_shape))

    def _forward(self, x: Tensor) -> Tensor:
        for t in self.transforms:
            x = t(x)
        return x

    def expand(self, batch_shape, _instance=None):
        """The same distribution with the base's batch broadcast to match ``batch_shape``."""
        new = type(self).__new__(type(self))
        shape = tuple(batch_shape) + tuple(self._event_shape)
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = tuple(shape)[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist, new.transforms = self.base_dist.expand(base_batch), self.transforms
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def log_prob(self, value: Tensor) -> Tensor:
        """The base's log density at the inverted value, less each transform's log-determinant.

        Raises:
            ValueError: with ``validate_args``, for a value outside the support.
        """
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        result, y = 0.0, value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            result = result - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return result + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """``value`` mirrored about 1/2 where the transforms decrease."""
        sign = ComposeTransform(self.transforms).sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        """The base's cdf at the inverted value (mirrored for decreasing transforms).

        Raises:
            NotImplementedError: for a base without a cdf.
            ValueError: with ``validate_args``, for an inverted value outside the base's support.
        """
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        """The base's icdf (of the mirrored probability for decreasing transforms) through the transforms.

        Raises:
            NotImplementedError: for a base without an icdf.
        """
        return self._forward(self.base_dist.icdf(self._monotonize_cdf(value)))


class LogNormal(TransformedDistribution):
    """``exp`` of a normal variable of mean ``loc`` and standard deviation ``scale``.

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args)

    @property
    def loc(self) -> Tensor:
        """The underlying normal's mean."""
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        """The underlying normal's standard deviation."""
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        """``exp(loc + scale ** 2 / 2)``."""
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        """``exp(loc - scale ** 2)``."""
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self) -> Tensor:
        """``(exp(scale ** 2) - 1) exp(2 loc + scale ** 2)``."""
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self) -> Tensor:
        """The normal's entropy plus ``loc``."""
        return self.base_dist.entropy() + self.loc
