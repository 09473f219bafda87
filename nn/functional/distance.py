"""Distances between batches of vectors: ``pairwise_distance``, ``cosine_similarity``, ``pdist``."""

from __future__ import annotations

import tensor
from tensor import Tensor

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def _vector_norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The ``p``-norm of ``x`` along ``dim``, as ``tensor.linalg.vector_norm``, except that
    ``p = 0`` (the count of non-zeros) stays in the graph with a zero gradient, as PyTorch."""
    if p == 0:
        # sign() has a zero derivative; where() keeps NaN counted as non-zero.
        return tensor.where(x != 0, 1.0, x.sign()).sum(dim, keepdim=keepdim)
    return tensor.linalg.vector_norm(x, p, dim, keepdim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim (broadcasting the leading dims)."""
    return _vector_norm(x1 - x2 + eps, p, max(x1.ndim, x2.ndim, 1) - 1, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (broadcasting)."""
    n1 = tensor.clamp(_vector_norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = tensor.clamp(_vector_norm(x2, 2, dim, keepdim=True), min=eps)
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
    return _vector_norm(input.index_select(0, index) - input.index_select(0, other), p, 1)
