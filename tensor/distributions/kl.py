"""``kl_divergence`` and ``register_kl`` (PyTorch's ``torch.distributions.kl``): closed forms
registered per pair of distribution types, found through their classes' MROs. The same-family
forms are here, the cross-family ones in kl_cross.py."""

from __future__ import annotations

import math
from collections.abc import Callable

import tensor
from tensor import Tensor

from .continuous import Exponential, Laplace, Normal, Uniform
from .counts import Binomial, Geometric
from .discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution, Independent, softplus, sum_rightmost
from .gamma import Beta, Dirichlet, Gamma
from .location_scale import EULER_GAMMA, Cauchy, Gumbel, HalfCauchy, HalfNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal, trace_of_square
from .multivariate_normal import MultivariateNormal
from .transformed_distribution import LogNormal, TransformedDistribution

__all__ = ["kl_divergence", "register_kl"]

_KL: dict = {}


def register_kl(type_p: type, type_q: type) -> Callable:
    """A decorator registering ``fn(p, q)`` as the KL divergence of a ``type_p`` from a ``type_q``.

    Raises:
        TypeError: for arguments that are not Distribution subclasses.
    """
    for t in (type_p, type_q):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"Expected a subclass of Distribution but got {t}")

    def decorator(fn: Callable) -> Callable:
        _KL[type_p, type_q] = fn
        return fn

    return decorator


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q)`` for each distribution of the batch, from the closed form registered for
    the most specific pair of their types.

    Raises:
        NotImplementedError: when no form is registered for the pair.
    """
    for type_p in type(p).__mro__:
        for type_q in type(q).__mro__:
            fn = _KL.get((type_p, type_q))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                              f"{type(q).__name__}")


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # sum over {0, 1} of p(x) (log p(x) - log q(x)), through the logits; infinite where q misses
    # an outcome p has, 0 for an outcome p never has
    ones = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    ones = tensor.where(p.probs == 0, 0.0, tensor.where(q.probs == 0, math.inf, ones))
    zeros = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    zeros = tensor.where(p.probs == 1, 0.0, tensor.where(q.probs == 1, math.inf, zeros))
    return ones + zeros


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = tensor.where(q.probs == 0, tensor.full_like(t, float("inf")), t)
    return tensor.where(p.probs == 0, tensor.zeros_like(t), t).sum(-1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return tensor.where(outside, tensor.full_like(result, float("inf")), result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independents with different event dims is not implemented")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs() / q.scale
    return -scale_ratio.log() + distance + scale_ratio * (-distance / scale_ratio).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes cannot be computed"
        )
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    n = p.event_shape[0]
    batch = tensor.broadcast_shapes(p.batch_shape, q.batch_shape)
    lq = lq.expand(batch + (n, n))
    trace = tensor.linalg.solve_triangular(lq, lp.expand(batch + (n, n)), upper=False).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(batch + (n,)).unsqueeze(-1)
    mahalanobis = tensor.linalg.solve_triangular(lq, diff, upper=False).pow(2).sum((-2, -1))
    log_det = lq.diagonal(dim1=-2, dim2=-1).log().sum(-1) - lp.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    return 0.5 * (trace + mahalanobis - n) + log_det


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    """``(log det Sq - log det Sp + tr(Sq^-1 Sp) + mahalanobis - n) / 2``, with ``Sq^-1`` by the
    Woodbury identity (Note [Capacitance matrix] in lowrank_multivariate_normal.py), as torch."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Low Rank Multivariate Normals with different event shapes "
                         "cannot be computed")
    p_factor, p_diag = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    q_diag, a = q._unbroadcasted_cov_diag, q._woodbury_factor()
    # tr([Dq^-1 - A^T A] (Dp + Wp Wp^T)), term by term
    trace = ((p_diag / q_diag).sum(-1) + trace_of_square(p_factor * q_diag.rsqrt().unsqueeze(-1))
             - trace_of_square(a * p_diag.sqrt().unsqueeze(-2)) - trace_of_square(a @ p_factor))
    return 0.5 * (q._log_det() - p._log_det() + trace + q._mahalanobis(q.loc - p.loc) - p.event_shape[0])


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)  # KL is invariant under the same bijection


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    a, b = p.concentration, q.concentration
    return (b * (p.rate / q.rate).log() + tensor.lgamma(b) - tensor.lgamma(a) + (a - b) * tensor.digamma(a)
            + (q.rate - p.rate) * (a / p.rate))


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    total_p, total_q = p.concentration1 + p.concentration0, q.concentration1 + q.concentration0
    log_norm = (tensor.lgamma(q.concentration1) + tensor.lgamma(q.concentration0) + tensor.lgamma(total_p)
                - tensor.lgamma(p.concentration1) - tensor.lgamma(p.concentration0) - tensor.lgamma(total_q))
    return (log_norm + (p.concentration1 - q.concentration1) * tensor.digamma(p.concentration1)
            + (p.concentration0 - q.concentration0) * tensor.digamma(p.concentration0)
            + (total_q - total_p) * tensor.digamma(total_p))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    total_p, total_q = p.concentration.sum(-1), q.concentration.sum(-1)
    log_norm = tensor.lgamma(total_p) - tensor.lgamma(total_q)
    log_norm = log_norm - (tensor.lgamma(p.concentration) - tensor.lgamma(q.concentration)).sum(-1)
    expected_log = tensor.digamma(p.concentration) - tensor.digamma(total_p).unsqueeze(-1)
    return log_norm + ((p.concentration - q.concentration) * expected_log).sum(-1)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("KL between TransformedDistributions needs equal transforms and event shapes")
    return kl_divergence(p.base_dist, q.base_dist)  # KL is invariant under the same bijection


@register_kl(HalfNormal, HalfNormal)
@register_kl(HalfCauchy, HalfCauchy)
def _kl_folded_folded(p, q):
    return kl_divergence(p.base_dist, q.base_dist)  # both densities doubled on the same half-line


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # https://arxiv.org/abs/1905.10965
    return ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log() - (4 * p.scale * q.scale).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    scale_ratio, q_loc, p_loc = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    return (-scale_ratio.log() - q_loc + p_loc + scale_ratio * EULER_GAMMA
            + (q_loc + (1 + scale_ratio).lgamma() - p_loc).exp() - (1 + EULER_GAMMA))


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    """Infinite where ``p`` has more trials than ``q``.

    Raises:
        NotImplementedError: where ``q`` has more trials than ``p``, as torch.
    """
    if (p.total_count < q.total_count).any():
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    # https://math.stackexchange.com/questions/2214993
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return tensor.where(p.total_count > q.total_count, math.inf, kl)
