"""``Gamma``, ``Chi2``, ``Beta``, ``Dirichlet`` and ``StudentT`` (PyTorch's ``torch.distributions``;
Note [Distribution shapes]). Their ``rsample`` draws gamma variates through
``tensor._standard_gamma``, differentiable in the concentrations by implicit reparameterisation
(Note [Implicit gamma gradient] in tensor/ops/special_extra.py).

Departure: torch differentiates Dirichlet and Beta samples with its own ``_dirichlet_grad``
formula; here they are normalised gamma samples and the gradient flows through each gamma's
implicit gradient. Both are exact reparameterisation gradients of the same samples' law, so
expectations of gradients agree; a single sample's gradient differs.
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import Distribution, broadcast_all, clamp_to_unit_interval

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma", "StudentT"]


def _gamma_samples(concentration: Tensor, shape: tuple) -> Tensor:
    """Gamma(concentration, 1) samples of ``shape``, differentiable in ``concentration``."""
    return tensor._standard_gamma(concentration.expand(shape))


def _dirichlet_mode(concentration: Tensor) -> Tensor:
    """torch's mode: ``(c - 1)^+`` normalised (NaN where no ``c`` exceeds 1: 0 / 0), and where every
    ``c < 1`` the first corner."""
    excess = (concentration - 1).clamp(min=0.0)
    mode = excess / excess.sum(-1, keepdim=True)
    corner = tensor.zeros_like(mode).scatter_(-1, excess.argmax(-1, keepdim=True), 1.0)
    return tensor.where((concentration < 1).all(-1, keepdim=True), corner, mode)


class Gamma(Distribution):
    """The gamma distribution of shape ``concentration`` and inverse scale ``rate`` (broadcast).

    Raises:
        ValueError: with ``validate_args``, for a parameter that is not positive.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        """``concentration / rate``."""
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        """``(concentration - 1) / rate``, 0 for a concentration below 1."""
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        """``concentration / rate ** 2``."""
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()) -> Tensor:
        """Samples differentiable in both parameters, at least the dtype's smallest normal number."""
        shape = self._extended_shape(sample_shape)
        value = _gamma_samples(self.concentration, shape) / self.rate.expand(shape)
        return value.clamp(min=tensor.finfo(value.dtype).tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value``.

        Raises:
            ValueError: with ``validate_args``, for a negative value or one of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(value)
        value = tensor.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        c, r = self.concentration, self.rate
        return tensor.xlogy(c, r) + tensor.xlogy(c - 1, value) - r * value - tensor.lgamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        """``P(X <= value)``, the regularised lower incomplete gamma function."""
        if self._validate_args:
            self._validate_sample(value)
        return tensor.special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        """``c - log(rate) + lgamma(c) + (1 - c) digamma(c)`` for concentration ``c``."""
        c = self.concentration
        return c - self.rate.log() + tensor.lgamma(c) + (1.0 - c) * tensor.digamma(c)


class Chi2(Gamma):
    """The chi-squared distribution of ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Raises:
        ValueError: with ``validate_args``, for ``df`` not positive.
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args)

    @property
    def df(self) -> Tensor:
        """The degrees of freedom."""
        return self.concentration * 2

    def expand(self, batch_shape, _instance=None):
        """The same distribution broadcast to ``batch_shape``."""
        new = Gamma.__new__(Chi2)
        Gamma.__init__(new, self.concentration.expand(batch_shape), self.rate.expand(batch_shape), False)
        new._validate_args = self._validate_args
        return new


class Dirichlet(Distribution):
    """The Dirichlet distribution over the simplex of ``concentration``'s last dim (its event).

    Raises:
        ValueError: for a ``concentration`` of no dims; with ``validate_args``, for one not positive.
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    @property
    def mean(self) -> Tensor:
        """``concentration`` over its sum."""
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """``(c - 1)^+`` normalised (NaN where no ``c`` exceeds 1); where every ``c < 1``, the first
        corner, as torch's."""
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self) -> Tensor:
        """``c (c0 - c) / (c0^2 (c0 + 1))`` for the total ``c0``."""
        c = self.concentration
        total = c.sum(-1, keepdim=True)
        return c * (total - c) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        """Normalised gamma samples, differentiable in ``concentration`` (see the module docstring)."""
        gammas = _gamma_samples(self.concentration, self._extended_shape(sample_shape))
        return clamp_to_unit_interval(gammas / gammas.sum(-1, keepdim=True))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value`` (a point of the simplex).

        Raises:
            ValueError: with ``validate_args``, for a value off the simplex or of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return tensor.xlogy(c - 1.0, value).sum(-1) + tensor.lgamma(c.sum(-1)) - tensor.lgamma(c).sum(-1)

    def entropy(self) -> Tensor:
        """The differential entropy of each distribution."""
        c = self.concentration
        k, total = c.shape[-1], c.sum(-1)
        return (tensor.lgamma(c).sum(-1) - tensor.lgamma(total) - (k - total) * tensor.digamma(total)
                - ((c - 1.0) * tensor.digamma(c)).sum(-1))


