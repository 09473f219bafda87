"""``Cauchy``, ``Gumbel``, ``HalfNormal`` and ``HalfCauchy`` (PyTorch's ``torch.distributions``;
Note [Distribution shapes]): location-scale families, and the two folded at 0. torch builds
Gumbel and the half distributions as transformed ones; here they are written out, with the same
densities, moments and support."""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .continuous import Normal, _LocationScale
from .distribution import Distribution, broadcast_all

__all__ = ["EULER_GAMMA", "Cauchy", "Gumbel", "HalfCauchy", "HalfNormal"]

EULER_GAMMA = 0.57721566490153286060


class Cauchy(_LocationScale):
    """The Cauchy (Lorentz) distribution of median ``loc`` and half-width ``scale`` (broadcast).

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive.
    """

    @property
    def mean(self) -> Tensor:
        """NaN: the Cauchy distribution has no mean."""
        return tensor.full_like(self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """Infinite."""
        return tensor.full_like(self.loc, math.inf)

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc + scale * tan(pi (u - 1/2))`` for ``u`` uniform on ``[0, 1)``."""
        eps = tensor.empty(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        """``atan((value - loc) / scale) / pi + 1/2``."""
        if self._validate_args:
            self._validate_sample(value)
        return tensor.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        """``loc + scale * tan(pi (value - 1/2))``."""
        return tensor.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        """``log(4 pi scale)``."""
        return math.log(4 * math.pi) + self.scale.log()


class Gumbel(_LocationScale):
    """The Gumbel (type-I extreme value) distribution of location ``loc`` and scale ``scale``.

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive.
    """

    @property
    def mean(self) -> Tensor:
        """``loc + scale * euler_gamma``."""
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """``pi scale / sqrt(6)``."""
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        """``(pi scale)^2 / 6``."""
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()) -> Tensor:
        """``icdf(u)`` for ``u`` uniform on ``[0, 1)``."""
        return self.icdf(tensor.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device))

    def log_prob(self, value: Tensor) -> Tensor:
        """``z - exp(z) - log(scale)`` with ``z = (loc - value) / scale``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    def cdf(self, value: Tensor) -> Tensor:
        """``exp(-exp(-(value - loc) / scale))``."""
        if self._validate_args:
            self._validate_sample(value)
        return (-((self.loc - value) / self.scale).exp()).exp()

    def icdf(self, value: Tensor) -> Tensor:
        """``loc - scale * log(-log u)`` for ``u = tiny + value (1 - eps - tiny)``: torch's Gumbel is a
        transformed ``Uniform(tiny, 1 - eps)``, so 0 and 1 map to finite ends."""
        info = tensor.finfo(self.loc.dtype)
        u = info.tiny + value * (1 - info.eps - info.tiny)
        return self.loc - self.scale * (-u.log()).log()

    def entropy(self) -> Tensor:
        """``log(scale) + 1 + euler_gamma``."""
        return self.scale.log() + (1 + EULER_GAMMA)


class _Folded(Distribution):
    """``|X|`` for ``X`` of a symmetric ``base`` at 0 with scale ``scale``: the density doubled on
    ``[0, inf)`` and 0 below."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base_type: type

    def __init__(self, scale, validate_args=None) -> None:
        (self.scale,) = broadcast_all(scale)
        super().__init__(self.scale.shape, (), validate_args)

    @property
    def base_dist(self) -> Distribution:
        """The unfolded distribution."""
        return self._base_type(tensor.zeros_like(self.scale), self.scale, validate_args=False)

    @property
    def mode(self) -> Tensor:
        """0."""
        return tensor.zeros_like(self.scale)

    def rsample(self, sample_shape=()) -> Tensor:
        """``|x|`` for a draw ``x`` of the unfolded distribution."""
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value: Tensor) -> Tensor:
        """``log 2`` plus the unfolded log density, ``-inf`` below 0.

        Raises:
            ValueError: with ``validate_args``, for a negative value or one of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return tensor.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        """``2 F(value) - 1`` for the unfolded cdf ``F``."""
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        """The unfolded icdf at ``(prob + 1) / 2``."""
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        """The unfolded entropy less ``log 2``."""
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """``|X|`` for ``X ~ Normal(0, scale)``.

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive.
    """

    _base_type = Normal

    @property
    def mean(self) -> Tensor:
        """``scale * sqrt(2 / pi)``."""
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        """``scale^2 (1 - 2 / pi)``."""
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """``|X|`` for ``X ~ Cauchy(0, scale)``.

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive.
    """

    _base_type = Cauchy

    @property
    def mean(self) -> Tensor:
        """Infinite."""
        return tensor.full_like(self.scale, math.inf)

    @property
    def variance(self) -> Tensor:
        """Infinite."""
        return tensor.full_like(self.scale, math.inf)
