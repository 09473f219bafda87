"""``kl_divergence`` between distributions of different families (PyTorch's closed forms in
``torch.distributions.kl``): registered with ``register_kl`` when the package is imported. Where
``q``'s support misses part of ``p``'s, the divergence is infinite (shaped as ``p``'s parameters,
as torch's)."""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from .continuous import Exponential, Laplace, Normal, Uniform
from .counts import Binomial
from .discrete import Bernoulli, Poisson
from .gamma import Beta, Gamma
from .kl import register_kl
from .location_scale import EULER_GAMMA, Gumbel
from .lowrank_multivariate_normal import LowRankMultivariateNormal, trace_of_square
from .multivariate_normal import MultivariateNormal, batch_mahalanobis

__all__: list = []


def _infinite_like(value: Tensor) -> Tensor:
    return tensor.full_like(value, math.inf)


def _infinite_where(mask: Tensor, value: Tensor) -> Tensor:
    return tensor.where(mask, math.inf, value)


def _x_log_x(value: Tensor) -> Tensor:
    return tensor.xlogy(value, value)  # 0 at 0, where torch's x * log(x) is NaN


@register_kl(Normal, Beta)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Uniform)
@register_kl(Laplace, Beta)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Uniform)
@register_kl(Gumbel, Beta)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Uniform)
@register_kl(Exponential, Beta)
@register_kl(Exponential, Uniform)
@register_kl(Gamma, Beta)
@register_kl(Gamma, Uniform)
@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_to_bounded_support(p, q):
    """``p``'s support reaches beyond ``q``'s bounded one: infinite."""
    return _infinite_like(p.mean)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


def _normal_cross_entropy(q, mean: Tensor, second_moment: Tensor) -> Tensor:
    """``E_p[-log q]`` for a Normal ``q`` from ``p``'s mean and second moment."""
    var = q.scale.pow(2)
    return 0.5 * (2 * math.pi * var).log() + (0.5 * second_moment - q.loc * mean + 0.5 * q.loc.pow(2)) / var


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    mean = p.mean
    return -p.entropy() + _normal_cross_entropy(q, mean, p.variance + mean.pow(2))


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(q, p.mean, 2 * p.rate.pow(-2))


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    c = p.concentration
    return -p.entropy() + _normal_cross_entropy(q, p.mean, (c.pow(2) + c) / p.rate.pow(2))


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(q, p.loc, p.loc.pow(2) + 2 * p.scale.pow(2))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return -p.entropy() + _normal_cross_entropy(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(Beta, Exponential)
@register_kl(Gamma, Exponential)
def _kl_positive_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _infinite_where(p.low < 0, result)


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    c1, total = p.concentration1, p.concentration1 + p.concentration0
    expected_log = c1.digamma() - total.digamma()
    return (-p.entropy() + q.concentration.lgamma() - q.concentration * q.rate.log()
            - (q.concentration - 1) * expected_log + q.rate * c1 / total)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    return (-q.concentration * ratio.log() + ratio + q.concentration.lgamma() + q.concentration * EULER_GAMMA
            - (1 + EULER_GAMMA))


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    result = (-width.log() + q.concentration.lgamma() - q.concentration * q.rate.log()
              + (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
              + q.rate * (p.high + p.low) / 2)
    return _infinite_where(p.low < 0, result)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    return _infinite_where((q.low > 0) | (q.high < 1), result)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    c1, c0 = q.concentration1, q.concentration0
    result = ((c0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
              + c1.lgamma() + c0.lgamma() - (c1 + c0).lgamma() - width.log()
              - (c1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width)
    return _infinite_where((p.high > 1) | (p.low < 0), result)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    return (scale_rate.log() - 1 - loc_ratio + loc_ratio.exp() * scale_rate / (scale_rate + 1)
            + scale_rate.reciprocal())


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    c = p.concentration
    rate_scale = p.rate * q.scale
    loc_ratio = q.loc / q.scale
    return ((c - 1) * c.digamma() - c.lgamma() - c + rate_scale.log() + c / rate_scale
            + loc_ratio.exp() * (1 + rate_scale.reciprocal()).pow(-c) - loc_ratio)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_ratio = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    return (-0.5 * var_ratio.log() + mean_ratio - loc_ratio + (-mean_ratio + 0.5 * var_ratio + loc_ratio).exp()
            - 0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    ratio = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    return ratio.log() + 0.5 * (high + low) - ratio * ((-high).exp() - (-low).exp())


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    z = loc_diff / p.scale
    expected_abs = (math.sqrt(2 / math.pi) * p.scale * (-0.5 * z.pow(2)).exp()
                    + loc_diff * tensor.erf(math.sqrt(0.5) * z))
    return -(p.scale / q.scale).log() + expected_abs / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


def _check_same_event_shape(p, q) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with different event shapes "
                         "cannot be computed")


def _half_log_det(scale_tril: Tensor) -> Tensor:
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    """torch's closed form, with ``q``'s inverse covariance by the Woodbury identity."""
    _check_same_event_shape(p, q)
    p_tril = p._unbroadcasted_scale_tril
    # tr([Dq^-1 - A^T A] Lp Lp^T)
    trace = (trace_of_square(p_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
             - trace_of_square(q._woodbury_factor() @ p_tril))
    log_det_ratio = q._log_det() - 2 * _half_log_det(p_tril)
    return 0.5 * (log_det_ratio + trace + q._mahalanobis(q.loc - p.loc) - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    """torch's closed form: ``tr(Sq^-1 Sp)`` as the squares of ``Lq^-1 Wp`` and ``Lq^-1 Dp^1/2``
    (with ``Dp``'s batch dims in the broadcast too, which torch's leaves out, failing to expand)."""
    _check_same_event_shape(p, q)
    q_tril, p_factor = q._unbroadcasted_scale_tril, p._unbroadcasted_cov_factor
    n, rank = p.event_shape[0], p_factor.shape[-1]
    batch = tuple(tensor.broadcast_shapes(q_tril.shape[:-2], p_factor.shape[:-2],
                                          p._unbroadcasted_cov_diag.shape[:-1]))
    q_tril = q_tril.expand(batch + (n, n))
    p_sqrt_diag = p._unbroadcasted_cov_diag.sqrt().diag_embed().expand(batch + (n, n))
    trace = (trace_of_square(tensor.linalg.solve_triangular(q_tril, p_factor.expand(batch + (n, rank)), upper=False))
             + trace_of_square(tensor.linalg.solve_triangular(q_tril, p_sqrt_diag, upper=False)))
    log_det_ratio = 2 * _half_log_det(q._unbroadcasted_scale_tril) - p._log_det()
    return 0.5 * (log_det_ratio + trace + batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc) - n)
