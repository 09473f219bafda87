"""``ctc_loss``: connectionist temporal classification, by the forward (alpha) recursion in log
space over the blank-extended labels, batched over samples; its gradient comes from autograd
through the recursion (one logsumexp per time step).

PyTorch's own backward returns ``exp(log_probs) - posteriors``, which assumes the input is a
``log_softmax`` output; the exact partial derivative here is ``-posteriors``. The two agree on
the gradient of the logits through ``log_softmax`` (the usual use), not on ``log_probs`` itself.
"""

from __future__ import annotations

import numpy as np

import tensor
from tensor import Tensor

from .loss import _check_reduction

__all__ = ["ctc_loss"]

# Log-probability standing in for "impossible": finite, so logsumexp never sees inf - inf.
_IMPOSSIBLE = -1e30


def _as_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.reshape(-1).cpu().tolist()]
    return [int(v) for v in lengths]


def _extended_labels(targets: Tensor, target_lengths: list[int], blank: int) -> list[list[int]]:
    """Each target with blanks around and between its labels (``2 * S + 1`` entries)."""
    flat = targets.cpu().numpy()
    labels, offset = [], 0
    for n, length in enumerate(target_lengths):
        if flat.ndim == 2:
            row = flat[n, :length]
        else:
            row = flat[offset : offset + length]
            offset += length
        extended = [blank]
        for label in row:
            extended += [int(label), blank]
        labels.append(extended)
    return labels


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths,
    target_lengths,
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss of ``log_probs`` ``(T, N, C)`` (or ``(T, C)``) against ``targets`` (padded
    ``(N, S)`` or concatenated 1-D), as ``torch.nn.functional.ctc_loss``: 'mean' divides each
    sample's loss by its target length, then averages; impossible alignments give inf (0 with
    ``zero_infinity``).

    Raises:
        ValueError: for a bad reduction.
        RuntimeError: for lengths that do not match the batch, or an input length beyond ``T``.
    """
    _check_reduction(reduction)
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    steps, batch, _ = lp.shape
    in_lengths, tgt_lengths = _as_list(input_lengths), _as_list(target_lengths)
    if unbatched and targets.ndim == 1 and len(tgt_lengths) == 1:
        targets = targets.unsqueeze(0)
    if len(in_lengths) != batch or len(tgt_lengths) != batch:
        raise RuntimeError(
            f"input_lengths must be of size batch_size ({batch}) and target_lengths too, got "
            f"{len(in_lengths)} and {len(tgt_lengths)}"
        )
    if max(in_lengths) > steps:
        raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {max(in_lengths)}")
    labels = _extended_labels(targets, tgt_lengths, blank)
    width = max(len(ext) for ext in labels)
    index = np.full((batch, width), blank, dtype=np.int64)
    valid = np.zeros((batch, width), dtype=bool)
    skip = np.zeros((batch, width), dtype=bool)  # the s-2 transition is allowed
    for n, ext in enumerate(labels):
        index[n, : len(ext)] = ext
        valid[n, : len(ext)] = True
        for s in range(2, len(ext)):
            skip[n, s] = ext[s] != blank and ext[s] != ext[s - 2]
    device, dtype = lp.device, lp.dtype

    def const(array, kind=None):
        return tensor.tensor(array, dtype=kind or dtype, device=device)

    emissions = lp.gather(2, const(index, tensor.int64).unsqueeze(0).expand(steps, -1, -1))  # (T, N, W)
    impossible = const(np.where(valid, 0.0, _IMPOSSIBLE))
    skip_penalty = const(np.where(skip, 0.0, _IMPOSSIBLE))
    start = np.full((batch, width), _IMPOSSIBLE)
    start[:, :2] = 0.0
    alpha = emissions[0] + const(start) + impossible
    pad = tensor.full((batch, 1), _IMPOSSIBLE, dtype=dtype, device=device)
    for t in range(1, steps):
        shifted1 = tensor.cat([pad, alpha[:, :-1]], 1)
        shifted2 = tensor.cat([pad, pad, alpha[:, :-2]], 1) + skip_penalty
        step = tensor.stack([alpha, shifted1, shifted2], 0).logsumexp(0) + emissions[t] + impossible
        running = const(np.array([[t < length] for length in in_lengths]), tensor.bool)
        alpha = tensor.where(running, step, alpha)
    ends = [[2 * s, max(2 * s - 1, 0)] for s in tgt_lengths]
    last = alpha.gather(1, const(np.array(ends), tensor.int64))
    both = const(np.array([[0.0, 0.0 if s > 0 else _IMPOSSIBLE] for s in tgt_lengths]))
    losses = -(last + both).logsumexp(1)
    infinite = losses > -_IMPOSSIBLE / 2
    losses = tensor.where(
        infinite, tensor.zeros_like(losses) if zero_infinity else tensor.full_like(losses, np.inf), losses
    )
    if reduction == "mean":
        divisors = const(np.maximum(np.array(tgt_lengths, dtype=np.float64), 1.0))
        return (losses / divisors).mean()
    if reduction == "sum":
        return losses.sum()
    return losses.squeeze(0) if unbatched else losses
