"""``Distribution``, the base of ``tensor.distributions`` (PyTorch's ``torch.distributions``), and
``Independent``.

Note [Distribution shapes]
    As in PyTorch, a distribution is a batch of independent distributions, each over events:
    ``batch_shape`` (the parameters' broadcast shape, less the event dims) times
    ``event_shape`` (one draw: ``()`` for a scalar distribution, ``(k,)`` for a vector one).
    ``sample(sample_shape)`` has shape ``sample_shape + batch_shape + event_shape``, and
    ``log_prob(value)`` the shape of ``value`` less the event dims. With ``validate_args`` (on
    by default, as in PyTorch under ``__debug__``), parameters are checked against
    ``arg_constraints`` when made and values against ``support`` in ``log_prob``, raising
    PyTorch's ``ValueError``.
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor
from tensor.ops.activation import log1pexp

from . import constraints

__all__ = ["Distribution", "Independent", "Located"]


class Distribution:
    """The base of the distributions (Note [Distribution shapes]).

    Raises:
        ValueError: with ``validate_args``, for a parameter outside its constraint.
    """

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support = None
    _validate_default = True

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions validate by default (PyTorch's switch).

        Raises:
            ValueError: for a non-bool ``value``.
        """
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects a bool, got {value!r}")
        Distribution._validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None) -> None:
        self._batch_shape, self._event_shape = tensor.Size(batch_shape), tensor.Size(event_shape)
        self._validate_args = self._validate_default if validate_args is None else validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        """Raise PyTorch's ValueError for a parameter outside its ``arg_constraints`` entry."""
        for name, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if name not in self.__dict__ and not hasattr(type(self), name):
                continue  # derived on first use (a Bernoulli's logits from its probs): checked through the given one
            value = getattr(self, name)
            if not constraint.check(value).all():
                raise ValueError(
                    f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                    f"values:\n{value}"
                )

    @property
    def batch_shape(self) -> tensor.Size:
        """The shape of the batch of distributions."""
        return self._batch_shape

    @property
    def event_shape(self) -> tensor.Size:
        """The shape of one draw."""
        return self._event_shape

    @property
    def mean(self) -> Tensor:
        """The mean of each distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self) -> Tensor:
        """The most likely value of each distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self) -> Tensor:
        """The variance of each distribution."""
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of each distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()) -> Tensor:
        """Draws of shape ``sample_shape + batch_shape + event_shape``, without gradients."""
        with tensor.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Reparameterised draws: gradients flow to the parameters.

        Raises:
            NotImplementedError: for a distribution without a reparameterisation.
        """
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))``."""
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of ``cdf`` at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def entropy(self) -> Tensor:
        """The entropy of each distribution (in nats)."""
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support, along a new first dim.

        Raises:
            NotImplementedError: for a distribution whose support is not enumerable.
        """
        raise NotImplementedError(f"{type(self).__name__} has no enumerate_support")

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return self.entropy().exp()

    def expand(self, batch_shape, _instance=None):
        """The same distribution broadcast to ``batch_shape`` (parameters expanded, not copied).

        Raises:
            RuntimeError: for a ``batch_shape`` the parameters do not broadcast to.
        """
        new = type(self).__new__(type(self))
        batch_shape = tuple(batch_shape)
        for name, value in self.__dict__.items():  # parameters expanded, other fields as they are
            if name in self.arg_constraints and isinstance(value, Tensor):
                value = value.expand(batch_shape + value.shape[len(self._batch_shape):])
            new.__dict__[name] = value
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _extended_shape(self, sample_shape=()) -> tensor.Size:
        return tensor.Size(tuple(sample_shape) + self._batch_shape + self._event_shape)

    def _validate_sample(self, value: Tensor) -> None:
        """Raise PyTorch's ValueError for a value whose shape does not broadcast with the batch
        and event shapes, or that is outside the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event = len(self._event_shape)
        if tuple(value.shape[len(value.shape) - event:]) != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{self._event_shape}.")
        actual, expected = value.shape, self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {tuple(actual)} vs "
                                 f"{expected}.")
        if not self.support.check(value).all():
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be within the "
                f"support ({self.support!r}) of the distribution {self!r}, but found invalid values:\n{value}"
            )

    def __repr__(self) -> str:
        shown = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                shown.append(f"{name}: {value if value.numel() == 1 else tuple(value.shape)}")
        return f"{type(self).__name__}({', '.join(shown)})"


