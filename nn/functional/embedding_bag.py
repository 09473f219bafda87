"""``embedding_bag``: sums, means or maxima of bags of embedding rows, without materialising
the per-index embeddings' bag structure (one gather, then one index_add or scatter_reduce)."""

from __future__ import annotations

import numpy as np

import tensor
from tensor import Tensor

from .sparse import embedding, normalize_padding_idx

__all__ = ["embedding_bag"]


def _bags(input: Tensor, offsets: Tensor | None, include_last_offset: bool) -> tuple[Tensor, np.ndarray, int]:
    """The flat indices, the bag of each (-1 for none), and the number of bags."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                "fixed length sequences. However, found offsets of type Tensor"
            )
        bags, length = input.shape
        return input.reshape(-1), np.repeat(np.arange(bags), length), bags
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    starts = [int(o) for o in offsets.cpu().tolist()]
    if starts and starts[0] != 0:
        raise RuntimeError(
            f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
            f"position 0. However, got {starts[0]}"
        )
    n = input.shape[0]
    if starts and starts[-1] > n:
        raise RuntimeError(
            f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {starts[-1]}"
        )
    if include_last_offset:
        ends, starts = starts[1:], starts[:-1]
    else:
        ends = starts[1:] + [n]
    bag_of = np.full(n, -1, dtype=np.int64)  # indices past the last offset belong to no bag
    for bag, (start, end) in enumerate(zip(starts, ends)):
        bag_of[start:end] = bag
    return input, bag_of, len(starts)


def _check_indices(indices: np.ndarray, rows: int) -> None:
    bad = np.flatnonzero((indices < 0) | (indices >= rows))
    if bad.size:
        raise RuntimeError(
            f"Index {bad[0]} of input takes value {indices[bad[0]]} which is not in the valid range [0, {rows})"
        )


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Reduce bags of rows of ``weight``: the rows of a 2-D ``input`` are the bags, or a 1-D
    ``input`` is cut at ``offsets``. ``mode`` is 'sum', 'mean' or 'max'; ``per_sample_weights``
    (with 'sum') scale each row; indices equal to ``padding_idx`` are left out of their bag; an
    empty bag gives zeros. With ``include_last_offset`` the last offset ends the last bag, and
    any indices after it are in no bag (as PyTorch's float32 'sum'; its other kernels
    disagree with each other there).

    Raises:
        ValueError: for an unknown mode, bad ``offsets``, or ``per_sample_weights`` with a mode
            other than 'sum' or of another shape than ``input``.
        RuntimeError: for an index outside ``weight``'s rows, an offset past the end of
            ``input``, or ``per_sample_weights`` of another dtype than ``weight``.
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub."
            )
        if per_sample_weights.shape != input.shape:
            raise ValueError(
                f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                f"then it must have the same shape as the input ({list(input.shape)})"
            )
        if per_sample_weights.dtype != weight.dtype:
            raise RuntimeError(
                f"embedding_bag: expected per_sample_weights to have weight's dtype {weight.dtype}, "
                f"but got {per_sample_weights.dtype}"
            )
    flat, bag_of, bags = _bags(input, offsets, include_last_offset)
    indices = flat.cpu().numpy()
    _check_indices(indices, weight.shape[0])
    padding_idx = normalize_padding_idx(padding_idx, weight.shape[0])
    keep = bag_of >= 0
    if padding_idx is not None:
        keep &= indices != padding_idx
    kept = tensor.tensor(np.nonzero(keep)[0], dtype=tensor.int64, device=input.device)
    rows = embedding(flat.index_select(0, kept), weight, None, max_norm, norm_type, scale_grad_by_freq)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1).index_select(0, kept).unsqueeze(1)
    bag_index = tensor.tensor(bag_of[keep], dtype=tensor.int64, device=input.device)
    out = tensor.zeros(bags, weight.shape[1], dtype=weight.dtype, device=weight.device)
    if mode == "max":
        if not rows.numel():  # every bag empty: scatter_reduce would return zeros outside the graph
            return out + rows.sum()
        return out.scatter_reduce(
            0, bag_index.unsqueeze(1).expand(-1, weight.shape[1]), rows, "amax", include_self=False
        )
    out = out.index_add(0, bag_index, rows)
    if mode == "mean":
        counts = np.bincount(bag_of[keep], minlength=bags).astype(np.float64)
        out = out / tensor.tensor(np.maximum(counts, 1.0)[:, None], dtype=weight.dtype, device=weight.device)
    return out
