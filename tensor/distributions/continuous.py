"""``Normal``, ``Uniform``, ``Exponential`` and ``Laplace`` (PyTorch's ``torch.distributions``;
Note [Distribution shapes])."""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import LOG_SQRT_2PI, Distribution, Located, broadcast_all

__all__ = ["Exponential", "Laplace", "Normal", "Uniform"]


class _LocationScale(Located):
    """A real distribution of location ``loc`` and positive scale ``scale`` (broadcast).

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive (or a NaN parameter).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)


class Normal(_LocationScale):
    """The normal distribution of mean ``loc`` and standard deviation ``scale`` (broadcast).

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive (or a NaN parameter).
    """

    @property
    def stddev(self) -> Tensor:
        """``scale``."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """``scale ** 2``."""
        return self.scale.pow(2)

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc + scale * eps`` for standard normal ``eps``: differentiable in the parameters."""
        eps = tensor.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape or a NaN.
        """
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.variance) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        """``P(X <= value)``."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + tensor.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which the probability is ``value``."""
        return self.loc + self.scale * tensor.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        """``0.5 + log(sqrt(2 pi) * scale)``."""
        return 0.5 + LOG_SQRT_2PI + self.scale.log()


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)`` (broadcast); its support is ``[low, high]`` as
    torch's, with ``log_prob(high) = -inf``.

    Raises:
        ValueError: with ``validate_args``, for ``low >= high``.
    """

    arg_constraints = {"low": constraints.real, "high": constraints.real}
    has_rsample = True

    def __init__(self, low, high, validate_args=None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, (), validate_args)
        if self._validate_args and not (self.low < self.high).all():
            raise ValueError("Uniform is not defined when low >= high")

    @property
    def support(self):
        """``[low, high]`` (torch's closed interval)."""
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        """``(low + high) / 2``."""
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        """NaN: every value in the support is as likely (``nan * high``, differentiable as torch's)."""
        return self.high * math.nan

    @property
    def variance(self) -> Tensor:
        """``(high - low) ** 2 / 12``."""
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()) -> Tensor:
        """``low + u * (high - low)`` for ``u`` uniform on ``[0, 1)``."""
        u = tensor.rand(self._extended_shape(sample_shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        """``-log(high - low)`` inside ``[low, high)``, ``-inf`` outside (at ``high`` too, as torch).

        Raises:
            ValueError: with ``validate_args``, for a value outside the support.
        """
        if self._validate_args:
            self._validate_sample(value)
        inside = ((self.low <= value) & (value < self.high)).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        """``(value - low) / (high - low)``, clamped to ``[0, 1]``."""
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value: Tensor) -> Tensor:
        """``low + value * (high - low)``."""
        return self.low + value * (self.high - self.low)

    def entropy(self) -> Tensor:
        """``log(high - low)``."""
        return (self.high - self.low).log()


class Exponential(Distribution):
    """The exponential distribution of rate ``rate`` (mean ``1 / rate``).

    Raises:
        ValueError: with ``validate_args``, for a ``rate`` not positive.
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        """0."""
        return tensor.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        """``1 / rate ** 2``."""
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()) -> Tensor:
        """``-log(1 - u) / rate`` for ``u`` uniform on ``[0, 1)``."""
        u = tensor.rand(self._extended_shape(sample_shape), dtype=self.rate.dtype, device=self.rate.device)
        return -(-u).log1p() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        """``log(rate) - rate * value``.

        Raises:
            ValueError: with ``validate_args``, for a negative value.
        """
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        """``1 - exp(-rate * value)``."""
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        """``-log(1 - value) / rate``."""
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        """``1 - log(rate)``."""
        return 1.0 - self.rate.log()


class Laplace(_LocationScale):
    """The Laplace distribution of location ``loc`` and scale ``scale`` (broadcast).

    Raises:
        ValueError: with ``validate_args``, for a ``scale`` not positive.
    """

    @property
    def variance(self) -> Tensor:
        """``2 * scale ** 2``."""
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        """``sqrt(2) * scale``."""
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc - scale * sign(u) * log(1 - |u|)`` for ``u`` uniform on ``(-1, 1)``."""
        eps = tensor.finfo(self.loc.dtype).eps
        u = tensor.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        u = (2 * u - 1).clamp(eps - 1, 1 - eps)  # never -1: log(0)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        """``-log(2 scale) - |value - loc| / scale``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape or a NaN.
        """
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        """``P(X <= value)``."""
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        """The value below which the probability is ``value``."""
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        """``1 + log(2 scale)``."""
        return 1 + (2 * self.scale).log()
