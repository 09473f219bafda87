"""Layers kept for PyTorch compatibility: ``LinearCrossEntropyLoss``, ``NLLLoss2d``, ``Container``
and ``DataParallel`` (one device)."""

from __future__ import annotations

import warnings

import tensor
from tensor import Tensor

from .. import functional as F
from .linear import Linear
from .loss import NLLLoss
from .module import Module

__all__ = ["LinearCrossEntropyLoss", "NLLLoss2d", "Container", "DataParallel"]


class LinearCrossEntropyLoss(Module):
    """A bias-free (unless ``bias``) linear layer to ``num_classes`` logits followed by cross
    entropy (see ``F.linear_cross_entropy``)."""

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        out_features: tuple[int, ...] = (),
        bias: bool = False,
        device=None,
        dtype=None,
        reduction: str = "mean",
        weight: Tensor | None = None,
        ignore_index: int | None = None,
        label_smoothing: float = 0.0,
        options=None,
    ) -> None:
        super().__init__()
        self.linear = Linear(in_features, num_classes, bias=bias, device=device, dtype=dtype)
        self.reduction, self.ignore_index, self.label_smoothing = reduction, ignore_index, label_smoothing
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The cross entropy of the projected ``input`` against ``target``."""
        return F.linear_cross_entropy(
            input,
            self.linear.weight,
            target,
            linear_bias=self.linear.bias,
            weight=self.weight,
            reduction=self.reduction,
            ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss2d(NLLLoss):
    """Deprecated alias of ``NLLLoss`` (which takes ``(N, C, H, W)`` inputs directly)."""

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(
            "NLLLoss2d has been deprecated. Please use NLLLoss instead as a drop-in replacement and see "
            "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.",
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)


class Container(Module):
    """Deprecated: a Module holding the modules given as keyword arguments."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn(
            "nn.Container is deprecated. All of it's functionality is now implemented in nn.Module. "
            "Subclass that instead.",
            stacklevel=2,
        )
        for key, value in kwargs.items():
            self.add_module(key, value)


class DataParallel(Module):
    """``torch.nn.DataParallel`` on one device: calls ``module`` unchanged (single-process
    multi-GPU replication is not implemented; use ``distrib.parallel.DistributedDataParallel``,
    one process per device). With several ``device_ids`` it refuses rather than silently using one.

    Raises:
        NotImplementedError: for more than one device id.
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        ids = list(device_ids) if device_ids is not None else list(range(tensor.cuda.device_count()))
        if len(ids) > 1:
            raise NotImplementedError(
                "DataParallel over several GPUs is not implemented; use "
                "distrib.parallel.DistributedDataParallel with one process per GPU"
            )
        self.module, self.device_ids, self.output_device, self.dim = module, ids, output_device, dim

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module."""
        return self.module(*inputs, **kwargs)
