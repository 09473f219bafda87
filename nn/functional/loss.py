"""Losses: cross_entropy, nll_loss, mse_loss, l1_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy(_with_logits) and kl_div, with PyTorch's reductions and weighting."""

from __future__ import annotations

import warnings

import tensor
from tensor import Tensor, _autocast, _dtype
from tensor.ops import activation, special

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
]

_REDUCTIONS = ("none", "mean", "sum")


# The losses here run one frame below their caller (tensor._autocast.as_op): their warnings skip it.
_AS_OP_STACKLEVEL = 4


def _legacy_reduction(size_average, reduce, reduction: str, stacklevel: int = 3) -> str:
    """Map the deprecated ``size_average``/``reduce`` flags onto ``reduction``, as PyTorch does;
    the deprecation warning names the caller ``stacklevel`` frames up."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='{}' instead."
                  .format("none" if reduce is False else ("sum" if size_average is False else "mean")),
                  stacklevel=stacklevel)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_reduction(reduction: str, allowed=_REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_class_target(input: Tensor, target: Tensor, name: str) -> None:
    if input.ndim == 0:
        raise ValueError(f"{name}: expected input with at least 1 dim (got a 0-d input)")
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError(
                f"{name}: a 1-D input (one sample of {input.shape[0]} classes) needs a 0-d target, "
                f"got a target of shape {list(target.shape)}"
            )
    elif target.shape[:1] != input.shape[:1]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0] if target.ndim else 0})."
        )
    elif target.shape != input.shape[:1] + input.shape[2:]:
        raise RuntimeError(
            f"{name}: expected target of shape {list(input.shape[:1] + input.shape[2:])} for an input of "
            f"shape {list(input.shape)}, got {list(target.shape)}"
        )


def _check_target_range(target: Tensor, classes: int, ignore_index: int) -> None:
    """A device-side assert that every target other than ``ignore_index`` is in [0, classes)."""
    data = target._data
    if data.size == 0:
        return
    valid = data != ignore_index
    bad = (valid & ((data < 0) | (data >= classes))).any()

    def describe() -> str:
        kept = data[valid]
        high = kept.max()
        return f"Target {high if high >= classes else kept.min()} is out of bounds."

    target._device.backend.device_assert(
        bad, IndexError, f"nll_loss: a target is outside [0, {classes})", describe)


def _check_weight(weight: Tensor | None, classes: int) -> None:
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != classes):
        raise RuntimeError(
            f"weight tensor should be defined either for all {classes} classes or no classes but got "
            f"weight tensor of shape: {list(weight.shape)}"
        )


@_autocast.as_op("nll_loss")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class indices ``target`` under log-probabilities ``input``
    ((N, C, *) with target (N, *), or (C,) with a 0-d target).

    ``reduction='mean'`` divides by the summed weights of the non-ignored targets, as PyTorch.

    Raises:
        ValueError: for mismatched batch sizes or an unknown reduction.
        IndexError: "Target k is out of bounds." for a class outside [0, C).
        RuntimeError: for a target that is not int64 or uint8, or a wrong-sized weight.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction)
    if target.dtype not in (tensor.int64, tensor.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_dtype.scalar_type_name(target.dtype)}"
        )
    _check_class_target(input, target, "nll_loss")
    classes = input.shape[0 if input.ndim == 1 else 1]
    _check_weight(weight, classes)
    _check_target_range(target, classes, ignore_index)
    w = None if weight is None else weight.to(input.dtype)._data
    return special.nll_loss(input, target, w, ignore_index, reduction)


@_autocast.as_op("cross_entropy_loss")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy between logits ``input`` (class dim 1, or 0 for a 1-D input) and ``target``:
    class indices (integers, shape (N, *)) or class probabilities (floats, the input's shape).

    ``weight`` rescales each class; ``ignore_index`` (indices only) skips targets;
    ``label_smoothing`` mixes the target with the uniform distribution. The weighted mean
    divides by the summed weights of the targets, as PyTorch does.

    Raises:
        ValueError: for an unknown reduction or mismatched batch sizes.
        IndexError: for a class index outside [0, C).
        RuntimeError: for ``label_smoothing`` outside [0, 1] or a wrong-shaped target.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.ndim == 0:
        raise ValueError("cross_entropy: expected input with at least 1 dim (got a 0-d input)")
    class_dim = 0 if input.ndim == 1 else 1
    classes = input.shape[class_dim]
    logp = special.log_softmax(input, class_dim)
    if target.is_floating_point():
        return _cross_entropy_probs(logp, target, weight, reduction, label_smoothing, class_dim)
    loss = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0.0:
        return loss
    w_view = None if weight is None else _class_view(weight.to(logp.dtype), logp.ndim, class_dim)
    smooth = -(logp if w_view is None else logp * w_view).sum(class_dim)
    ignored = target == ignore_index
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        kept = ~ignored
        if weight is None:
            denom = kept.sum()
        else:
            safe = target.masked_fill(ignored, 0)
            denom = (weight.to(logp.dtype)[safe] * kept).sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return loss * (1 - label_smoothing) + smooth * (label_smoothing / classes)


def _class_view(weight: Tensor, ndim: int, class_dim: int) -> Tensor:
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return weight.reshape(shape)


def _cross_entropy_probs(logp, target, weight, reduction, label_smoothing, class_dim):
    if target.shape != logp.shape:
        raise RuntimeError(
            f"cross_entropy: class-probability targets must have the input's shape {list(logp.shape)}, "
            f"got {list(target.shape)}"
        )
    classes = logp.shape[class_dim]
    _check_weight(weight, classes)
    if label_smoothing > 0.0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    prod = logp * target
    if weight is not None:
        prod = prod * _class_view(weight.to(logp.dtype), logp.ndim, class_dim)
    if reduction == "none":
        return -prod.sum(class_dim)
    total = -prod.sum()
    if reduction == "sum":
        return total
    samples = logp.numel() // classes if classes else 0
    return total / samples if samples else total * float("nan")


def _check_same_size(input: Tensor, target: Tensor, name: str) -> None:
    if input.shape != target.shape:
        warnings.warn(
            f"Using a target size ({tuple(target.shape)}) that is different to the input size "
            f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.", stacklevel=_AS_OP_STACKLEVEL,
        )


@_autocast.as_op("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Mean squared error ``(input - target) ** 2``, reduced.

    Raises:
        ValueError: for an unknown reduction.
        RuntimeError: if the shapes do not broadcast.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction)
    _check_same_size(input, target, "mse_loss")
    diff = input - target
    loss = diff * diff
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast.as_op("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Mean absolute error ``|input - target|``, reduced.

    Raises:
        ValueError: for an unknown reduction.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction)
    _check_same_size(input, target, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast.as_op("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 * d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 * beta`` (``d = input - target``);
    ``beta = 0`` is the L1 loss.

    Raises:
        RuntimeError: for a negative ``beta``.
        ValueError: for an unknown reduction.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _check_same_size(input, target, "smooth_l1_loss")
    diff = input - target
    distance = diff.abs()
    if beta == 0.0:
        return _reduce(distance, reduction)
    # The square of ``diff``, not of ``|diff|``: its second derivative at 0 is 1/beta, where
    # abs'(0) = 0 would give 0.
    loss = tensor.where(distance < beta, diff * diff * (0.5 / beta), distance - 0.5 * beta)
    return _reduce(loss, reduction)


@_autocast.as_op("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 * d**2`` where ``|d| < delta``, else ``delta * (|d| - 0.5 * delta)``.

    Raises:
        RuntimeError: for a non-positive ``delta``.
    """
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    diff = input - target
    distance = diff.abs()
    loss = tensor.where(distance < delta, diff * diff * 0.5, (distance - 0.5 * delta) * delta)  # as smooth_l1_loss
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast.as_op("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    """``-(t * log(p) + (1 - t) * log(1 - p))`` for probabilities ``input``; logs are clamped at
    -100, as in PyTorch.

    Raises:
        ValueError: if ``target`` and ``input`` sizes differ, or for an unknown reduction.
        RuntimeError: if an input value is outside [0, 1].
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Using a target size ({tuple(target.shape)}) that is different to the input size "
            f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size."
        )
    if input.numel() and bool(((input < 0) | (input > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = special.binary_cross_entropy(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast.as_op("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross entropy in one numerically stable expression:
    ``(1 - t) * x + (1 + (pos_weight - 1) * t) * softplus(-x)``.

    Raises:
        ValueError: if ``target`` and ``input`` sizes differ, or for an unknown reduction.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction)
    if target.shape != input.shape:
        raise ValueError(
            f"Target size ({tuple(target.shape)}) must be the same as input size ({tuple(input.shape)})"
        )
    softplus_neg = activation.log1pexp(-input)  # its gradient is right at 0 too, where sigmoid(0) = 0.5
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * softplus_neg
    else:
        loss = (1 - target) * input + softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast.as_op("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target * (log(target) - input)`` with ``input`` in log space
    (and ``target`` too when ``log_target``). ``reduction='batchmean'`` divides the sum by the
    batch size, the mathematically correct KL; 'mean' divides by the element count.

    Raises:
        ValueError: for an unknown reduction.
    """
    reduction = _legacy_reduction(size_average, reduce, reduction, _AS_OP_STACKLEVEL)
    _check_reduction(reduction, _REDUCTIONS + ("batchmean",))
    if reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support size."
            "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
            "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
            stacklevel=_AS_OP_STACKLEVEL - 1,
        )
    if log_target:
        loss = target.exp() * (target - input)
    else:
        positive = target > 0
        safe = tensor.where(positive, target, tensor.ones_like(target))
        loss = tensor.where(positive, target * safe.log(), tensor.zeros_like(target)) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction)
