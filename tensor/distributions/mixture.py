"""``MixtureSameFamily`` (PyTorch's ``torch.distributions``; Note [Distribution shapes]): a
``Categorical`` choice among the ``K`` components batched in the last batch dim of one
distribution."""

from __future__ import annotations

import tensor
from tensor import Tensor

from .discrete import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Draws a component index from ``mixture_distribution`` (batch ``B``, ``K`` categories) and
    then a value from that component of ``component_distribution`` (batch ``B + (K,)``).

    Raises:
        ValueError: for a mixture that is not a ``Categorical``, components that are not a
            ``Distribution``, incompatible batch shapes or different numbers of components.
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args=None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of torch.distributions.Distribution")
        mixture_batch, component_batch = mixture_distribution.batch_shape, component_distribution.batch_shape[:-1]
        for a, b in zip(reversed(mixture_batch), reversed(component_batch)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mixture_batch}) is not compatible with "
                                 f"`component_distribution.batch_shape`({component_batch})")
        mixture_count, component_count = mixture_distribution.logits.shape[-1], component_distribution.batch_shape[-1]
        if mixture_count != component_count:
            raise ValueError(f"`mixture_distribution component` ({mixture_count}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({component_count})")
        self._mixture_distribution, self._component_distribution = mixture_distribution, component_distribution
        self._num_component = mixture_count
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(component_batch, component_distribution.event_shape, validate_args)

    @property
    def mixture_distribution(self) -> Categorical:
        """The distribution of the component index."""
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        """The components, along the last batch dim."""
        return self._component_distribution

    @property
    def support(self):
        """The components' support."""
        return self._component_distribution.support

    @property
    def mean(self) -> Tensor:
        """The components' means weighted by their probabilities."""
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        """The law of total variance: the mean of the components' variances plus the variance of their means."""
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        components = self._component_distribution
        within = (probs * components.variance).sum(-1 - self._event_ndims)
        between = (probs * (components.mean - self._pad(self.mean)).pow(2.0)).sum(-1 - self._event_ndims)
        return within + between

    def expand(self, batch_shape, _instance=None):
        """The same mixture broadcast to ``batch_shape``."""
        batch_shape = tuple(batch_shape)
        new = MixtureSameFamily.__new__(MixtureSameFamily)
        new._component_distribution = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component, new._event_ndims = self._num_component, self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def cdf(self, x: Tensor) -> Tensor:
        """The components' cdfs at ``x`` weighted by their probabilities."""
        return (self._component_distribution.cdf(self._pad(x)) * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        """``logsumexp`` over the components of their log densities plus log-probabilities.

        Raises:
            ValueError: with ``validate_args``, for a value outside the support or of the wrong shape.
        """
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self._component_distribution.log_prob(self._pad(x))
        log_mix_prob = tensor.log_softmax(self._mixture_distribution.logits, -1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape=()) -> Tensor:
        """A component index per draw, then that component's draw (without gradients)."""
        with tensor.no_grad():
            gather_dim = len(tuple(sample_shape)) + len(self._batch_shape)
            event = self._event_shape
            index = self._mixture_distribution.sample(sample_shape)
            components = self._component_distribution.sample(sample_shape)
            index = index.reshape(index.shape + (1,) * (len(event) + 1))
            index = index.repeat((1,) * (index.ndim - len(event)) + event)
            return components.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        batch_ndims, mixture_batch_ndims = len(self._batch_shape), len(self._mixture_distribution.batch_shape)
        pad = 0 if mixture_batch_ndims == 1 else batch_ndims - mixture_batch_ndims
        return x.reshape(x.shape[:-1] + (1,) * pad + x.shape[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self._mixture_distribution},\n  {self._component_distribution})")
