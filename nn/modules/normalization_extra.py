"""More normalization layers: RMSNorm, InstanceNorm1d/2d/3d and LocalResponseNorm."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import tensor
from tensor import Tensor
from tensor._factory import as_int, as_ints, is_int

from .. import functional as F
from ..parameter import Parameter
from .module import Module
from .normalization import _register_affine, _reset_affine

__all__ = ["RMSNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm"]


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims, with an
    elementwise ``weight`` (``eps`` None: the dtype's machine epsilon)."""

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        shape = (as_int(normalized_shape, "size"),) if is_int(normalized_shape) else as_ints(normalized_shape)
        self.normalized_shape, self.eps, self.elementwise_affine = shape, eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(tensor.ones(shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Weight to ones."""
        if self.weight is not None:
            with tensor.no_grad():
                self.weight.fill_(1.0)

    def forward(self, x: Tensor) -> Tensor:
        """Apply RMS normalization."""
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _InstanceNorm(Module):
    """Normalize each channel of each sample over its spatial dims; optional affine parameters
    and running statistics (used in eval when ``track_running_stats``).

    Raises:
        ValueError: (when called) for an input of the wrong rank.
    """

    nd = 1

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        _register_affine(self, affine, bias, num_features, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", tensor.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", tensor.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor.tensor(0, dtype=tensor.int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def reset_running_stats(self) -> None:
        """Running mean to zeros, variance to ones, the batch count to 0."""
        if self.track_running_stats:
            with tensor.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Running statistics and affine parameters back to their initial values."""
        self.reset_running_stats()
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Apply instance normalization (an unbatched input is normalized as a batch of one)."""
        if input.ndim not in (self.nd + 1, self.nd + 2):
            raise ValueError(f"expected {self.nd + 1}D or {self.nd + 2}D input (got {input.ndim}D input)")
        unbatched = input.ndim == self.nd + 1
        self._check_channels(input.shape[0 if unbatched else 1], 0 if unbatched else 1)
        batch = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(
            batch,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,  # None freezes the running stats, as PyTorch
            self.eps,
        )
        return out.squeeze(0) if unbatched else out

    def _check_channels(self, channels: int, dim: int) -> None:
        """Refuse a channel count other than ``num_features`` when the affine parameters need it;
        without them only warn, as PyTorch (``num_features`` is then unused)."""
        if channels == self.num_features:
            return
        if self.affine:
            raise ValueError(
                f"expected input's size at dim={dim} to match num_features ({self.num_features}), but got: {channels}."
            )
        warnings.warn(
            f"input's size at dim={dim} does not match num_features. You can silence this warning by not "
            "passing in num_features, which is not used because affine=False",
            stacklevel=3,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of ``(N, C, L)`` or ``(C, L)`` inputs."""

    nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``(N, C, H, W)`` or ``(C, H, W)`` inputs."""

    nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""

    nd = 3


class LocalResponseNorm(Module):
    """Normalize by the squares of ``size`` neighbouring channels (see ``F.local_response_norm``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        """Apply local response normalization."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
