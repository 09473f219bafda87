"""``AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for large vocabularies.
Frequent classes (the shortlist) are scored by a head layer; rarer ones sit in clusters, each
reached through one head entry and scored by its own low-rank tail projection."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

import tensor
from tensor import Tensor

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class _ASMoutput(NamedTuple):
    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax over ``n_classes`` split at ``cutoffs`` (the shortlist first), the
    cluster ``i`` projected to ``in_features // div_value ** (i + 1)`` dims; as PyTorch's layer.

    Raises:
        ValueError: for cutoffs that are not unique, increasing integers in ``[1, n_classes - 1]``.
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if (
            len(cutoffs) == 0
            or cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                "order, where each value is between 1 and n_classes-1"
            )
        factory = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes, self.div_value, self.head_bias = in_features, n_classes, div_value, head_bias
        self.cutoffs = cutoffs + [n_classes]
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hidden, bias=False, **factory), Linear(hidden, size, bias=False, **factory)
                )
            )

    def reset_parameters(self) -> None:
        """Re-initialise the head and every tail projection."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input: Tensor, target: Tensor) -> _ASMoutput:
        """``(output, loss)``: the log-probability of each target and their negated mean.

        Raises:
            RuntimeError: for mismatched shapes or a target outside ``[0, n_classes - 1]``.
        """
        batched = target.ndim == 1
        if (
            target.ndim > 1
            or (batched and (input.ndim != 2 or input.shape[0] != target.shape[0]))
            or (not batched and input.ndim != 1)
        ):
            raise RuntimeError(
                "Input and target should have the same size in the batch dimension."
                if batched
                else f"1D target tensor expects 1D input tensors, but found inputs with size {list(input.shape)}"
            )
        x = input if batched else input.unsqueeze(0)
        labels = target.reshape(-1).cpu().numpy()
        if labels.size and (labels.min() < 0 or labels.max() >= self.n_classes):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{labels.min()}, {labels.max()}] were found. "
            )
        head_index = labels.copy()
        output = tensor.zeros(x.shape[0], dtype=x.dtype, device=x.device)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            rows = np.nonzero((labels >= low) & (labels < high))[0]
            if rows.size == 0:
                continue
            head_index[rows] = self.shortlist_size + i
            picked = tensor.tensor(rows, device=x.device)
            local = F.log_softmax(self.tail[i](x.index_select(0, picked)), dim=1)
            relative = tensor.tensor(labels[rows] - low, device=x.device).unsqueeze(1)
            output = output.index_add(0, picked, local.gather(1, relative).squeeze(1))
        head = F.log_softmax(self.head(x), dim=1)
        output = output + head.gather(1, tensor.tensor(head_index, device=x.device).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probabilities of every class, ``(N, n_classes)`` (or ``(n_classes,)``)."""
        x = input if input.ndim == 2 else input.unsqueeze(0)
        head = F.log_softmax(self.head(x), dim=1)
        parts = [head[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            parts.append(F.log_softmax(self.tail[i](x), dim=1) + head[:, self.shortlist_size + i].unsqueeze(1))
        out = tensor.cat(parts, 1)
        return out if input.ndim == 2 else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each input."""
        return self.log_prob(input).argmax(-1)
