"""``nn.RNN``/``nn.LSTM``/``nn.GRU`` on a ``PackedSequence``: outputs, h_n/c_n and gradients as
torch's (unsorted lengths, both directions, two layers, batch_first, given or zero states,
LSTM projections)."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

LENGTHS = [3, 6, 1, 3, 5]


def _pair(torch, mode, **kwargs):
    theirs = getattr(torch.nn, mode)(3, 4, 2, **kwargs)
    ours = getattr(nn, mode)(3, 4, 2, **kwargs)
    ours.load_state_dict({k: tensor.from_numpy(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    return theirs, ours


@pytest.mark.parametrize(
    "mode, kwargs, given_state, enforce_sorted",
    [
        ("LSTM", {}, False, False),
        ("LSTM", {"bidirectional": True, "batch_first": True}, True, False),
        ("LSTM", {"bidirectional": True, "proj_size": 2}, True, True),
        ("GRU", {"bidirectional": True}, True, False),
        ("GRU", {}, False, True),
        ("RNN", {"batch_first": True, "nonlinearity": "relu", "bidirectional": True}, True, False),
    ],
)
def test_packed_input_matches_torch(torch, mode, kwargs, given_state, enforce_sorted):
    rng = np.random.default_rng(0)
    theirs, ours = _pair(torch, mode, **kwargs)
    batch_first = kwargs.get("batch_first", False)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    x = rng.standard_normal((5, 6, 3) if batch_first else (6, 5, 3)).astype(np.float32)
    layers = 4 if kwargs.get("bidirectional") else 2
    states = [rng.standard_normal((layers, 5, size)).astype(np.float32) for size in (kwargs.get("proj_size") or 4, 4)]
    states = states if mode == "LSTM" else states[:1]
    results = []
    for lib, module, pack, pad in (
        (torch, theirs, torch.nn.utils.rnn.pack_padded_sequence, torch.nn.utils.rnn.pad_packed_sequence),
        (tensor, ours, pack_padded_sequence, pad_packed_sequence),
    ):
        inp = lib.tensor(x, requires_grad=True)
        hx = [lib.tensor(s) for s in states]
        hx = (tuple(hx) if mode == "LSTM" else hx[0]) if given_state else None
        packed = pack(inp, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
        out, h_n = module(packed, hx)
        h_n = list(h_n) if mode == "LSTM" else [h_n]
        assert type(out).__name__ == "PackedSequence" and out.batch_sizes.tolist() == packed.batch_sizes.tolist()
        padded, out_lengths = pad(out, batch_first=batch_first)
        (padded.sum() + sum((h * h).sum() for h in h_n)).backward()
        grads = [inp.grad] + [p.grad for _, p in sorted(module.named_parameters())]
        results.append([t.detach().numpy() for t in [out.data, padded, out_lengths, *h_n, *grads]])
    for mine, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(mine, expected, rtol=1e-4, atol=1e-5)


def test_packed_input_checks_the_state_shape():
    lstm = nn.LSTM(3, 4)
    packed = pack_padded_sequence(tensor.zeros(6, 5, 3), LENGTHS, enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 5, 4\), got \[1, 4, 4\]"):
        lstm(packed, (tensor.zeros(1, 4, 4), tensor.zeros(1, 4, 4)))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        lstm(pack_padded_sequence(tensor.zeros(6, 5, 2), LENGTHS, enforce_sorted=False))