class Beta(Distribution):
    """The beta distribution on [0, 1] with shapes ``concentration1`` (of 1) and
    ``concentration0`` (of 0), broadcast.

    Raises:
        ValueError: with ``validate_args``, for a concentration that is not positive.
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, (), validate_args)

    @property
    def _total(self) -> Tensor:
        return self.concentration1 + self.concentration0

    @property
    def mean(self) -> Tensor:
        """``concentration1 / (concentration1 + concentration0)``."""
        return self.concentration1 / self._total

    @property
    def mode(self) -> Tensor:
        """``(concentration1 - 1) / (total - 2)``, clamped to [0, 1] as the first component of the
        two-sided Dirichlet's mode (torch's; NaN where neither concentration exceeds 1 and not both
        are below it)."""
        return _dirichlet_mode(tensor.stack([self.concentration1, self.concentration0], -1))[..., 0]

    @property
    def variance(self) -> Tensor:
        """``c1 c0 / (total^2 (total + 1))``."""
        total = self._total
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        """``g1 / (g1 + g0)`` for gamma samples of the two concentrations, differentiable in both."""
        shape = self._extended_shape(sample_shape)
        heads, tails = _gamma_samples(self.concentration1, shape), _gamma_samples(self.concentration0, shape)
        return clamp_to_unit_interval(heads / (heads + tails))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value``.

        Raises:
            ValueError: with ``validate_args``, for a value outside [0, 1] or of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(value)
        c1, c0 = self.concentration1, self.concentration0
        return (tensor.xlogy(c1 - 1.0, value) + tensor.xlogy(c0 - 1.0, 1 - value)
                + tensor.lgamma(self._total) - tensor.lgamma(c1) - tensor.lgamma(c0))

    def entropy(self) -> Tensor:
        """The differential entropy of each distribution."""
        c1, c0, total = self.concentration1, self.concentration0, self._total
        return (tensor.lgamma(c1) + tensor.lgamma(c0) - tensor.lgamma(total) - (c1 - 1) * tensor.digamma(c1)
                - (c0 - 1) * tensor.digamma(c0) + (total - 2) * tensor.digamma(total))


class StudentT(Distribution):
    """Student's t distribution of ``df`` degrees of freedom, location ``loc`` and scale ``scale``
    (broadcast).

    Raises:
        ValueError: with ``validate_args``, for ``df`` or ``scale`` not positive.
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        """``loc`` where ``df > 1``, else NaN."""
        return tensor.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """``scale^2 df / (df - 2)`` for ``df > 2``, infinite for ``1 < df <= 2``, NaN below."""
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        return tensor.where(df > 2, finite, tensor.where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=()) -> Tensor:
        """``loc + scale * x / sqrt(z / df)`` for standard normal ``x`` and chi-squared ``z``."""
        shape = self._extended_shape(sample_shape)
        x = tensor.randn(shape, dtype=self.df.dtype, device=self.df.device)
        z = 2 * _gamma_samples(0.5 * self.df, shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at ``value``.

        Raises:
            ValueError: with ``validate_args``, for a value of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        normaliser = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
                      + tensor.lgamma(0.5 * df) - tensor.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * tensor.log1p(y.pow(2) / df) - normaliser

    def entropy(self) -> Tensor:
        """The differential entropy of each distribution."""
        df = self.df
        log_beta = tensor.lgamma(0.5 * df) + math.lgamma(0.5) - tensor.lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (tensor.digamma(0.5 * (df + 1)) - tensor.digamma(0.5 * df))
                + 0.5 * df.log() + log_beta)
