"""Transforms of random variables and ``TransformedDistribution`` (PyTorch's
``torch.distributions.transforms``): ``ExpTransform``, ``AffineTransform``, ``SigmoidTransform``,
``TanhTransform`` (a squashed Normal, as soft actor-critic policies use) and ``ComposeTransform``;
and ``LogNormal``, a Normal through ``exp``.

Note [Transformed densities]
    For ``y = f(x)`` with ``f`` a bijection, ``log p_Y(y) = log p_X(f^-1(y)) - log |det J_f(x)|``.
    ``TransformedDistribution`` applies its transforms in order to the base distribution's draws
    (reparameterised when the base's are), and in ``log_prob`` walks them backwards, inverting
    each and subtracting its ``log_abs_det_jacobian``. A transform made with ``cache_size=1``
    remembers its last ``(x, y)``, so that the inverse of a value it just produced is the exact
    ``x`` (``atanh`` of a ``tanh`` that rounded to 1 would be infinite), as in PyTorch.
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .continuous import Normal
from .distribution import Distribution, softplus, sum_rightmost

__all__ = [
    "AffineTransform", "ComposeTransform", "ExpTransform", "LogNormal", "SigmoidTransform", "TanhTransform",
    "Transform", "TransformedDistribution",
]


class Transform:
    """An invertible map ``y = transform(x)`` with the log of its Jacobian's determinant.

    Raises:
        ValueError: for a ``cache_size`` other than 0 or 1.
    """

    domain = constraints.real
    codomain = constraints.real
    bijective = True
    sign = 1
    event_dim = 0

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError(f"cache_size must be 0 or 1, got {cache_size!r}")
        self._cache_size, self._cached = cache_size, None

    def __call__(self, x: Tensor) -> Tensor:
        if self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inverse(self, y: Tensor) -> Tensor:
        if self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse_call(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    @property
    def inv(self) -> Transform:
        """The inverse transform."""
        return _Inverse(self)

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse_call(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |det dy/dx|`` at ``x`` (with ``y = self(x)``), per element (or per event)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _Inverse(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__()
        self._transform = transform
        self.domain, self.codomain = transform.codomain, transform.domain
        self.sign, self.event_dim = transform.sign, transform.event_dim

    @property
    def inv(self) -> Transform:
        return self._transform

    def __call__(self, x: Tensor) -> Tensor:
        return self._transform._inverse(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._transform.log_abs_det_jacobian(y, x)

    def __repr__(self) -> str:
        return f"_InverseTransform({self._transform!r})"


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
    """``y = 1 / (1 + exp(-x))``."""

    codomain = constraints.unit_interval

    def _call(self, x):
        return tensor.sigmoid(x)

    def _inverse_call(self, y):
        eps = tensor.finfo(y.dtype).eps
        y = y.clamp(eps, 1 - eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        """``log sigmoid(x) + log sigmoid(-x)``, through softplus."""
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse_call(self, y):
        eps = tensor.finfo(y.dtype).eps
        return y.clamp(eps - 1, 1 - eps).atanh()

    def log_abs_det_jacobian(self, x, y):
        """``log(1 - tanh(x) ** 2)``, as ``2 (log 2 - x - softplus(-2x))``, exact for large ``|x|``."""
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AffineTransform(Transform):
    """``y = loc + scale * x`` (broadcast); with ``event_dim``, the log-determinant sums over that
    many trailing dims."""

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc, self.scale, self.event_dim = loc, scale, event_dim

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
        return sum_rightmost(result, self.event_dim)


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order."""

    def __init__(self, parts, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.parts = list(parts)
        self.event_dim = max((p.event_dim for p in self.parts), default=0)
        if self.parts:
            self.domain, self.codomain = self.parts[0].domain, self.parts[-1].codomain

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse_call(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        """The sum of the parts' (each at its own input)."""
        total = tensor.zeros_like(x)
        for part in self.parts:
            out = part(x)
            total = total + sum_rightmost(part.log_abs_det_jacobian(x, out), self.event_dim - part.event_dim)
            x = out
        return total

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"ComposeTransform(\n    {inner}\n)"


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (one or a list, applied in order;
    Note [Transformed densities]). Elementwise transforms keep the base's shapes."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms, validate_args=None) -> None:
        self.base_dist = base_distribution
        self.transforms = [transforms] if isinstance(transforms, Transform) else list(transforms)
        for t in self.transforms:
            if not isinstance(t, Transform):
                raise ValueError(f"transforms must be a Transform or a list of Transforms, got {type(t).__name__}")
        super().__init__(base_distribution.batch_shape, base_distribution.event_shape, validate_args)

    @property
    def has_rsample(self) -> bool:
        """Whether the base distribution has a reparameterised sample."""
        return self.base_dist.has_rsample

    @property
    def support(self):
        """The last transform's codomain (the base's support without transforms)."""
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

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
        """The same distribution with the base's batch broadcast to ``batch_shape``."""
        new = type(self).__new__(type(self))
        new.base_dist, new.transforms = self.base_dist.expand(batch_shape), self.transforms
        Distribution.__init__(new, tuple(batch_shape), self._event_shape, validate_args=False)
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
            result = result - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.event_dim)
            y = x
        return result + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))


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
