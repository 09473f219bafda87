"""``tensor.distributions``: PyTorch's ``torch.distributions`` for the common cases: ``Normal``,
``Uniform``, ``Exponential``, ``Laplace``, ``MultivariateNormal``, ``Bernoulli``, ``Categorical``,
``OneHotCategorical``, ``Poisson``, ``Geometric``, ``Binomial``, ``Multinomial``, ``Gamma``,
``Chi2``, ``Beta``, ``Dirichlet``, ``StudentT``, ``Cauchy``, ``Gumbel``, ``HalfNormal``,
``HalfCauchy``, ``MixtureSameFamily``, ``Independent``, ``LogNormal``, ``TransformedDistribution``
with the ``transforms``, ``kl_divergence`` and the ``constraints`` (Note [Distribution shapes] in
distribution.py). Imported on first access to ``tensor.distributions``."""

from . import constraints, transforms
from .continuous import Exponential, Laplace, Normal, Uniform
from .counts import Binomial, Geometric, Multinomial
from .discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution, Independent
from .gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from .kl import kl_divergence, register_kl
from .location_scale import Cauchy, Gumbel, HalfCauchy, HalfNormal
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .transforms import LogNormal, TransformedDistribution

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "Dirichlet", "Distribution", "Exponential",
    "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "Laplace", "LogNormal",
    "MixtureSameFamily", "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "StudentT",
    "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl", "transforms",
]
