"""Distances between batches of vectors: ``pairwise_distance``, ``cosine_similarity``, ``pdist``."""

from __future__ import annotations

import tensor
from tensor import Tensor
from tensor._dtype import HALF_FLOATS

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def _widened(x: Tensor) -> Tensor:
    return x.float() if x.dtype in HALF_FLOATS else x


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` along the last dim (broadcasting the leading dims)."""
    return tensor.linalg.vector_norm(x1 - x2 + eps, p, max(x1.ndim, x2.ndim, 1) - 1, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim`` (broadcasting); float16 and
    bfloat16 are computed in float32 and rounded once (their squares overflow or underflow)."""
    if x1.dtype in HALF_FLOATS or x2.dtype in HALF_FLOATS:
        dtype = tensor.promote_types(x1.dtype, x2.dtype)
        return cosine_similarity(_widened(x1), _widened(x2), dim, eps).to(dtype)
    n1 = tensor.clamp(tensor.linalg.vector_norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = tensor.clamp(tensor.linalg.vector_norm(x2, 2, dim, keepdim=True), min=eps)
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
    return tensor.linalg.vector_norm(input.index_select(0, index) - input.index_select(0, other), p, 1)
