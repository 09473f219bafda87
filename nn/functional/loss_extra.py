"""More losses, composed from differentiable ops: ranking and margin losses, embeddings,
multi-label, Poisson and Gaussian negative log likelihoods, triplets."""

from __future__ import annotations

import math
from collections.abc import Callable

import tensor
from tensor import Tensor

from .activation import logsigmoid
from .distance import pairwise_distance
from .loss import _check_reduction, _legacy_reduction, _reduce

__all__ = [
    "margin_ranking_loss",
    "hinge_embedding_loss",
    "soft_margin_loss",
    "cosine_embedding_loss",
    "multi_margin_loss",
    "multilabel_soft_margin_loss",
    "multilabel_margin_loss",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _reduction(size_average, reduce, reduction: str) -> str:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return reduction


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``; ``target`` is 1 or -1.

    Raises:
        RuntimeError: if the three inputs do not have the same number of dims.
    """
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, "
            f"target: {list(target.shape)} "
        )
    loss = (-target * (input1 - input2) + margin).clamp(min=0)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def hinge_embedding_loss(
    input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``."""
    zeros = tensor.zeros_like(input)
    margin_part = tensor.where(target != 1, (margin - input).clamp(min=0), zeros)
    self_part = tensor.where(target != -1, input, zeros)
    return _reduce(margin_part + self_part, _reduction(size_average, reduce, reduction))


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``."""
    loss = (-target * input).exp().log1p()
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``-1``
    (the cosine along the last dim, with PyTorch's ``1e-12`` added to the squared norms)."""
    dim = input1.ndim - 1
    eps = 1e-12
    prod = (input1 * input2).sum(dim)
    denom = (((input1 * input1).sum(dim) + eps) * ((input2 * input2).sum(dim) + eps)).sqrt()
    cos = prod / denom
    zeros = tensor.zeros_like(cos)
    loss = tensor.where(target == 1, 1 - cos, zeros) + tensor.where(target == -1, (cos - margin).clamp(min=0), zeros)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: float = 1.0,
    weight: Tensor | None = None,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Multi-class hinge loss: ``sum_{i != y} max(0, margin - x[y] + x[i]) ** p / C`` per sample
    (times ``weight[y]``).

    Raises:
        ValueError: for ``p`` other than 1 or 2.
    """
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.ndim > 1 else input.unsqueeze(0)
    y = target.reshape(-1, 1).to(tensor.int64)
    picked = x.gather(1, y)
    terms = (margin - picked + x).clamp(min=0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.index_select(0, y.reshape(-1)).unsqueeze(1)
    classes = tensor.arange(x.shape[1], device=x.device).unsqueeze(0)
    terms = tensor.where(classes == y, tensor.zeros_like(terms), terms)
    loss = terms.sum(1) / x.shape[1]
    if input.ndim <= 1:
        loss = loss.reshape(target.shape)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def multilabel_soft_margin_loss(
    input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Per-class logistic loss averaged over the classes (the last dim)."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def multilabel_margin_loss(
    input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:
    """Multi-label hinge loss: ``target`` lists each sample's classes, ended by the first -1;
    ``sum over target classes j, other classes i of max(0, 1 - (x[j] - x[i])) / C``.

    Raises:
        RuntimeError: if ``target`` does not have the shape of ``input``.
    """
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    x = input if input.ndim > 1 else input.unsqueeze(0)
    labels = target.reshape(x.shape).to(tensor.int64)
    # classes before the first -1 are targets
    listed = (labels >= 0).to(tensor.int64).cumprod(1).to(tensor.bool)
    safe = tensor.where(listed, labels, tensor.zeros_like(labels))
    is_target = (
        tensor.zeros(x.shape, dtype=tensor.float32, device=x.device).scatter_add(1, safe, listed.to(tensor.float32)) > 0
    )
    picked = x.gather(1, safe)  # (N, C): the score of each listed target (junk where not listed)
    hinge = (1 - picked.unsqueeze(2) + x.unsqueeze(1)).clamp(min=0)  # [n, j, i]
    mask = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = tensor.where(mask, hinge, tensor.zeros_like(hinge)).sum((1, 2)) / x.shape[1]
    if input.ndim <= 1:
        loss = loss.reshape(())
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: bool = True,
    full: bool = False,
    size_average=None,
    eps: float = 1e-8,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """Poisson negative log likelihood: ``exp(x) - y * x`` (``log_input``) or
    ``x - y * log(x + eps)``; ``full`` adds Stirling's approximation of ``log(y!)`` where ``y > 1``."""
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = tensor.where(target > 1, target, tensor.ones_like(target))
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + tensor.where(target > 1, stirling, tensor.zeros_like(stirling))
    return _reduce(loss, reduction)


def gaussian_nll_loss(
    input: Tensor, target: Tensor, var: Tensor | float, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
) -> Tensor:
    """Gaussian negative log likelihood ``0.5 * (log(var) + (input - target)**2 / var)``, with
    ``var`` clamped to ``eps`` (the clamp passes gradients through, as PyTorch's does); ``full``
    adds ``0.5 * log(2 * pi)``. ``var`` may have one dim fewer, or a last dim of 1.

    Raises:
        ValueError: for a ``var`` of the wrong size or with negative entries, or a bad reduction.
    """
    if not isinstance(var, Tensor):
        var = tensor.full_like(input, float(var))
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.shape[:-1] == var.shape[:-1] and var.shape[-1:] == (1,)):
            raise ValueError("var is of incorrect size")
    _check_reduction(reduction)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var + (tensor.clamp(var.detach(), min=eps) - var.detach())
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: float = 1.0,
    p: float = 2,
    eps: float = 1e-6,
    swap: bool = False,
    size_average=None,
    reduce=None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with the ``p``-norm pairwise distance (``swap``
    uses ``min(d(a, n), d(p, n))``)."""
    reduction = _reduction(size_average, reduce, reduction)
    return triplet_margin_with_distance_loss(
        anchor,
        positive,
        negative,
        distance_function=lambda x, y: pairwise_distance(x, y, p, eps),
        margin=margin,
        swap=swap,
        reduction=reduction,
    )


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with any distance (pairwise L2 by default).

    Raises:
        ValueError: for a non-positive ``margin`` or a bad reduction.
    """
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = tensor.minimum(d_neg, distance(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp(min=0), reduction)
