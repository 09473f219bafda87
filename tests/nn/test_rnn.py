"""Recurrent layers (RNN, LSTM, GRU and their cells) against torch, gradcheck, init and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nn
import tensor
from autograd import gradcheck, gradgradcheck
from tests.helpers import assert_close, to_numpy


def _copy_from_torch(ours, theirs, device):
    """Load torch's state_dict into our module (checking names and order match)."""
    state = {k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict())
    ours.load_state_dict(state)
    ours.to(device)


def _flatten_outputs(out):
    """(output, h) or (output, (h, c)) -> list of tensors."""
    output, hidden = out
    return [output, *(hidden if isinstance(hidden, tuple) else (hidden,))]


def _compare_with_torch(torch, device, ours, theirs, arrays, rtol=1e-5, atol=1e-5):
    """Run both on the same inputs (arrays[0] input, rest the hidden state); compare outputs and grads."""
    _copy_from_torch(ours, theirs, device)
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [tensor.tensor(a, device=device, requires_grad=True) for a in arrays]

    def call(module, xs):
        if len(xs) == 1:
            return module(xs[0])
        hidden = xs[1] if len(xs) == 2 else (xs[1], xs[2])
        return module(xs[0], hidden)

    t_out, o_out = _flatten_outputs(call(theirs, t_in)), _flatten_outputs(call(ours, o_in))
    rng = np.random.default_rng(1)
    t_loss = o_loss = 0
    for t, o in zip(t_out, o_out):
        assert_close(o, t.detach().numpy(), rtol=rtol, atol=atol)
        w = rng.standard_normal(t.shape).astype(np.float32)
        t_loss = t_loss + (t * torch.tensor(w)).sum()
        o_loss = o_loss + (o * tensor.tensor(w, device=device)).sum()
    t_loss.backward()
    o_loss.backward()
    for t, o in zip(t_in, o_in):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, q in zip(theirs.parameters(), ours.parameters()):
        assert_close(q.grad, p.grad.numpy(), rtol=1e-4, atol=1e-5)


def _randn(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)


# (class, constructor kwargs, input shape, with initial hidden state)
SEQUENCE_CASES = [
    ("RNN", {}, (5, 3, 4), False),
    ("RNN", {"nonlinearity": "relu"}, (5, 3, 4), True),
    ("RNN", {"num_layers": 2, "bidirectional": True, "bias": False}, (4, 2, 4), True),
    ("LSTM", {}, (5, 3, 4), False),
    ("LSTM", {}, (5, 3, 4), True),
    ("LSTM", {"num_layers": 2}, (5, 3, 4), True),
    ("LSTM", {"bidirectional": True, "batch_first": True}, (3, 5, 4), True),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "batch_first": True}, (2, 6, 4), False),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True}, (4, 2, 4), True),
    ("LSTM", {"bias": False}, (1, 2, 4), False),
    ("GRU", {}, (5, 3, 4), False),
    ("GRU", {}, (5, 3, 4), True),
    ("GRU", {"num_layers": 2, "bidirectional": True}, (4, 2, 4), True),
    ("GRU", {"batch_first": True, "num_layers": 2, "bias": False}, (3, 4, 4), False),
    # unbatched (2-D) input
    ("RNN", {"bidirectional": True}, (5, 4), True),
    ("LSTM", {"num_layers": 2}, (5, 4), True),
    ("GRU", {"batch_first": True}, (5, 4), False),
]


def _hidden_arrays(cls, kwargs, shape):
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    batch = () if len(shape) == 2 else (shape[0] if kwargs.get("batch_first") else shape[1],)
    h_size = kwargs.get("proj_size") or 5
    hs = [_randn(layers, *batch, h_size)]
    if cls == "LSTM":
        hs.append(_randn(layers, *batch, 5) * 0.5)
    return hs


@pytest.mark.parametrize("cls, kwargs, shape, with_hidden", SEQUENCE_CASES)
def test_sequence_layer_matches_torch(torch, device, cls, kwargs, shape, with_hidden):
    theirs = getattr(torch.nn, cls)(4, 5, **kwargs)
    ours = getattr(nn, cls)(4, 5, **kwargs)
    arrays = [_randn(*shape)] + (_hidden_arrays(cls, kwargs, shape) if with_hidden else [])
    _compare_with_torch(torch, device, ours, theirs, arrays)


