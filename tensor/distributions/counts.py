"""``Geometric``, ``Binomial`` and ``Multinomial`` (PyTorch's ``torch.distributions``; Note
[Distribution shapes]): counts of successes and failures in independent trials."""

from __future__ import annotations

import tensor
from tensor import Tensor

from . import constraints
from .discrete import Categorical, CategoricalBacked, SuccessProbability
from .distribution import Distribution, softplus

__all__ = ["Binomial", "Geometric", "Multinomial"]


class Geometric(SuccessProbability):
    """The number of failures before the first success in trials of success probability ``probs``
    (``sigmoid(logits)``).

    Raises:
        ValueError: for both or neither of ``probs`` and ``logits``; with ``validate_args``, for
            ``probs`` outside ``(0, 1]``.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None) -> None:
        self._set_parameters(probs, logits)
        super().__init__(self._param().shape, (), validate_args)
        if self._validate_args and probs is not None and not (self.probs > 0).all():
            raise ValueError(f"Expected parameter probs (Tensor of shape {tuple(self.probs.shape)}) of distribution "
                             f"{self!r} to satisfy the constraint {constraints.unit_interval!r}, "
                             f"but found invalid values:\n{self.probs[~(self.probs > 0)]}")

    @property
    def mean(self) -> Tensor:
        """``1 / probs - 1``."""
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        """0."""
        return tensor.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        """``(1 / probs - 1) / probs``."""
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()) -> Tensor:
        """``floor(log u / log(1 - probs))`` for ``u`` uniform on ``(0, 1]``, in the parameters' dtype."""
        with tensor.no_grad():
            tiny = tensor.finfo(self.probs.dtype).tiny
            u = tensor.empty(self._extended_shape(sample_shape), dtype=self.probs.dtype,
                             device=self.probs.device).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        """``value * log(1 - p) + log(p)`` (0 for no failures at ``p = 1``).

        Raises:
            ValueError: with ``validate_args``, for a value that is not a nonnegative integer.
        """
        if self._validate_args:
            self._validate_sample(value)
        value, probs = tensor.broadcast_tensors(value.to(self.probs.dtype), self.probs)
        probs = tensor.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        """The Bernoulli entropy of ``probs`` over ``probs``."""
        return (softplus(self.logits) - self.probs * self.logits) / self.probs


class Binomial(SuccessProbability):
    """The number of successes in ``total_count`` trials of success probability ``probs``
    (``sigmoid(logits)``), broadcast.

    Raises:
        ValueError: for both or neither of ``probs`` and ``logits``; with ``validate_args``, for a
            ``total_count`` that is not a nonnegative integer or ``probs`` outside ``[0, 1]``.
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None) -> None:
        (self.total_count,) = self._set_parameters(probs, logits, total_count)
        super().__init__(self._param().shape, (), validate_args)

    @property
    def support(self):
        """The integers ``0 .. total_count``."""
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        """``total_count * probs``."""
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        """``floor((total_count + 1) probs)``, at most ``total_count``."""
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        """``total_count * probs * (1 - probs)``."""
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        """Counts in the parameters' dtype (without gradients)."""
        shape = self._extended_shape(sample_shape)
        with tensor.no_grad():
            return tensor.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log-probability of ``value`` successes, from the logits without overflow.

        Raises:
            ValueError: with ``validate_args``, for a value outside ``0 .. total_count``.
        """
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_binomial = tensor.lgamma(n + 1) - tensor.lgamma(value + 1) - tensor.lgamma(n - value + 1)
        # n log(1 + e^logits), with n * max(logits, 0) written as torch does so that its gradient at 0 is n / 2
        normaliser = n * (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2 + n * (-logits.abs()).exp().log1p()
        return value * logits + log_binomial - normaliser

    def entropy(self) -> Tensor:
        """``-sum p log p`` over the support.

        Raises:
            NotImplementedError: where the ``total_count`` differs across the batch, as torch.
        """
        count = int(self.total_count.max())
        if not self.total_count.min() == count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``0 .. total_count`` along a new first dim (expanded over the batch with ``expand``).

        Raises:
            NotImplementedError: where the ``total_count`` differs across the batch, as torch.
        """
        count = int(self.total_count.max())
        if not self.total_count.min() == count:
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        param = self._param()
        values = tensor.arange(1 + count, dtype=param.dtype, device=param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class Multinomial(CategoricalBacked):
    """Counts over ``K`` categories (the last dim of ``probs``/``logits``, as ``Categorical``'s) in
    ``total_count`` independent draws.

    Raises:
        NotImplementedError: for a ``total_count`` that is not an int, as torch.
        ValueError: as ``Categorical``; with ``validate_args``, for a negative ``total_count``.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs=None, logits=None, validate_args=None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        if total_count < 0 and (self._validate_default if validate_args is None else validate_args):
            raise ValueError(f"Expected parameter total_count of distribution Multinomial to satisfy the constraint "
                             f"{constraints.nonnegative_integer!r}, but found invalid values:\n{total_count}")
        self._categorical = Categorical(probs=probs, logits=logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    @property
    def support(self):
        """Nonnegative counts summing to at most ``total_count``."""
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        """``total_count * probs``."""
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        """``total_count * probs * (1 - probs)``."""
        return self.total_count * self.probs * (1 - self.probs)

    def expand(self, batch_shape, _instance=None):
        """The same distribution broadcast to ``batch_shape``."""
        batch_shape = tuple(batch_shape)
        new = Multinomial.__new__(Multinomial)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()) -> Tensor:
        """Counts in the parameters' dtype (without gradients)."""
        sample_shape = tuple(sample_shape)
        draws = self._categorical.sample((self.total_count,) + sample_shape)
        draws = draws.movedim(0, -1)
        counts = tensor.zeros(self._extended_shape(sample_shape), dtype=tensor.int64, device=draws.device)
        counts.scatter_add_(-1, draws, tensor.ones_like(draws))
        return counts.to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log-probability of the counts ``value``.

        Raises:
            ValueError: with ``validate_args``, for counts that are negative or sum above ``total_count``.
        """
        if self._validate_args:
            self._validate_sample(value)
        logits, value = tensor.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        logits = tensor.where((value == 0) & (logits == -float("inf")), 0.0, logits)
        log_factorials = tensor.lgamma(value.sum(-1) + 1) - tensor.lgamma(value + 1).sum(-1)
        return log_factorials + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        """The entropy, from the categorical one and the binomial marginals' log-factorial moments."""
        n = tensor.tensor(float(self.total_count), dtype=self.probs.dtype, device=self.probs.device)
        term1 = n * self._categorical.entropy() - tensor.lgamma(n + 1)
        marginals = Binomial(self.total_count, probs=self.probs, validate_args=False)
        support = marginals.enumerate_support(expand=False)[1:]
        term2 = (marginals.log_prob(support).exp() * tensor.lgamma(support + 1)).sum([0, -1])
        return term1 + term2
