"""Normalization layers: BatchNorm1d/2d/3d, LayerNorm, GroupNorm."""

from __future__ import annotations

import tensor
from tensor import Tensor
from tensor._factory import as_int, as_ints, is_int

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm"]


def _register_affine(module: Module, affine: bool, bias: bool, shape, device, dtype) -> None:
    """Give ``module`` a ``weight`` of ones and a ``bias`` of zeros of ``shape`` (None when not
    ``affine``; the bias also None without ``bias``)."""
    if affine:
        module.weight = Parameter(tensor.ones(shape, device=device, dtype=dtype))
        if bias:
            module.bias = Parameter(tensor.zeros(shape, device=device, dtype=dtype))
        else:
            module.register_parameter("bias", None)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)


def _reset_affine(module: Module) -> None:
    """Set the affine ``weight`` (if any) to ones and ``bias`` (if any) to zeros."""
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class _BatchNorm(Module):
    """Batch normalization over dim 1 with running statistics, as ``torch.nn.modules.batchnorm``."""

    _expected_dims: tuple = ()
    _version = 2  # version 2 added num_batches_tracked

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, affine, bias, num_features, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", tensor.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", tensor.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor.tensor(0, dtype=tensor.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Zero the running mean and step count, and set the running variance to one."""
        if self.track_running_stats:
            with tensor.no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, and the affine weight to ones and bias to zeros."""
        self.reset_running_stats()
        _reset_affine(self)

    def _load_from_state_dict(self, state_dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Load as ``Module`` does; a state dict older than version 2 (or without a version, like
        a hand-built one) may lack ``num_batches_tracked``, which keeps its current value."""
        key = prefix + "num_batches_tracked"
        version = local_metadata.get("version")
        if (version is None or version < 2) and self.num_batches_tracked is not None and key not in state_dict:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._expected_dims:
            wanted = " or ".join(f"{d}D" for d in self._expected_dims)
            raise ValueError(f"expected {wanted} input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        """Normalize with batch statistics in training (updating the running ones), else with the
        running statistics (batch statistics when there are none).

        Raises:
            ValueError: for an input of the wrong rank, or one value per channel in training.
        """
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with tensor.no_grad():
                self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked.item()) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            bn_training, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L) inputs."""

    _expected_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W) inputs."""

    _expected_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W) inputs."""

    _expected_dims = (5,)


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dims, with elementwise affine parameters."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        if is_int(normalized_shape):
            normalized_shape = (as_int(normalized_shape, "size"),)
        self.normalized_shape = as_ints(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, elementwise_affine, bias, self.normalized_shape, device, dtype)

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Apply layer normalization.

        Raises:
            RuntimeError: if the input's trailing dims are not ``normalized_shape``.
        """
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalize groups of channels per sample, with per-channel affine parameters.

    Raises:
        ValueError: if ``num_channels`` is not divisible by ``num_groups``.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, affine, bias, num_channels, device, dtype)

    def reset_parameters(self) -> None:
        """Weight to ones, bias to zeros."""
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        """Apply group normalization."""
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