class Located(Distribution):
    """A distribution whose mean and mode are its parameter ``loc``."""

    @property
    def mean(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc


def softplus(x: Tensor) -> Tensor:
    """``log(1 + exp(x))`` without overflow, with derivative ``sigmoid(x)`` (0.5 at 0, as torch's;
    the form ``relu(x) + log1p(exp(-|x|))`` gives 0 there)."""
    return log1pexp(x)


def clamp_to_unit_interval(x: Tensor) -> Tensor:
    """``x`` kept inside ``[tiny, 1 - eps]`` of its dtype, as torch keeps probabilities it draws or inverts."""
    info = tensor.finfo(x.dtype)
    return x.clamp(min=info.tiny, max=1 - info.eps)


def broadcast_all(*values) -> tuple:
    """The values (tensors or numbers) as tensors broadcast to one shape, in the dtype of the
    first tensor among them (the default float dtype if none is a tensor)."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None and like.is_floating_point() else tensor.get_default_dtype()
    device = like.device if like is not None else None
    as_tensors = [v if isinstance(v, Tensor) else tensor.tensor(float(v), dtype=dtype, device=device) for v in values]
    return tuple(tensor.broadcast_tensors(*as_tensors))


def sum_rightmost(value: Tensor, dims: int) -> Tensor:
    """``value`` summed over its last ``dims`` dims."""
    return value.reshape(*value.shape[: value.ndim - dims], -1).sum(-1) if dims else value


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch dims made event dims
    (a diagonal Normal over vectors from a batch of scalar Normals): ``log_prob`` and
    ``entropy`` sum over them.

    Raises:
        ValueError: for more dims than the base's batch has.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args=None) -> None:
        batch = base_distribution.batch_shape
        if reinterpreted_batch_ndims > len(batch):
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                f"{reinterpreted_batch_ndims} vs {len(batch)}"
            )
        split = len(batch) - reinterpreted_batch_ndims
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        super().__init__(batch[:split], batch[split:] + base_distribution.event_shape, validate_args)

    @property
    def has_rsample(self) -> bool:
        """Whether the base distribution has a reparameterised sample."""
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        """The base distribution's, when no dims are reinterpreted (a product support is not enumerated)."""
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @property
    def support(self):
        """The base distribution's support over the reinterpreted dims together."""
        support = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            support = constraints.independent(support, self.reinterpreted_batch_ndims)
        return support

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The base distribution's, when no dims are reinterpreted.

        Raises:
            NotImplementedError: with reinterpreted dims, as torch.
        """
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    @property
    def mean(self) -> Tensor:
        """The base distribution's mean."""
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        """The base distribution's mode."""
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        """The base distribution's variance."""
        return self.base_dist.variance

    def sample(self, sample_shape=()) -> Tensor:
        """The base distribution's draws."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """The base distribution's reparameterised draws."""
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        """The base distribution's log_prob summed over the reinterpreted dims."""
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        """The base distribution's entropy summed over the reinterpreted dims."""
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def expand(self, batch_shape, _instance=None):
        """The same distribution with the batch broadcast to ``batch_shape``."""
        kept = self.base_dist.batch_shape[len(self.batch_shape):]
        return Independent(self.base_dist.expand(tuple(batch_shape) + kept), self.reinterpreted_batch_ndims,
                           validate_args=self._validate_args)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
