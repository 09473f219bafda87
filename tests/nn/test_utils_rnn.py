"""nn.utils.rnn against torch.nn.utils.rnn: packing, padding, round trips and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from nn.utils import rnn
from tests.helpers import assert_close

RNG = np.random.default_rng(0)
SEQS = [RNG.standard_normal((n, 3)) for n in (2, 5, 3, 5)]


def _pair(torch, arrays):
    ours = [tensor.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side, torch):
    ours, theirs = _pair(torch, SEQS)
    a = rnn.pad_sequence(ours, batch_first, -1.0, padding_side)
    b = torch.nn.utils.rnn.pad_sequence(theirs, batch_first, -1.0, padding_side)
    assert_close(a, b.detach().numpy())


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_and_unpack_match_torch(batch_first, enforce_sorted, torch):
    seqs = sorted(SEQS, key=lambda s: -len(s)) if enforce_sorted else SEQS
    lengths = [len(s) for s in seqs]
    ours, theirs = _pair(
        torch, [np.stack([np.pad(s, ((0, 5 - len(s)), (0, 0))) for s in seqs], 0 if batch_first else 1)]
    )
    packed = rnn.pack_padded_sequence(ours[0], lengths, batch_first, enforce_sorted)
    ref = torch.nn.utils.rnn.pack_padded_sequence(theirs[0], lengths, batch_first, enforce_sorted)
    assert_close(packed.data, ref.data.detach().numpy())
    assert packed.batch_sizes.tolist() == ref.batch_sizes.tolist()
    for mine, their in ((packed.sorted_indices, ref.sorted_indices), (packed.unsorted_indices, ref.unsorted_indices)):
        assert (mine is None and their is None) or mine.tolist() == their.tolist()
    padded, out_lengths = rnn.pad_packed_sequence(packed, batch_first, 0.5, total_length=6)
    ref_padded, ref_lengths = torch.nn.utils.rnn.pad_packed_sequence(ref, batch_first, 0.5, total_length=6)
    assert_close(padded, ref_padded.detach().numpy())
    assert out_lengths.tolist() == ref_lengths.tolist()
    weights = RNG.standard_normal(ref_padded.shape)
    (padded * tensor.tensor(weights)).sum().backward()
    (ref_padded * torch.tensor(weights)).sum().backward()
    assert_close(ours[0].grad, theirs[0].grad.numpy())


def test_pack_sequence_unpack_and_unpad_round_trip(torch):
    ours = [tensor.tensor(s) for s in SEQS]
    packed = rnn.pack_sequence(ours, enforce_sorted=False)
    ref = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in SEQS], enforce_sorted=False)
    assert_close(packed.data, ref.data.numpy())
    for mine, original in zip(rnn.unpack_sequence(packed), SEQS):
        assert_close(mine, original)
    padded = rnn.pad_sequence(ours, batch_first=True)
    for mine, original in zip(rnn.unpad_sequence(padded, [len(s) for s in SEQS], batch_first=True), SEQS):
        assert_close(mine, original)


def test_errors():
    x = tensor.zeros(4, 2, 3)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn.pack_padded_sequence(x, [2, 4])
    with pytest.raises(RuntimeError, match="has to be greater than 0"):
        rnn.pack_padded_sequence(x, [3, 0])
    packed = rnn.pack_padded_sequence(x, [4, 2])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        rnn.pad_packed_sequence(packed, total_length=3)
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right"):
        rnn.pad_sequence([x[0]], padding_side="middle")


def test_packed_sequence_casts():
    packed = rnn.pack_sequence([tensor.ones(2), tensor.ones(1)])
    for method, dtype in (("double", tensor.float64), ("float", tensor.float32), ("half", tensor.float16),
                          ("long", tensor.int64), ("int", tensor.int32), ("short", tensor.int16),
                          ("char", tensor.int8), ("byte", tensor.uint8)):
        cast = getattr(packed, method)()
        assert cast.data.dtype == dtype and cast.batch_sizes.tolist() == [2, 1]


def test_pad_sequence_errors_and_dtype_as_torch():
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        rnn.pad_sequence([])
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        rnn.pack_sequence([])
    with pytest.raises(RuntimeError, match="0-d"):
        rnn.pad_sequence([tensor.tensor(1.0), tensor.tensor(2.0)])
    mixed = rnn.pad_sequence([tensor.ones(2), tensor.ones(1, dtype=tensor.float64)])
    assert mixed.dtype == tensor.float32  # the first sequence's dtype, as torch


def test_packed_sequence_fills_unsorted_indices_like_torch(torch):
    data = np.arange(6.0).reshape(6, 1)
    ours = rnn.PackedSequence(tensor.tensor(data), tensor.tensor([3, 2, 1]), tensor.tensor([2, 0, 1]))
    theirs = torch.nn.utils.rnn.PackedSequence(torch.tensor(data), torch.tensor([3, 2, 1]), torch.tensor([2, 0, 1]))
    np.testing.assert_array_equal(ours.unsorted_indices.numpy(), theirs.unsorted_indices.numpy())
    padded, lengths = rnn.pad_packed_sequence(ours)
    np.testing.assert_array_equal(lengths.numpy(), torch.nn.utils.rnn.pad_packed_sequence(theirs)[1].numpy())
    assert rnn.PackedSequence((ours.data, ours.batch_sizes)).batch_sizes is ours.batch_sizes
    with pytest.raises(AssertionError):
        rnn.PackedSequence(ours.data)
