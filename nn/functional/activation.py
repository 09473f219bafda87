"""Activation functions: relu, leaky_relu, gelu, silu, tanh, sigmoid, softmax, log_softmax, ..."""

from __future__ import annotations

import warnings

import tensor
from tensor import Tensor, _inplace
from tensor._dtype import HALF_FLOATS
from tensor.ops import activation, special

__all__ = [
    "relu", "relu_", "leaky_relu", "leaky_relu_", "gelu", "silu", "tanh", "sigmoid", "softmax",
    "log_softmax", "softplus", "elu", "hardtanh", "relu6", "mish", "logsigmoid", "softsign",
]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` elementwise; ``inplace=True`` overwrites ``input``."""
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    return input.relu_()


def _run(op, input: Tensor, inplace: bool, *params) -> Tensor:
    """``op(input, *params)``; with ``inplace``, written into ``input`` and recorded as one in-place
    op (Note [In-place activations] in ``tensor/ops/activation.py``).

    Raises:
        RuntimeError: with ``inplace``, if autograd records and ``input`` is a leaf that
            requires grad (or a view of one).
    """
    return _inplace.commit(input, op, params, {}) if inplace else op(input, *params)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``negative_slope * x`` elsewhere.

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(activation.leaky_relu, input, inplace, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place ``leaky_relu``."""
    return leaky_relu(input, negative_slope, inplace=True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit ``x * Phi(x)`` (``approximate='tanh'`` for the tanh form).

    Raises:
        RuntimeError: for an unknown ``approximate``.
    """
    return special.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (swish).

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(activation.silu, input, inplace)


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return input.tanh()


def sigmoid(input: Tensor) -> Tensor:
    """Elementwise logistic sigmoid."""
    return input.sigmoid()


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``; the gradient is
    ``sigmoid(beta * x)`` (0.5 at 0). float16 and bfloat16 are computed in float32 (``exp`` of
    12 overflows float16), as PyTorch."""
    if input.dtype in HALF_FLOATS:
        return softplus(input.float(), beta, threshold).to(input.dtype)
    scaled = input * beta
    # PyTorch's formula. Clamping first keeps exp finite in the branch ``where`` discards, whose
    # gradient would otherwise be 0 * inf = nan.
    soft = scaled.clamp(max=threshold).exp().log1p() / beta
    return tensor.where(scaled > threshold, input, soft)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, computed stably."""
    return -softplus(-input)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere.

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(activation.elu, input, inplace, alpha)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Clamp into ``[min_val, max_val]``; the gradient is zero at and beyond the bounds. An
    integer input keeps its dtype (the bounds are truncated to integers).

    Raises:
        ValueError: if ``min_val > max_val``.
        RuntimeError: for a bool input, or an unsigned one with ``min_val < 0``; with
            ``inplace``, on a leaf that requires grad while autograd records.
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    op = activation.hardtanh if input.is_floating_point() else _hardtanh_integer
    return _run(op, input, inplace, min_val, max_val)


def _hardtanh_integer(input: Tensor, min_val: float, max_val: float) -> Tensor:
    if input.dtype == tensor.bool:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not input.dtype.is_signed and min_val < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return input.clamp(int(min_val), int(max_val))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)``.

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``.

    Raises:
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _run(activation.mish, input, inplace)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
        "as an argument.", stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (one fused, numerically stable op).

    Raises:
        IndexError: if ``dim`` is out of range.
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return special.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed as ``x - logsumexp(x)``.

    Raises:
        IndexError: if ``dim`` is out of range.
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return special.log_softmax(input, dim, dtype)
