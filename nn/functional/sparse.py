"""Embedding lookups."""

from __future__ import annotations

import math

import tensor
from tensor import Tensor
from tensor.ops import special

__all__ = ["embedding"]


def normalize_padding_idx(padding_idx: int | None, num_embeddings: int) -> int | None:
    """``padding_idx`` as a row in ``[0, num_embeddings)`` (negative counts from the end), or None.

    Raises:
        AssertionError: if it is out of range (PyTorch's behaviour).
    """
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
            padding_idx = num_embeddings + padding_idx
    return padding_idx


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer tensor ``input`` (any shape).

    The row ``padding_idx`` gets no gradient. With ``max_norm``, the referenced rows whose
    ``norm_type``-norm exceeds it are renormalized in place first, as in PyTorch.

    Raises:
        RuntimeError: for an ``input`` that is not int64 or int32, or ``sparse=True``.
        IndexError: naming an index out of range.
        AssertionError: for a ``padding_idx`` out of range (PyTorch's behaviour).
    """
    if input.dtype not in (tensor.int64, tensor.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {input.dtype.name} instead (while checking arguments for embedding)"
        )
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {weight.ndim}-D")
    num = weight.shape[0]
    padding_idx = normalize_padding_idx(padding_idx, num)
    if sparse:
        raise RuntimeError("embedding(): sparse gradients are not supported; use sparse=False")
    if input.numel():
        low, high = input._data.min(), input._data.max()
        input._device.backend.device_assert(
            (low < 0) | (high >= num), IndexError,
            f"embedding: index out of range in self (an index outside [0, {num}))",
            lambda: f"index out of range in self: index {high if high >= num else low} for an "
                    f"embedding of {num} rows")
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return special.embedding(weight, input, padding_idx, scale_grad_by_freq)


def _renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows of ``weight`` referenced by ``input`` down to ``max_norm`` (in place)."""
    xp = weight.device.backend.xp
    rows = xp.unique(input._data.reshape(-1))
    with tensor.no_grad():
        data = weight._data
        picked = data[rows]
        norms = _row_norms(xp, picked, norm_type)
        over = norms > max_norm
        if over.any():
            scale = max_norm / (norms[over] + 1e-7)
            data[rows[over]] = picked[over] * scale[:, None].astype(data.dtype)
            weight._version_box[0] += 1


def _row_norms(xp, rows, norm_type: float):
    """The ``norm_type``-norm of each row; ``inf`` is the largest magnitude, ``-inf`` the smallest."""
    magnitudes = xp.abs(rows)
    if math.isinf(norm_type):
        return magnitudes.max(axis=1) if norm_type > 0 else magnitudes.min(axis=1)
    return (magnitudes**norm_type).sum(axis=1) ** (1.0 / norm_type)
