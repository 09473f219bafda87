"""torch.lstm/gru/rnn_tanh/rnn_relu (both overloads) and their cells (tensor/_aten_rnn.py)
against torch: outputs, states and parameter gradients (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

import tensor

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/tensor/conftest.py

HIDDEN, FEATURES, BATCH, STEPS = 6, 5, 4, 3
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _params(rng, gates: int, layers: int, directions: int, bias: bool) -> list:
    out = []
    for layer in range(layers):
        for _ in range(directions):
            width = FEATURES if layer == 0 else HIDDEN * directions
            out += [
                rng.standard_normal((gates * HIDDEN, width)) * 0.3,
                rng.standard_normal((gates * HIDDEN, HIDDEN)) * 0.3,
            ]
            out += [rng.standard_normal(gates * HIDDEN) * 0.3 for _ in range(2 * bias)]
    return out


def _pair(value, device):
    """Ours (on ``device``) and torch's leaf tensors of the same float64 values."""
    import torch

    return tensor.tensor(value, device=device, requires_grad=True), torch.tensor(value, requires_grad=True)


def _states(rng, mode, shape, device):
    h = _pair(rng.standard_normal(shape), device)
    if mode != "lstm":
        return h
    c = _pair(rng.standard_normal(shape), device)
    return (h[0], c[0]), (h[1], c[1])


def _compare(ours, theirs, leaves) -> None:
    ours = ours if isinstance(ours, tuple) else (ours,)
    theirs = theirs if isinstance(theirs, tuple) else (theirs,)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(o.detach().cpu().numpy(), t.detach().numpy(), atol=1e-12)
    sum(o.sum() for o in ours).backward()
    sum(t.sum() for t in theirs).backward()
    for o, t in leaves:
        np.testing.assert_allclose(o.grad.cpu().numpy(), t.grad.numpy(), atol=1e-11)


@pytest.mark.parametrize("mode", list(GATES))
def test_layers_match_torch(torch, device, mode):
    rng = np.random.default_rng(0)
    for layers, bidirectional, bias, batch_first in (
        (1, False, True, False),
        (2, True, True, True),
        (2, False, False, False),
    ):
        directions = 2 if bidirectional else 1
        params = [_pair(p, device) for p in _params(rng, GATES[mode], layers, directions, bias)]
        x = _pair(rng.standard_normal((BATCH, STEPS, FEATURES) if batch_first else (STEPS, BATCH, FEATURES)), device)
        hx = _states(rng, mode, (layers * directions, BATCH, HIDDEN), device)
        args = (bias, layers, 0.0, True, bidirectional, batch_first)
        ours = getattr(tensor, mode)(x[0], hx[0], [p[0] for p in params], *args)
        theirs = getattr(torch, mode)(x[1], hx[1], [p[1] for p in params], *args)
        _compare(ours, theirs, params + [x])
    # the packed overload: (data, batch_sizes, hx, params, ...), sequences of lengths 3, 2, 2, 1
    params = [_pair(p, device) for p in _params(rng, GATES[mode], 1, 1, True)]
    data, sizes = _pair(rng.standard_normal((8, FEATURES)), device), [4, 3, 1]
    hx = _states(rng, mode, (1, BATCH, HIDDEN), device)
    ours = getattr(tensor, mode)(
        data[0], tensor.tensor(sizes), hx[0], [p[0] for p in params], True, 1, 0.0, True, False
    )
    theirs = getattr(torch, mode)(
        data[1], torch.tensor(sizes), hx[1], [p[1] for p in params], True, 1, 0.0, True, False
    )
    _compare(ours, theirs, params + [data])


def test_lstm_with_projections_matches_torch(torch, device):
    """h (proj_size 3) narrower than c (hidden 6): a w_hr (3, 6) follows each layer's parameters."""
    rng = np.random.default_rng(3)
    proj = 3
    for bias in (True, False):
        params = []
        for layer in range(2):
            for _ in range(2):  # bidirectional
                width = FEATURES if layer == 0 else 2 * proj
                params += [
                    rng.standard_normal((4 * HIDDEN, width)) * 0.3,
                    rng.standard_normal((4 * HIDDEN, proj)) * 0.3,
                ]
                params += [rng.standard_normal(4 * HIDDEN) * 0.3 for _ in range(2 * bias)]
                params.append(rng.standard_normal((proj, HIDDEN)) * 0.3)
        params = [_pair(p, device) for p in params]
        x = _pair(rng.standard_normal((STEPS, BATCH, FEATURES)), device)
        h, c = (
            _pair(rng.standard_normal((4, BATCH, proj)), device),
            _pair(rng.standard_normal((4, BATCH, HIDDEN)), device),
        )
        args = (bias, 2, 0.0, True, True, False)
        ours = tensor.lstm(x[0], (h[0], c[0]), [p[0] for p in params], *args)
        theirs = torch.lstm(x[1], (h[1], c[1]), [p[1] for p in params], *args)
        _compare(ours, theirs, params + [x, h, c])


def test_cells_match_torch(torch, device):
    rng = np.random.default_rng(1)
    for name, gates in (("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1)):
        x = _pair(rng.standard_normal((BATCH, FEATURES)), device)
        hx = _states(rng, "lstm" if name == "lstm_cell" else name, (BATCH, HIDDEN), device)
        for bias in (True, False):
            params = [_pair(p, device) for p in _params(rng, gates, 1, 1, bias)]
            ours = getattr(tensor, name)(x[0], hx[0], *[p[0] for p in params])
            theirs = getattr(torch, name)(x[1], hx[1], *[p[1] for p in params])
            _compare(ours, theirs, params + [x])


def test_dropout_between_layers_and_errors():
    rng = np.random.default_rng(2)
    params = [tensor.tensor(p) for p in _params(rng, 3, 2, 1, True)]
    x, h0 = (
        tensor.tensor(rng.standard_normal((STEPS, BATCH, FEATURES))),
        tensor.zeros(2, BATCH, HIDDEN, dtype=tensor.float64),
    )
    plain = tensor.gru(x, h0, params, True, 2, 0.5, False, False, False)[0]  # not training: no dropout
    assert tensor.equal(plain, tensor.gru(x, h0, params, True, 2, 0.0, True, False, False)[0])
    assert not tensor.equal(plain, tensor.gru(x, h0, params, True, 2, 0.5, True, False, False)[0])
    with pytest.raises(RuntimeError, match="expected 8 parameters"):
        tensor.gru(x, h0, params[:-1], True, 2, 0.0, False, False, False)
    with pytest.raises(TypeError, match="expected 9 arguments"):
        tensor.gru(x, h0, params, True, 2, 0.0, False, False)
    with pytest.raises(RuntimeError, match="expected 2-D input"):
        tensor.gru_cell(x, h0[0], params[0], params[1])
