"""Variable-length sequences: ``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pad_sequence``, ``pack_sequence``, ``unpad_sequence`` and
``unpack_sequence`` (our ``torch.nn.utils.rnn``).

A packed sequence stores time step by time step the entries of the sequences still running:
``data`` is ``(sum(lengths), *)`` and ``batch_sizes[t]`` says how many sequences step ``t``
holds (the longest first, so the live ones are a prefix). Packing and unpacking are cat /
narrow / index_select compositions, so gradients flow through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

import tensor
from tensor import Tensor

__all__ = [
    "PackedSequence",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "pack_sequence",
    "unpad_sequence",
    "unpack_sequence",
    "invert_permutation",
]


def _cast_to(dtype_name: str):
    """A ``PackedSequence`` method casting ``data`` to ``tensor.<dtype_name>`` (``double`` & co.)."""

    def cast(self) -> PackedSequence:
        return self.to(dtype=getattr(tensor, dtype_name))

    cast.__doc__ = f"``data`` cast to {dtype_name}."
    return cast


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """``data`` (the steps of all sequences, packed), ``batch_sizes`` (an int64 CPU tensor:
    sequences per step), and the permutation that sorted the batch by length (and its inverse,
    computed when not given). ``data`` may also be the pair ``(data, batch_sizes)``.

    Raises:
        AssertionError: without ``batch_sizes`` when ``data`` is not such a pair.
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("PackedSequence needs batch_sizes, or data as the pair (data, batch_sizes)")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same packing with ``data`` (and the index tensors, to its device) moved/cast."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def move(index: Tensor | None) -> Tensor | None:
            return None if index is None else index.to(data.device)

        return PackedSequence(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self) -> PackedSequence:
        """``to('cpu')``."""
        return self.to("cpu")

    double, float, half = (_cast_to(name) for name in ("float64", "float32", "float16"))
    long, int, short, char, byte = (_cast_to(name) for name in ("int64", "int32", "int16", "int8", "uint8"))

    def pin_memory(self) -> PackedSequence:
        """The same packing with ``data`` in pinned memory."""
        return PackedSequence(self.data.pin_memory(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cuda(self, device=None) -> PackedSequence:
        """``data`` on a CUDA device."""
        return self.to(tensor.device("cuda", device) if isinstance(device, int) else (device or "cuda"))

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Whether ``data`` is in pinned memory."""
        return self.data.is_pinned()


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (None for None)."""
    if permutation is None:
        return None
    order = np.empty(permutation.numel(), dtype=np.int64)
    order[permutation.cpu().numpy()] = np.arange(permutation.numel())
    return tensor.tensor(order, device=permutation.device)


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise ValueError(f"lengths must be a 1D tensor, got shape {list(lengths.shape)}")
        return [int(v) for v in lengths.cpu().tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(
    input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of the
    given ``lengths``. With ``enforce_sorted`` the lengths must be decreasing; otherwise the batch
    is sorted first and the permutation kept.

    Raises:
        RuntimeError: for unsorted lengths with ``enforce_sorted``, a length <= 0, or lengths that
            do not match the batch.
    """
    sizes = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if len(sizes) != input.shape[batch_dim]:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(sizes)} "
            f"(batch_size={input.shape[batch_dim]})"
        )
    if any(n <= 0 for n in sizes):
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    if enforce_sorted:
        if any(a < b for a, b in zip(sizes, sizes[1:])):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                "to sidestep this requirement if you do not need ONNX exportability."
            )
        sorted_indices = None
    else:
        order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
        sorted_indices = tensor.tensor(order, dtype=tensor.int64, device=input.device)
        input = input.index_select(batch_dim, sorted_indices)
        sizes = [sizes[i] for i in order]
    if max(sizes) > input.shape[1 - batch_dim]:
        raise RuntimeError(
            f"the longest length ({max(sizes)}) exceeds the padded length ({input.shape[1 - batch_dim]})"
        )
    steps = input.transpose(0, 1) if batch_first else input
    batch_sizes = [sum(1 for n in sizes if n > t) for t in range(sizes[0])]
    data = tensor.cat([steps[t].narrow(0, 0, b) for t, b in enumerate(batch_sizes)], 0)
    return PackedSequence(
        data, tensor.tensor(batch_sizes, dtype=tensor.int64), sorted_indices, invert_permutation(sorted_indices)
    )


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length: int | None = None
) -> tuple[Tensor, Tensor]:
    """Undo ``pack_padded_sequence``: the padded batch and the lengths (int64, original order).

    Raises:
        ValueError: for a ``total_length`` shorter than the longest sequence.
    """
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    steps, batch = len(batch_sizes), batch_sizes[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"Expected total_length to be at least the length of the longest sequence in input, "
                f"but got total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    rows, offset = [], 0
    for t in range(steps):
        size = batch_sizes[t] if t < len(batch_sizes) else 0
        step = data.narrow(0, offset, size)
        offset += size
        if size < batch:
            filler = tensor.full((batch - size, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
            step = tensor.cat([step, filler], 0)
        rows.append(step)
    padded = tensor.stack(rows, 0)
    lengths = np.array([sum(1 for b in batch_sizes if b > i) for i in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu().numpy()]
    return (padded.transpose(0, 1) if batch_first else padded), tensor.tensor(lengths)


def pad_sequence(
    sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"
) -> Tensor:
    """Stack sequences ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with
    ``batch_first``), padding each with ``padding_value`` on ``padding_side``.

    The result has the first sequence's dtype, as in PyTorch.

    Raises:
        RuntimeError: for a ``padding_side`` other than 'left' or 'right', no sequences, or 0-d ones.
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if any(s.ndim == 0 for s in sequences):
        raise RuntimeError("pad_sequence: every sequence needs at least one dimension (its length), got a 0-d tensor")
    longest = max(s.shape[0] for s in sequences)
    dtype = sequences[0].dtype
    padded = []
    for s in sequences:
        s = s.to(dtype)
        filler = tensor.full((longest - s.shape[0], *s.shape[1:]), padding_value, dtype=dtype, device=s.device)
        padded.append(tensor.cat([s, filler] if padding_side == "right" else [filler, s], 0))
    return tensor.stack(padded, 0 if batch_first else 1)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (decreasing lengths unless ``enforce_sorted=False``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(
    padded_sequences: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False
) -> list[Tensor]:
    """Split a padded batch back into its sequences of ``lengths``."""
    batch = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [batch[i].narrow(0, 0, n) for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Split a packed sequence back into its sequences (original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
