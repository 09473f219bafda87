"""Distances between batches of vectors: ``pairwise_distance``, ``cosine_similarity``, ``pdist``."""

from __future__ import annotations

import tensor
from tensor import Tensor

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def vector_norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x`` along ``dim`` (``inf`` for the max norm, 0 counts non-zeros)."""
    if p == float("inf"):
        return x.abs().amax(dim, keepdim=keepdim)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if p == 2:
        return (x * x).sum(dim, keepdim=keepdim).sqrt()
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim)
    return (x.abs() ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim (broadcasting the leading dims)."""
    return vector_norm(x1 - x2 + eps, p, max(x1.ndim, x2.ndim, 1) - 1, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (broadcasting)."""
    n1 = tensor.clamp(vector_norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = tensor.clamp(vector_norm(x2, 2, dim, keepdim=True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm distance between every pair of rows of an ``(N, M)`` input: the upper
    triangle (``i < j``) in row order, ``N * (N - 1) / 2`` values.

    Raises:
        RuntimeError: for an input that is not 2-d.
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    rows, cols = zip(*[(i, j) for i in range(n) for j in range(i + 1, n)]) if n > 1 else ((), ())
    index = tensor.tensor(list(rows), dtype=tensor.int64, device=input.device)
    other = tensor.tensor(list(cols), dtype=tensor.int64, device=input.device)
    return vector_norm(input.index_select(0, index) - input.index_select(0, other), p, 1)
