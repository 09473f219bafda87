"""Transforms that couple an event's entries (PyTorch's ``torch.distributions.transforms``):
``IndependentTransform``, ``SoftmaxTransform`` and ``StickBreakingTransform`` (Note [Transform event
dims] in transform_base.py)."""

from __future__ import annotations

import tensor
from tensor import Tensor

from . import constraints
from .distribution import clamp_to_unit_interval, softplus, sum_rightmost
from .transform_base import Transform

__all__ = ["IndependentTransform", "SoftmaxTransform", "StickBreakingTransform"]


class IndependentTransform(Transform):
    """``base_transform`` over events of ``reinterpreted_batch_ndims`` more trailing dims: the same
    values, the log-determinant summed over those dims."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        """The same transform with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size)

    @property
    def domain(self):
        """The base's domain over the extra dims."""
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        """The base's codomain over the extra dims."""
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:
        """The base's."""
        return self.base_transform.bijective

    @property
    def sign(self):
        """The base's."""
        return self.base_transform.sign

    def _call(self, x):
        _check_dims(x, self.domain.event_dim)
        return self.base_transform(x)

    def _inverse_call(self, y):
        _check_dims(y, self.codomain.event_dim)
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        """The base's, summed over the extra dims."""
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def forward_shape(self, shape) -> tuple:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape) -> tuple:
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


def _check_dims(value: Tensor, event_dim: int) -> None:
    if value.dim() < event_dim:
        raise ValueError("Too few dimensions on input")


def _check_shape(shape) -> None:
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")


class SoftmaxTransform(Transform):
    """Vectors to the simplex by ``exp`` and normalising (not bijective: the inverse is ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = False

    def _call(self, x):
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse_call(self, y):
        return y.log()

    def forward_shape(self, shape) -> tuple:
        _check_shape(shape)
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(Transform):
    """Vectors of ``K`` reals to the simplex of ``K + 1`` by breaking a stick: each entry's sigmoid
    (offset so that zeros give the uniform point) takes that share of what is left."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        z = clamp_to_unit_interval(tensor.sigmoid(x - _offset(x, x.shape[-1] + 1).log()))
        ones = tensor.ones_like(z[..., :1])
        return tensor.cat([z, ones], -1) * tensor.cat([ones, (1 - z).cumprod(-1)], -1)

    def _inverse_call(self, y):
        y_crop = y[..., :-1]
        remaining = (1 - y_crop.cumsum(-1)).clamp(min=tensor.finfo(y.dtype).tiny)  # never 0 by rounding
        return y_crop.log() - remaining.log() + _offset(y_crop, y.shape[-1]).log()

    def log_abs_det_jacobian(self, x, y):
        """``sum(-x' + log sigmoid(x') + log y[:-1])`` for the offset ``x'``."""
        shifted = x - _offset(x, x.shape[-1] + 1).log()
        return (-shifted - softplus(-shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape) -> tuple:
        _check_shape(shape)
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape) -> tuple:
        _check_shape(shape)
        return tuple(shape[:-1]) + (shape[-1] - 1,)


def _offset(x: Tensor, top: int) -> Tensor:
    """``top - 1, top - 2, ...`` along ``x``'s last dim."""
    return top - tensor.arange(1, x.shape[-1] + 1, dtype=x.dtype, device=x.device)
