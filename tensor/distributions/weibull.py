"""``Weibull`` (PyTorch's ``torch.distributions.Weibull``): as torch builds it, a unit Exponential
through ``x^(1 / concentration)`` and then scaled, so ``rsample`` and ``log_prob`` are the
``TransformedDistribution``'s (Note [Transformed densities] in transformed_distribution.py)."""

from __future__ import annotations

import tensor
from tensor import Tensor

from . import constraints
from .continuous import Exponential
from .distribution import broadcast_all
from .location_scale import EULER_GAMMA
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The Weibull distribution of ``scale`` (lambda) and ``concentration`` (k), broadcast.

    Raises:
        ValueError: with ``validate_args``, for a parameter not positive.
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(tensor.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """The same distribution with the parameters broadcast to ``batch_shape``."""
        new = Weibull(self.scale.expand(batch_shape), self.concentration.expand(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """``scale * Gamma(1 + 1/k)``."""
        return self.scale * tensor.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Tensor:
        """``scale * ((k - 1) / k)^(1/k)`` for ``k > 1``, else 0 (where the density is largest, as a
        Gamma's mode; torch's formula gives NaN there, or ``scale`` for ``k = 1/2``: a negative
        base to an even power)."""
        ratio = (self.concentration - 1) / self.concentration
        return self.scale * ratio.clamp(min=0).pow(self.concentration_reciprocal)

    @property
    def variance(self) -> Tensor:
        """``scale^2 (Gamma(1 + 2/k) - Gamma(1 + 1/k)^2)``."""
        k_inv = self.concentration_reciprocal
        return self.scale.pow(2) * (tensor.lgamma(1 + 2 * k_inv).exp() - (2 * tensor.lgamma(1 + k_inv)).exp())

    def entropy(self) -> Tensor:
        """``gamma (1 - 1/k) + log(scale / k) + 1`` for Euler's constant ``gamma``."""
        k_inv = self.concentration_reciprocal
        return EULER_GAMMA * (1 - k_inv) + (self.scale * k_inv).log() + 1
