"""``nn.SyncBatchNorm``: batch normalization with statistics over every rank's batch.

Note [SyncBatchNorm statistics]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each rank sums its values (and counts them) per channel; one all_reduce gives the mean of the
whole batch; each rank sums its squared deviations from that mean; a second all_reduce gives the
biased variance. That is the two-pass formula BatchNorm uses on one process, so the result equals
one process with the whole batch up to the order of the sums (float64: ~1e-15), where a
one-pass E[x^2] - E[x]^2 would lose digits when the mean is large. Both all_reduces are
differentiable: the gradient of a sum over ranks is the sum over ranks of the gradients, so the
backward runs the same two all_reduces in reverse, and the input gradient is that of the whole
batch. The weight and bias gradients stay per rank, as in PyTorch; data parallelism averages
them. The collectives come from ``distrib`` through ``nn/_distrib_hooks.py`` (nn is below distrib).
"""

from __future__ import annotations

import tensor
from autograd import Function
from tensor import Tensor

from .._distrib_hooks import api as _distrib
from .module import Module
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """The sum over the ranks of ``group``; its gradient is the sum of the ranks' gradients."""

    @staticmethod
    def forward(ctx, input: Tensor, group) -> Tensor:
        ctx.group = group
        out = input.clone()
        _distrib.all_reduce_sum(out, group)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        out = grad.clone()
        _distrib.all_reduce_sum(out, ctx.group)
        return out, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over dim 1 whose statistics cover the batches of every rank of
    ``process_group`` (the world by default); see Note [SyncBatchNorm statistics]. Outside
    training, or without a process group of more than one rank, it is ``BatchNorm``.

    >>> import nn, tensor
    >>> bn = nn.SyncBatchNorm(3)
    >>> bn(tensor.randn(4, 3, 5)).shape
    (4, 3, 5)
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group=None,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        """Normalize with the statistics of the whole (all ranks') batch in training.

        Raises:
            ValueError: for an input of fewer than 2 dims, or one value per channel over all ranks.
        """
        self._check_input_dim(input)
        if not self.training or _distrib.world_size(self.process_group) == 1:
            return super().forward(input)
        channels = input.shape[1]
        dims = (0,) + tuple(range(2, input.ndim))
        count = tensor.tensor([input.numel() // channels], dtype=input.dtype, device=input.device)
        totals = _AllReduceSum.apply(tensor.cat([input.sum(dims), count]), self.process_group)
        n = int(totals[channels].item())
        if n <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{list(input.shape)} on this rank and {n} values in all"
            )
        shape = (1, channels) + (1,) * (input.ndim - 2)
        mean = (totals[:channels] / n).reshape(shape)
        centered = input - mean
        var = _AllReduceSum.apply((centered * centered).sum(dims), self.process_group) / n
        out = centered * (var + self.eps).rsqrt().reshape(shape)
        self._update_running_stats(mean.detach().reshape(-1), var.detach() * (n / (n - 1)))
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        return out

    def _update_running_stats(self, mean: Tensor, unbiased_var: Tensor) -> None:
        if not self.track_running_stats:
            return
        with tensor.no_grad():
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
            else:
                factor = self.momentum
            self.running_mean.mul_(1 - factor).add_(mean.to(self.running_mean.dtype) * factor)
            self.running_var.mul_(1 - factor).add_(unbiased_var.to(self.running_var.dtype) * factor)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """``module`` with every ``BatchNorm*D`` in it replaced by a ``SyncBatchNorm`` over
        ``process_group`` that shares its parameters and buffers (``module`` itself when it is
        not a batch norm; its children are replaced in place).

        >>> import nn
        >>> net = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)))
        >>> type(net[1]).__name__
        'SyncBatchNorm'
        """
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            converted = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            for name in ("weight", "bias"):
                converted.register_parameter(name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                converted.register_buffer(name, getattr(module, name))
            converted.train(module.training)
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted
