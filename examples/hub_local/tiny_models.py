"""The model class behind the ``tiny_mlp`` entrypoint (a sibling module the hubconf imports).

Built from ``nn.Module`` and ``nn.Parameter`` alone, initialised like two
``nn.Linear`` layers: weights and biases uniform in ±1/sqrt(fan_in).
"""

from __future__ import annotations

import math

import nn
import tensor


def _uniform(shape: tuple[int, ...], bound: float) -> nn.Parameter:
    return nn.Parameter(tensor.rand(*shape) * (2 * bound) - bound)


class TinyMLP(nn.Module):
    """``in_features -> hidden -> out_features`` with a ReLU in between."""

    def __init__(self, in_features: int = 4, hidden: int = 32, out_features: int = 3) -> None:
        super().__init__()
        self.in_features, self.hidden, self.out_features = in_features, hidden, out_features
        bound1, bound2 = 1 / math.sqrt(in_features), 1 / math.sqrt(hidden)
        self.weight1 = _uniform((hidden, in_features), bound1)
        self.bias1 = _uniform((hidden,), bound1)
        self.weight2 = _uniform((out_features, hidden), bound2)
        self.bias2 = _uniform((out_features,), bound2)

    def forward(self, x: tensor.Tensor) -> tensor.Tensor:
        hidden = tensor.relu(x @ self.weight1.T + self.bias1)
        return hidden @ self.weight2.T + self.bias2

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, hidden={self.hidden}, out_features={self.out_features}"


def make_batch(n: int, generator: tensor.Generator | None = None) -> tuple[tensor.Tensor, tensor.Tensor]:
    """The task the pretrained weights solve: which of the first 3 of 4 features is largest."""
    x = tensor.randn(n, 4, generator=generator)
    return x, x[:, :3].argmax(1)
