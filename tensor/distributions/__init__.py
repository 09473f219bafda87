"""``tensor.distributions``: PyTorch's ``torch.distributions`` for the common cases (Note
[Distribution shapes] in distribution.py). Imported on first access to ``tensor.distributions``.

Covered:
    - distributions: ``Normal``, ``Uniform``, ``Exponential``, ``Laplace``, ``Cauchy``, ``Gumbel``,
      ``HalfNormal``, ``HalfCauchy``, ``LogNormal``, ``Gamma``, ``Chi2``, ``Beta``, ``Dirichlet``,
      ``StudentT``, ``MultivariateNormal``, ``LowRankMultivariateNormal``, ``Wishart``,
      ``LKJCholesky``, ``VonMises``, ``Weibull``, ``Bernoulli``, ``Categorical``,
      ``OneHotCategorical``, ``Poisson``, ``Geometric``, ``Binomial``, ``Multinomial``, and the
      combinators ``Independent``, ``MixtureSameFamily`` and ``TransformedDistribution``;
    - ``kl_divergence``/``register_kl`` with torch's closed forms for the pairs among those (kl.py,
      kl_cross.py);
    - the ``constraints``, and ``biject_to``/``transform_to`` onto the real, positive, bounded,
      interval, simplex, independent and correlation-Cholesky ones (``transform_to`` also onto
      lower Cholesky and positive (semi)definite matrices);
    - the transforms (also re-exported here, as torch does): ``ExpTransform``, ``SigmoidTransform``,
      ``TanhTransform``, ``SoftplusTransform``, ``PowerTransform``, ``AbsTransform``,
      ``AffineTransform``, ``ComposeTransform``, ``IndependentTransform``, ``SoftmaxTransform``,
      ``StickBreakingTransform``, ``LowerCholeskyTransform``, ``PositiveDefiniteTransform``,
      ``CorrCholeskyTransform`` and ``identity_transform``.

Not covered (departures: torch has them): ContinuousBernoulli, ExponentialFamily, FisherSnedecor,
GeneralizedPareto, InverseGamma, Kumaraswamy, LogisticNormal, NegativeBinomial,
OneHotCategoricalStraightThrough, Pareto, RelaxedBernoulli, RelaxedOneHotCategorical; the
transforms ReshapeTransform, CatTransform, StackTransform and CumulativeDistributionTransform
(so ``biject_to`` of the other matrix constraints raises NotImplementedError).
"""

from . import constraints, kl_cross, transforms  # kl_cross registers its forms
from .constraint_registry import biject_to, transform_to
from .continuous import Exponential, Laplace, Normal, Uniform
from .counts import Binomial, Geometric, Multinomial
from .discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution, Independent
from .gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from .kl import kl_divergence, register_kl
from .lkj_cholesky import LKJCholesky
from .location_scale import Cauchy, Gumbel, HalfCauchy, HalfNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .transformed_distribution import LogNormal, TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
    "ComposeTransform", "CorrCholeskyTransform", "Dirichlet", "Distribution", "ExpTransform", "Exponential", "Gamma",
    "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform", "LKJCholesky",
    "Laplace", "LogNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily",
    "Multinomial", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "PositiveDefiniteTransform",
    "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StickBreakingTransform",
    "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "VonMises", "Weibull", "Wishart",
    "biject_to", "constraints", "identity_transform", "kl_divergence", "register_kl", "transform_to", "transforms",
]
