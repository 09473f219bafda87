"""Layers kept for PyTorch compatibility: ``LinearCrossEntropyLoss``, ``CrossMapLRN2d``,
``NLLLoss2d``, ``Container`` and ``DataParallel`` (one device)."""

from __future__ import annotations

import warnings

import numpy as np

import tensor
from tensor import Tensor

from .. import functional as F
from .linear import Linear
from .loss import NLLLoss
from .module import Module

__all__ = ["LinearCrossEntropyLoss", "CrossMapLRN2d", "NLLLoss2d", "Container", "DataParallel"]


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


class CrossMapLRN2d(Module):
    """Lua torch's cross-channel LRN of 4-D input, window for window as PyTorch's
    ``CrossMapLRN2d``: ``x * (k + alpha / size * sum of squares over the window) ** -beta``.
    Its running window keeps channel 0 in every later window (PyTorch's forward, reproduced
    here), so it differs from ``LocalResponseNorm``. The gradient is the exact derivative of
    this forward; PyTorch's hand-written backward assumes the symmetric window and differs.

    Raises:
        ValueError: (when called) for an input that is not 4-D.
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def _windows(self, channels: int) -> np.ndarray:
        pre_pad = int((self.size - 1) / 2 + 1)
        windows = np.zeros((channels, channels))
        for c in range(channels):
            windows[c, max(c - pre_pad + 1, 0) if c > pre_pad else 0 : min(c + pre_pad - 1, channels - 1) + 1] = 1
            if c > pre_pad:
                windows[c, 0] = 1
        return windows

    def forward(self, input: Tensor) -> Tensor:
        """Normalize ``input`` across channels."""
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        windows = tensor.tensor(self._windows(input.shape[1]), dtype=input.dtype, device=input.device)
        sums = ((input * input).movedim(1, -1) @ windows.mT).movedim(-1, 1)
        return input * (sums * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


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
    multi-GPU replication is not implemented; use ``distrib.DistributedDataParallel``,
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
