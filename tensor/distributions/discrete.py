"""``Bernoulli``, ``Categorical``, ``OneHotCategorical`` and ``Poisson`` (PyTorch's
``torch.distributions``; Note [Distribution shapes]).

Each takes ``probs`` or ``logits`` (exactly one) and derives the other when asked, as PyTorch's
do: a Bernoulli's logits are ``log(p) - log(1 - p)``, a Categorical's are normalised so that
``logsumexp`` over the last dim is 0.
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import Distribution, broadcast_all, softplus

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "Poisson"]


def _one_of(probs, logits) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _clamped(probs: Tensor) -> Tensor:
    eps = tensor.finfo(probs.dtype).eps
    return probs.clamp(eps, 1 - eps)


class SuccessProbability(Distribution):
    """A distribution over trials of success probability ``probs`` (``sigmoid(logits)``): the
    parameter given, broadcast, and the other derived on first use (PyTorch's lazy_property)."""

    def _set_parameters(self, probs, logits, *others) -> tuple:
        """Store ``probs`` or ``logits`` (exactly one), broadcast with ``others``; returns the
        broadcast ``others``.

        Raises:
            ValueError: for both or neither of ``probs`` and ``logits``.
        """
        _one_of(probs, logits)
        name, given = ("probs", probs) if probs is not None else ("logits", logits)
        *others, param = broadcast_all(*others, given)
        setattr(self, name, param)
        return tuple(o.to(param.dtype) for o in others)

    def __getattr__(self, name: str):
        if name == "logits" and "probs" in self.__dict__:
            p = _clamped(self.probs)
            self.logits = p.log() - (-p).log1p()
            return self.logits
        if name == "probs" and "logits" in self.__dict__:
            self.probs = tensor.sigmoid(self.logits)
            return self.probs
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _param(self) -> Tensor:
        return self.__dict__.get("probs", self.__dict__.get("logits"))

    @property
    def param_shape(self) -> tensor.Size:
        """The shape of the parameter given (``probs`` or ``logits``)."""
        return tensor.Size(self._param().shape)


class Bernoulli(SuccessProbability):
    """1 with probability ``probs`` (``sigmoid(logits)``), else 0.

    Raises:
        ValueError: for both or neither of ``probs`` and ``logits``; with ``validate_args``, for
            probabilities outside ``[0, 1]``.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        self._set_parameters(probs, logits)
        super().__init__(self._param().shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where ``probs > 0.5``, 0 where below, NaN at exactly 0.5."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return tensor.where(self.probs == 0.5, tensor.full_like(mode, math.nan), mode)

    @property
    def variance(self) -> Tensor:
        """``probs * (1 - probs)``."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        """Draws of 0 and 1 in the parameters' dtype (without gradients)."""
        with tensor.no_grad():
            return tensor.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        """``value * log(p) + (1 - value) * log(1 - p)``, from the logits without overflow.

        Raises:
            ValueError: with ``validate_args``, for a value other than 0 or 1.
        """
        if self._validate_args:
            self._validate_sample(value)
        logits, value = tensor.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        return logits * value - softplus(logits)

    def entropy(self) -> Tensor:
        """``-(p log p + (1 - p) log(1 - p))``."""
        return softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``[0, 1]`` along a new first dim (expanded over the batch with ``expand``)."""
        values = tensor.arange(2, dtype=self._param().dtype, device=self._param().device)
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.expand((2,) + self._batch_shape) if expand else values


class Categorical(Distribution):
    """One of ``K`` categories (the last dim of ``probs``/``logits``), with those (unnormalised)
    probabilities or log-probabilities; values are indices.

    Raises:
        ValueError: for both or neither of ``probs`` and ``logits``, or fewer than one dim; with
            ``validate_args``, for negative probabilities.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        _one_of(probs, logits)
        param = probs if probs is not None else logits
        if param.ndim < 1:
            raise ValueError("`probs` or `logits` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], (), validate_args)

    def __getattr__(self, name: str):
        if name == "logits" and "probs" in self.__dict__:
            self.logits = _clamped(self.probs).log()
            return self.logits
        if name == "probs" and "logits" in self.__dict__:
            self.probs = tensor.softmax(self.logits, -1)
            return self.probs
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def support(self):
        """The indices ``0 .. K - 1``."""
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> tuple:
        """``batch_shape + (K,)``."""
        return self._batch_shape + (self._num_events,)

    @property
    def mean(self) -> Tensor:
        """NaN: categories have no order."""
        return tensor.full(self._batch_shape, math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        """The most likely index."""
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        """NaN: categories have no order."""
        return self.mean

    def sample(self, sample_shape=()) -> Tensor:
        """Indices (int64) of shape ``sample_shape + batch_shape``."""
        sample_shape = tuple(sample_shape)
        n = math.prod(sample_shape)
        with tensor.no_grad():
            flat = self.probs.reshape(-1, self._num_events)
            draws = tensor.multinomial(flat, n, replacement=True)  # (batch, n)
        return draws.T.reshape(sample_shape + self._batch_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log-probability of the index ``value``.

        Raises:
            ValueError: with ``validate_args``, for an index outside ``0 .. K - 1``.
        """
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, logits = tensor.broadcast_tensors(value, self.logits)
        return logits.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        """``-sum(p log p)`` over the categories."""
        logits = self.logits.clamp(min=tensor.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The indices ``0 .. K - 1`` along a new first dim (expanded over the batch with ``expand``)."""
        values = tensor.arange(self._num_events, device=self.probs.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class CategoricalBacked(Distribution):
    """A distribution built on a ``Categorical`` (``self._categorical``), whose parameters it shows."""

    _categorical: Categorical

    @property
    def probs(self) -> Tensor:
        """The normalised probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """The normalised log-probabilities."""
        return self._categorical.logits


class OneHotCategorical(CategoricalBacked):
    """``Categorical`` with its draws as one-hot vectors (event shape ``(K,)``).

    Raises:
        ValueError: as ``Categorical``.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args=False)
        self._validate_args = self._categorical._validate_args

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self.probs

    @property
    def mode(self) -> Tensor:
        """The one-hot vector of the most likely category."""
        return _one_hot(self.probs.argmax(-1), self._event_shape[0], self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        """``probs * (1 - probs)``."""
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        """One-hot draws in the parameters' dtype."""
        return _one_hot(self._categorical.sample(sample_shape), self._event_shape[0], self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log-probability of the category ``value`` marks.

        Raises:
            ValueError: with ``validate_args``, for a value that is not one-hot.
        """
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        """As the categorical distribution's."""
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The ``K`` one-hot vectors along a new first dim."""
        k = self._event_shape[0]
        values = tensor.eye(k, dtype=self.probs.dtype, device=self.probs.device)
        values = values.reshape((k,) + (1,) * len(self._batch_shape) + (k,))
        return values.expand((k,) + self._batch_shape + (k,)) if expand else values

    def expand(self, batch_shape, _instance=None):
        """The same distribution with the batch broadcast to ``batch_shape``."""
        new = OneHotCategorical.__new__(OneHotCategorical)
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, tuple(batch_shape), self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        return f"OneHotCategorical({repr(self._categorical)[len('Categorical('):-1]})"


def _one_hot(indices: Tensor, k: int, dtype) -> Tensor:
    return (indices.unsqueeze(-1) == tensor.arange(k, device=indices.device)).to(dtype)


class Poisson(Distribution):
    """The Poisson distribution of rate ``rate`` (mean and variance ``rate``).

    Raises:
        ValueError: with ``validate_args``, for a negative ``rate``.
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        """``rate``."""
        return self.rate

    @property
    def mode(self) -> Tensor:
        """``floor(rate)``."""
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        """``rate``."""
        return self.rate

    def sample(self, sample_shape=()) -> Tensor:
        """Counts in the rate's dtype (without gradients)."""
        with tensor.no_grad():
            return tensor.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        """``value * log(rate) - rate - log(value!)`` (0 log 0 taken as 0).

        Raises:
            ValueError: with ``validate_args``, for a value that is not a nonnegative integer.
        """
        if self._validate_args:
            self._validate_sample(value)
        rate, value = tensor.broadcast_tensors(self.rate, value.to(self.rate.dtype))
        return tensor.xlogy(value, rate) - rate - (value + 1).lgamma()
