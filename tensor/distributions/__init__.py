"""``tensor.distributions``: PyTorch's ``torch.distributions`` for the common cases: ``Normal``,
``Uniform``, ``Bernoulli``, ``Categorical``, ``Independent``, ``kl_divergence`` and the
``constraints`` (Note [Distribution shapes] in distribution.py). Imported on first access to
``tensor.distributions``."""

from . import constraints
from .continuous import Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution, Independent
from .kl import kl_divergence, register_kl

__all__ = [
    "Bernoulli", "Categorical", "Distribution", "Independent", "Normal", "Uniform", "constraints", "kl_divergence",
    "register_kl",
]
