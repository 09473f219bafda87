"""More activations, as compositions of differentiable ops: hardsigmoid, hardswish, glu, prelu,
rrelu, celu, selu, tanhshrink, threshold, softshrink, hardshrink, softmin; and the in-place
forms ``elu_``, ``hardtanh_``, ``celu_``, ``selu_``, ``rrelu_``, ``threshold_``."""

from __future__ import annotations

import tensor
from tensor import Tensor, _autocast
from tensor.ops import activation as activation_ops

from .activation import _run, elu, hardtanh, leaky_relu, softmax

__all__ = [
    "hardsigmoid",
    "hardswish",
    "glu",
    "prelu",
    "rrelu",
    "rrelu_",
    "celu",
    "celu_",
    "selu",
    "selu_",
    "tanhshrink",
    "threshold",
    "threshold_",
    "softshrink",
    "hardshrink",
    "softmin",
    "elu_",
    "hardtanh_",
]

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``; the gradient is ``1/6`` strictly inside ``(-3, 3)``.

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(activation_ops.hardsigmoid, input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``; the gradient is 0 up to -3, ``x / 3 + 1/2`` up to 3, 1 from 3
    on (and at NaN), as PyTorch.

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(activation_ops.hardswish, input, inplace)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second half.

    Raises:
        RuntimeError: if ``dim`` has an odd size.
    """
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {size}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


@_autocast.as_op("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one slope or one per
    channel (dim 1).

    Raises:
        RuntimeError: if ``weight`` has neither 1 nor ``input.shape[1]`` elements.
    """
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() not in (1, channels):
        raise RuntimeError(
            f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{weight.numel()} and channel size = {channels}."
        )
    slope = weight.reshape(-1) if weight.numel() == 1 else weight.reshape([channels] + [1] * (input.ndim - 2))
    return tensor.where(input > 0, input, slope * input)


def rrelu(
    input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False
) -> Tensor:
    """Randomized leaky ReLU: in training each negative element gets a slope drawn uniformly from
    ``[lower, upper]``; in evaluation the slope is ``(lower + upper) / 2``.

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    return _run(_rrelu_random, input, inplace, lower, upper)


def _rrelu_random(input: Tensor, lower: float, upper: float) -> Tensor:
    slopes = tensor.rand_like(input.detach()) * (upper - lower) + lower
    return tensor.where(input >= 0, input, input * slopes)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Raises:
        RuntimeError: for ``alpha == 0``; with ``inplace``, on a leaf that requires grad while
            autograd records.
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: celu's alpha must not be 0")
    return _run(_celu, input, inplace, alpha)


def _celu(input: Tensor, alpha: float) -> Tensor:
    return input.relu() + alpha * (tensor.clamp(input, max=0.0) / alpha).expm1()


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return celu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled ELU with the self-normalising constants (``scale * elu(x, alpha)``).

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(_selu, input, inplace)


def _selu(input: Tensor) -> Tensor:
    return SELU_SCALE * elu(input, SELU_ALPHA)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return selu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``elu``."""
    return elu(input, alpha, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place ``hardtanh``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - input.tanh()


def _threshold(input: Tensor, limit: float, value: float) -> Tensor:
    # ``x <= limit`` rather than ``x > limit`` so that NaN stays NaN, as PyTorch.
    return tensor.where(input <= limit, tensor.full_like(input, value), input)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``value`` where ``x <= threshold``, else ``x`` (NaN stays NaN).

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(_threshold, input, inplace, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place ``threshold``."""
    return _run(_threshold, input, True, threshold, value)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between (NaN stays NaN).

    Raises:
        RuntimeError: for a negative ``lambd``.
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return tensor.where(input.abs() <= lambd, tensor.zeros_like(input), input - input.sign() * lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0 (NaN stays NaN)."""
    return tensor.where(input.abs() <= lambd, tensor.zeros_like(input), input)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``softmax(-x)`` along ``dim``."""
    return softmax(-input, dim, _stacklevel + 1, dtype)
