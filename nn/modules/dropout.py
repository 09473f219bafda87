"""Dropout layers."""

from __future__ import annotations

from tensor import Tensor

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` in training (scaling the rest by ``1/(1-p)``);
    the identity in eval mode.

    Raises:
        ValueError: if ``p`` is not in [0, 1].
    """

    def forward(self, input: Tensor) -> Tensor:
        """Apply dropout when training."""
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) inputs with probability ``p`` in training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) inputs with probability ``p`` in training (other
    inputs as ``F.dropout2d``)."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability ``p`` in
    training."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel dropout when training."""
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalizing mean and variance."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply alpha dropout when training."""
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    def forward(self, input: Tensor) -> Tensor:
        """Apply channel alpha dropout when training."""
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)
