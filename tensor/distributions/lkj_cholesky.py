"""``LKJCholesky`` (PyTorch's ``torch.distributions.LKJCholesky``, after NumPyro's): the LKJ
distribution over Cholesky factors ``L`` of correlation matrices, with density of ``L L^T``
proportional to ``det(L L^T)^(concentration - 1)``.

Samples are by the onion method of Lewandowski, Kurowicka and Joe (2009, section 3.2), vectorised
over the rows as torch's: row ``i`` below the first is ``sqrt(y_i) u_i`` on its first ``i``
entries, for ``y_i`` a Beta draw and ``u_i`` uniform on the unit sphere, with the diagonal entry
taking the rest of the unit norm (with NumPyro's Beta parameters, not torch's: ``_onion_beta``).
"""

from __future__ import annotations

import math

import tensor
from tensor import Tensor

from . import constraints
from .distribution import Distribution, broadcast_all
from .gamma import Beta

__all__ = ["LKJCholesky"]


def _onion_beta(concentration: Tensor, dim: int) -> Beta:
    """The Beta distributions of the squared lengths ``y_i`` of the rows' off-diagonal parts: row
    ``i >= 1`` has ``Beta(i / 2, concentration + (dim - 1 - i) / 2)`` (row 0's is unused).

    Departure: torch's first concentration is ``i - 1/2`` (it dropped NumPyro's factor 1/2 on
    ``arange``), so for ``dim >= 3`` its correlations are not LKJ's (with ``dim = 3`` and
    concentration 1, those of the third row have variance 0.30 where every one has 1/4).
    """
    half_offset = 0.5 * tensor.arange(-1, dim - 1, dtype=concentration.dtype, device=concentration.device).clamp(min=0)
    marginal = concentration + 0.5 * (dim - 2)
    return Beta(half_offset + 0.5, marginal.unsqueeze(-1) - half_offset, validate_args=False)


class LKJCholesky(Distribution):
    """The LKJ distribution over ``dim x dim`` Cholesky factors of correlation matrices, of
    ``concentration`` (eta; 1 is uniform over correlation matrices). It has ``sample`` and
    ``log_prob``, no ``rsample`` and no closed-form moments, as torch's.

    Raises:
        ValueError: for a ``dim`` below 2; with ``validate_args``, for a ``concentration`` not positive.
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(self.concentration.shape, (dim, dim), validate_args)
        self._beta = _onion_beta(self.concentration, dim)

    def expand(self, batch_shape, _instance=None):
        """The same distribution with ``concentration`` broadcast to ``batch_shape``."""
        new = LKJCholesky.__new__(LKJCholesky)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()) -> Tensor:
        """Cholesky factors by the onion method (see the module docstring), without gradients."""
        with tensor.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = tensor.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            tiny = tensor.finfo(y.dtype).tiny
            # the first row has no entries below the diagonal: 0 / tiny keeps it 0, not 0 / 0
            w = y.sqrt() * normal / normal.norm(dim=-1, keepdim=True).clamp(min=tiny)
            diagonal = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + diagonal.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density at the Cholesky factors ``value``: ``sum_i (2 (eta - 1) + dim - i) log L_ii``
        over ``i >= 2`` (the correlation matrix's density times the Jacobian from its factor, as
        Stan's) less the log normaliser of LKJ (2009), page 1999.

        Raises:
            ValueError: with ``validate_args``, for a value that is not such a Cholesky factor.
        """
        if self._validate_args:
            self._validate_sample(value)
        diagonal = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = tensor.arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalised = (order * diagonal.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        # mvlgamma's pi term is (D - 1)(D - 2)/4 log(pi), the paper's D (D - 1)/4 log(pi)
        log_normaliser = (0.5 * dm1 * math.log(math.pi) + tensor.mvlgamma(alpha - 0.5, p=dm1)
                          - dm1 * tensor.lgamma(alpha))
        return unnormalised - log_normaliser