def test_parameter_names_and_shapes_match_torch(torch):
    for cls, kwargs in [("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
                        ("GRU", {"num_layers": 3}), ("RNN", {"bidirectional": True, "bias": False})]:
        theirs = dict(getattr(torch.nn, cls)(4, 5, **kwargs).named_parameters())
        ours = dict(getattr(nn, cls)(4, 5, **kwargs).named_parameters())
        assert list(ours) == list(theirs)
        assert [tuple(p.shape) for p in ours.values()] == [tuple(p.shape) for p in theirs.values()]


def test_non_contiguous_input_matches_torch(torch, device):
    theirs, ours = torch.nn.GRU(4, 5, num_layers=2), nn.GRU(4, 5, num_layers=2)
    _copy_from_torch(ours, theirs, device)
    x = _randn(3, 6, 4)  # (batch, time, feature), fed transposed to (time, batch, feature)
    t_out, t_h = theirs(torch.tensor(x).transpose(0, 1))
    source = tensor.tensor(x, device=device)
    transposed = source.transpose(0, 1)
    assert not transposed.is_contiguous()
    o_out, o_h = ours(transposed)
    assert_close(o_out, t_out.detach().numpy(), atol=1e-5)
    assert_close(o_h, t_h.detach().numpy(), atol=1e-5)


def test_empty_batch_gives_empty_outputs(device):
    out, (h, c) = nn.LSTM(2, 3, num_layers=2).to(device)(tensor.randn(4, 0, 2, device=device))
    assert (out.shape, h.shape, c.shape) == ((4, 0, 3), (2, 0, 3), (2, 0, 3))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_dropout_is_inactive_in_eval_mode(torch, device, cls):
    theirs = getattr(torch.nn, cls)(4, 5, num_layers=2, dropout=0.5).eval()
    ours = getattr(nn, cls)(4, 5, num_layers=2, dropout=0.5).eval()
    _compare_with_torch(torch, device, ours, theirs, [_randn(5, 3, 4)])


def test_dropout_between_layers_in_training(device):
    """With p=1 the second layer sees zeros: the output no longer depends on the input."""
    model = nn.LSTM(4, 5, num_layers=2, dropout=1.0).to(device)
    out_a, (h_a, _) = model(tensor.randn(3, 2, 4, device=device))
    out_b, (h_b, _) = model(tensor.randn(3, 2, 4, device=device))
    assert_close(out_a, out_b)
    assert_close(h_a[1], h_b[1])
    assert not np.allclose(to_numpy(h_a[0]), to_numpy(h_b[0]))
    model.eval()
    out_c, _ = model(tensor.randn(3, 2, 4, device=device))
    assert not np.allclose(to_numpy(out_a), to_numpy(out_c))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_default_init_is_uniform_within_one_over_sqrt_hidden(cls):
    model = getattr(nn, cls)(30, 64, num_layers=2, bidirectional=True)
    bound = 1 / math.sqrt(64)
    values = np.concatenate([to_numpy(p).ravel() for p in model.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(values.mean()) < 0.02 * bound


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_gradcheck_and_gradgradcheck_float64(cls):
    model = getattr(nn, cls)(2, 3, bidirectional=True).double()
    x = tensor.randn(3, 2, 2, dtype=tensor.float64, requires_grad=True)
    weight_ih, weight_hh = model.weight_ih_l0, model.weight_hh_l0_reverse

    def run(x, *_params):  # the parameters are perturbed in place by gradcheck
        out, hidden = model(x)
        return out, (hidden[1] if isinstance(hidden, tuple) else hidden)

    assert gradcheck(run, (x, weight_ih, weight_hh))
    assert gradgradcheck(lambda x, w: run(x, w)[0], (x, weight_hh))


# ---------------------------------------------------------------- cells

CELL_CASES = [
    ("RNNCell", {}, (3, 4), True),
    ("RNNCell", {"nonlinearity": "relu", "bias": False}, (3, 4), False),
    ("LSTMCell", {}, (3, 4), True),
    ("LSTMCell", {}, (3, 4), False),
    ("GRUCell", {}, (3, 4), True),
    ("GRUCell", {"bias": False}, (4,), True),
    ("LSTMCell", {}, (4,), True),
]


@pytest.mark.parametrize("cls, kwargs, shape, with_hidden", CELL_CASES)
def test_cell_matches_torch(torch, device, cls, kwargs, shape, with_hidden):
    theirs, ours = getattr(torch.nn, cls)(4, 5, **kwargs), getattr(nn, cls)(4, 5, **kwargs)
    _copy_from_torch(ours, theirs, device)
    arrays = [_randn(*shape)]
    if with_hidden:
        arrays += [_randn(*shape[:-1], 5) for _ in range(2 if cls == "LSTMCell" else 1)]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_in = [tensor.tensor(a, device=device, requires_grad=True) for a in arrays]

    def hidden(xs):
        return None if len(xs) == 1 else xs[1] if len(xs) == 2 else (xs[1], xs[2])

    t_out, o_out = theirs(t_in[0], hidden(t_in)), ours(o_in[0], hidden(o_in))
    t_out = t_out if isinstance(t_out, tuple) else (t_out,)
    o_out = o_out if isinstance(o_out, tuple) else (o_out,)
    for t, o in zip(t_out, o_out):
        assert_close(o, t.detach().numpy(), atol=1e-5)
    sum(t.sum() * (i + 1) for i, t in enumerate(t_out)).backward()
    sum(o.sum() * (i + 1) for i, o in enumerate(o_out)).backward()
    for t, o in zip(t_in, o_in):
        assert_close(o.grad, t.grad.numpy(), rtol=1e-4, atol=1e-5)
    for p, q in zip(theirs.parameters(), ours.parameters()):
        assert_close(q.grad, p.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_cells_step_like_the_sequence_layer(device):
    lstm = nn.LSTM(4, 5).to(device)
    cell = nn.LSTMCell(4, 5).to(device)
    cell.load_state_dict({k[:-3]: v for k, v in lstm.state_dict().items()})
    x = tensor.randn(6, 2, 4, device=device)
    out, (h_n, c_n) = lstm(x)
    h = c = None
    for t in range(6):
        h, c = cell(x[t], None if h is None else (h, c))
        assert_close(h, out[t], atol=1e-6)
    assert_close(c, c_n[0], atol=1e-6)


# ---------------------------------------------------------------- repr and errors

@pytest.mark.parametrize("cls, args, kwargs", [
    ("LSTM", (2, 3), {"num_layers": 2, "dropout": 0.5}),
    ("GRU", (2, 3), {"bias": False, "batch_first": True, "bidirectional": True}),
    ("RNN", (2, 3), {"nonlinearity": "relu"}),
    ("LSTM", (2, 3), {"proj_size": 1}),
    ("RNNCell", (2, 3), {"nonlinearity": "relu", "bias": False}),
    ("GRUCell", (2, 3), {}),
])
def test_repr_matches_torch(torch, cls, args, kwargs):
    assert repr(getattr(nn, cls)(*args, **kwargs)) == repr(getattr(torch.nn, cls)(*args, **kwargs))


@pytest.mark.parametrize("make, error, message", [
    (lambda: nn.RNN(4, 5, nonlinearity="sigmoid"), ValueError, "Unknown nonlinearity 'sigmoid'"),
    (lambda: nn.GRU(4, 5, proj_size=2), ValueError, "proj_size argument is only supported for LSTM"),
    (lambda: nn.LSTM(4, 5, proj_size=5), ValueError, "proj_size has to be smaller than hidden_size"),
    (lambda: nn.LSTM(4, 5, dropout=1.5), ValueError, "dropout should be a number in range"),
    (lambda: nn.LSTM(0, 5), ValueError, "input_size must be greater than zero"),
    (lambda: nn.GRU(4, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.RNN(4, 5, num_layers=0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.LSTM(4.0, 5), TypeError, "input_size should be of type int, got: float"),
    (lambda: nn.LSTM(4, 5, bias=1), TypeError, "bias should be of type bool, got: int"),
    (lambda: nn.RNNCell(4, 5, nonlinearity="gelu"), ValueError, "Unknown nonlinearity: gelu"),
])
def test_constructor_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(4, 5, dropout=0.2)


@pytest.mark.parametrize("call, error, message", [
    (lambda m: m(tensor.randn(2, 3, 4, 4)), ValueError, r"LSTM: Expected input to be 2D or 3D, got 4D instead"),
    (lambda m: m(tensor.randn(5, 3, 6)), RuntimeError,
     r"input.size\(-1\) must be equal to input_size. Expected 4, got 6"),
    (lambda m: m(tensor.randn(0, 3, 4)), RuntimeError, "Expected sequence length to be larger than 0"),
    (lambda m: m(tensor.randn(5, 3, 4, dtype=tensor.float64)), ValueError,
     r"RNN input dtype \(tensor.float64\) does not match weight dtype \(tensor.float32\)"),
    (lambda m: m(tensor.randn(5, 3, 4), (tensor.zeros(1, 2, 5), tensor.zeros(1, 3, 5))), RuntimeError,
     r"Expected hidden\[0\] size \(1, 3, 5\), got \[1, 2, 5\]"),
    (lambda m: m(tensor.randn(5, 3, 4), (tensor.zeros(1, 3, 5), tensor.zeros(2, 3, 5))), RuntimeError,
     r"Expected hidden\[1\] size \(1, 3, 5\), got \[2, 3, 5\]"),
    (lambda m: m(tensor.randn(5, 4), (tensor.zeros(1, 1, 5), tensor.zeros(1, 1, 5))), RuntimeError,
     r"For unbatched 2-D input, hx and cx should also be 2-D but got \(3-D, 3-D\) tensors"),
])
def test_lstm_forward_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.LSTM(4, 5))


@pytest.mark.parametrize("call, error, message", [
    (lambda m: m(tensor.randn(5)), ValueError, "GRU: Expected input to be 2D or 3D, got 1D instead"),
    (lambda m: m(tensor.randn(5, 3, 4), tensor.zeros(2, 3, 5)), RuntimeError,
     r"Expected hidden size \(1, 3, 5\), got \[2, 3, 5\]"),
    (lambda m: m(tensor.randn(5, 3, 4), tensor.zeros(3, 5)), RuntimeError,
     "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
])
def test_gru_forward_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.GRU(4, 5))


@pytest.mark.parametrize("make, call, error, message", [
    (lambda: nn.RNNCell(4, 5), lambda m: m(tensor.randn(2, 3, 4)), ValueError,
     "RNNCell: Expected input to be 1D or 2D, got 3D instead"),
    (lambda: nn.GRUCell(4, 5), lambda m: m(tensor.randn(3, 4), tensor.zeros(1, 3, 5)), ValueError,
     "GRUCell: Expected hidden to be 1D or 2D, got 3D instead"),
    (lambda: nn.LSTMCell(4, 5), lambda m: m(tensor.randn(3, 6)), RuntimeError,
     "input has inconsistent input_size: got 6 expected 4"),
    (lambda: nn.LSTMCell(4, 5), lambda m: m(tensor.randn(3, 4), (tensor.zeros(3, 5), tensor.zeros(2, 5))),
     RuntimeError, r"Expected hidden size \(3, 5\), got \[2, 5\]"),
])
def test_cell_forward_errors(make, call, error, message):
    with pytest.raises(error, match=message):
        call(make())


@pytest.mark.parametrize("make, hidden", [
    (lambda: nn.GRU(3, 4), lambda: tensor.zeros(1, 1, 4, dtype=tensor.float64)),
    (lambda: nn.RNN(3, 4), lambda: tensor.zeros(1, 1, 4, dtype=tensor.float64)),
    (lambda: nn.LSTM(3, 4), lambda: (tensor.zeros(1, 1, 4), tensor.zeros(1, 1, 4, dtype=tensor.float64))),
])
def test_a_hidden_state_of_another_dtype_is_refused(make, hidden):
    with pytest.raises(RuntimeError, match="hidden state of the weights' dtype"):
        make()(tensor.ones(2, 1, 3), hidden())
