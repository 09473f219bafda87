"""The fused LSTM/GRU cell ops (Note [Fused cells]): values against torch, float64 gradcheck
and double backward, the array backward against the Tensor-op one, one node per step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import autograd
import tensor
from autograd import gradcheck, gradgradcheck
from tensor import _dispatch, _threads
from tensor.ops import recurrent, recurrent_layers
from tests.helpers import assert_close

ROOT = Path(__file__).resolve().parents[2]
_CELLS = {"lstm": (recurrent.lstm_cell, 4), "gru": (recurrent.gru_cell, 3)}


def _inputs(kind: str, batch: int = 3, hidden: int = 5, dtype=tensor.float64):
    rng = np.random.default_rng(0)
    gates = _CELLS[kind][1] * hidden
    arrays = [
        rng.standard_normal((batch, gates)),
        rng.standard_normal((batch, gates)),
        rng.standard_normal((batch, hidden)),
    ]
    return [tensor.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]


def _outputs(kind, xg, hg, state):
    fn = _CELLS[kind][0]
    out = fn(xg, hg, state)
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_gradcheck_and_double_backward(kind):
    inputs = _inputs(kind)
    assert gradcheck(lambda *a: _outputs(kind, *a), inputs)
    assert gradgradcheck(lambda *a: _outputs(kind, *a), inputs)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_array_backward_matches_the_tensor_op_backward(kind):
    # Weights on every block of the packed output, the gate blocks too (as double backward
    # sends them): the array kernel must agree with the differentiable formula on all of them.
    xg, hg, state = _inputs(kind)
    op = recurrent._lstm_cell if kind == "lstm" else recurrent._gru_cell
    packed = _dispatch.apply(op, (xg, hg, state))
    weights = tensor.tensor(np.random.default_rng(1).standard_normal(packed.shape))
    fast = autograd.grad((packed * weights).sum(), [xg, hg, state], retain_graph=True)
    slow = autograd.grad((packed * weights).sum(), [xg, hg, state], create_graph=True)
    for a, b in zip(fast, slow):
        assert_close(a, b.detach(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_values_and_grads_match_torch(torch, kind):
    xg, hg, state = _inputs(kind, dtype=tensor.float32)
    theirs = [torch.tensor(t.detach().numpy(), requires_grad=True) for t in (xg, hg, state)]
    ours_out = _outputs(kind, xg, hg, state)
    t_out = _torch_lstm(torch, *theirs) if kind == "lstm" else (_torch_gru(torch, *theirs),)
    for ours, t in zip(ours_out, t_out):
        assert_close(ours, t.detach().numpy(), rtol=1e-5, atol=1e-6)
    sum(o.sum() * (k + 1) for k, o in enumerate(ours_out)).backward()
    sum(o.sum() * (k + 1) for k, o in enumerate(t_out)).backward()
    for ours, t in zip((xg, hg, state), theirs):
        assert_close(ours.grad, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def _torch_lstm(torch, xg, hg, c):
    i, f, g, o = (xg + hg).chunk(4, 1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def _torch_gru(torch, xg, hg, h):
    xr, xz, xn = xg.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
    n = torch.tanh(xn + r * hn)
    return (1 - z) * n + z * h


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_one_node_per_step(kind):
    xg, hg, state = _inputs(kind)
    out = _outputs(kind, xg, hg, state)[0]
    cell = out.grad_fn.next_edges[0][0]  # h is a view of the cell's packed output
    assert cell.name() == ("LstmCellBackward0" if kind == "lstm" else "GruCellBackward0")
    assert [e[0] for e in cell.next_edges] == [xg, hg, state]


# The layer ops (Note [Fused layers]): each against its cell op stepped in Python.
_LAYERS = {  # the function, its op, the gates and the op's params before ``reverse``
    "lstm": (recurrent_layers.lstm_layer, recurrent_layers._lstm_layer, 4, ()),
    "lstm_proj": (  # proj_size 1 < hidden 2: the projection w_hr is the last input
        lambda *a, reverse: recurrent_layers.lstm_layer(*a[:4], reverse, w_hr=a[4]),
        recurrent_layers._lstm_proj_layer,
        4,
        (),
    ),
    "gru": (recurrent_layers.gru_layer, recurrent_layers._gru_layer, 3, ()),
    "tanh": (recurrent_layers.rnn_layer, recurrent_layers._rnn_layer, 1, ("tanh",)),
    "relu": (recurrent_layers.rnn_layer, recurrent_layers._rnn_layer, 1, ("relu",)),
}
_KINDS = list(_LAYERS)


def _layer_inputs(kind: str, steps: int = 3, batch: int = 2, hidden: int = 2):
    rng = np.random.default_rng(2)
    gates = _LAYERS[kind][2] * hidden
    shapes = [(steps, batch, gates), (batch, 1 if kind == "lstm_proj" else hidden)]
    shapes += {
        "lstm": [(batch, hidden), (gates, hidden)],
        "lstm_proj": [(batch, hidden), (gates, 1), (1, hidden)],
        "gru": [(gates, hidden), (gates,)],
    }.get(kind, [(hidden, hidden)])
    return [tensor.tensor(rng.standard_normal(s) * 0.5, dtype=tensor.float64, requires_grad=True) for s in shapes]


def _layer(kind: str, inputs, reverse: bool) -> tuple:
    fn, _, _, params = _LAYERS[kind]
    return fn(*inputs, *params, reverse=reverse)


def _stepped(kind: str, inputs, reverse: bool) -> list:
    """The layer's outputs from its cell op (or Tensor ops for the Elman RNN), stepped in Python."""
    xg, h = inputs[:2]
    lstm = kind.startswith("lstm")
    c = inputs[2] if lstm else None
    steps = [None] * xg.shape[0]
    for t in range(xg.shape[0] - 1, -1, -1) if reverse else range(xg.shape[0]):
        if lstm:
            h, c = recurrent.lstm_cell(xg[t], h @ inputs[3].T, c)
            h = h @ inputs[4].T if kind == "lstm_proj" else h
        elif kind == "gru":
            h = recurrent.gru_cell(xg[t], h @ inputs[2].T + inputs[3], h)
        else:
            pre = xg[t] + h @ inputs[2].T
            h = pre.tanh() if kind == "tanh" else pre.relu()
        steps[t] = h
    return [tensor.stack(steps), h] + ([c] if lstm else [])


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_layer_gradcheck(kind, reverse):
    inputs = _layer_inputs(kind)
    assert gradcheck(lambda *a: _layer(kind, a, reverse), inputs)


@pytest.mark.slow  # 3-12 s each: the packed outputs are large for a numerical second derivative
@pytest.mark.parametrize(  # the projected LSTM one way only: it shares the plain LSTM's code
    "kind, reverse", [(kind, reverse) for kind in _KINDS for reverse in (False, True) if kind != "lstm_proj" or reverse]
)
def test_layer_double_backward(kind, reverse):
    inputs = _layer_inputs(kind)
    assert gradgradcheck(lambda *a: _layer(kind, a, reverse), inputs)


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_layer_matches_its_steps(kind, reverse):
    # The layer op against the cell op stepped in Python, forward and backward.
    inputs = _layer_inputs(kind)
    ours, expected = _layer(kind, inputs, reverse), _stepped(kind, inputs, reverse)
    weights = [tensor.tensor(np.random.default_rng(k).standard_normal(t.shape)) for k, t in enumerate(expected)]
    ours_grads = autograd.grad(sum((o * w).sum() for o, w in zip(ours, weights)), inputs)
    their_grads = autograd.grad(sum((o * w).sum() for o, w in zip(expected, weights)), inputs)
    for a, b in zip(list(ours) + list(ours_grads), expected + list(their_grads)):
        assert_close(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("reverse", [False, True])
def test_layer_array_backward_matches_the_tensor_op_backward(kind, reverse):
    # Weights on every block of the packed output, as double backward sends them.
    inputs = _layer_inputs(kind)
    out = _dispatch.apply(_LAYERS[kind][1], tuple(inputs), (*_LAYERS[kind][3], reverse))
    weights = tensor.tensor(np.random.default_rng(3).standard_normal(out.shape))
    fast = autograd.grad((out * weights).sum(), inputs, retain_graph=True)
    slow = autograd.grad((out * weights).sum(), inputs, create_graph=True)
    for a, b in zip(fast, slow):
        assert_close(a, b.detach(), rtol=1e-10, atol=1e-12)


def test_one_node_per_layer():
    inputs = _layer_inputs("gru")
    out, h_n = recurrent_layers.gru_layer(*inputs)
    layer = h_n.grad_fn.next_edges[0][0]
    assert layer.name() == "GruLayerBackward0"
    assert [e[0] for e in layer.next_edges] == inputs


def _float32_lstm_arrays(proj: bool, steps: int = 4, batch: int = 3, hidden: int = 5) -> list:
    rng = np.random.default_rng(4)
    size = 2 if proj else hidden
    shapes = [(steps, batch, 4 * hidden), (batch, size), (batch, hidden), (4 * hidden, size)]
    shapes += [(size, hidden)] if proj else []
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize(
    "reverse, proj, batch, hidden", [(False, False, 9, 9), (True, True, 34, 5), (False, True, 16, 9)]
)
def test_compiled_lstm_steps_match_the_numpy_composition(monkeypatch, reverse, proj, batch, hidden):
    # Note [Compiled LSTM steps]: the numba kernels against the numpy definition, forward and
    # the array backward with weights on every block of the packed output; the kernels run on
    # two threads, over two blocks of batch rows (Note [Batch halves]). Blocks of 4-5 and 8 rows
    # take panel_matmul's register tiles, of 17 rows OpenBLAS (Note [Recurrent products]).
    pytest.importorskip("numba")
    arrays = _float32_lstm_arrays(proj, batch=batch, hidden=hidden)
    forward = recurrent_layers._lstm_proj_layer if proj else recurrent_layers._lstm_layer
    backward = recurrent_layers._lstm_proj_layer_backward if proj else recurrent_layers._lstm_layer_backward
    assert recurrent_layers._compiled_steps(*arrays) is not None
    assert recurrent_layers._compiled_steps(*(a.astype(np.float64) for a in arrays)) is None
    weights = np.random.default_rng(5).standard_normal((4, 8 if proj else 7, batch, hidden)).astype(np.float32)
    blocks, parallel_for = [], _threads.parallel_for

    def recorded(size, work, body):
        parallel_for(size, work, lambda rows: (blocks.append((rows.start, rows.stop)), body(rows)))

    monkeypatch.setattr(_threads, "parallel_for", recorded)
    monkeypatch.setattr(_threads, "_MIN_SPLIT_ELEMENTS", 0)  # split even these small arrays

    def run():
        out = forward.kernel(np, *arrays, reverse)
        return out, backward.kernel(np, weights, out, *arrays[1:], reverse)

    results = _compiled_then_numpy(monkeypatch, arrays, run)
    half = batch // 2
    assert sorted(blocks) == [(0, half), (0, half), (half, batch), (half, batch)]  # forward and backward
    (out, grads), (expected_out, expected_grads) = results
    np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads, expected_grads, rtol=1e-4, atol=1e-5)


def _compiled_then_numpy(monkeypatch, arrays, run) -> list:
    """``[run(), run()]`` on two threads: with the compiled LSTM steps for ``arrays``, then with
    their numpy fallback."""
    results, threads = [], _threads.get_num_threads()
    for compiled in (True, False):
        monkeypatch.setattr(recurrent_layers, "COMPILED_STEPS", compiled)
        assert (recurrent_layers._compiled_steps(*arrays) is not None) == compiled
        _threads.set_num_threads(2)
        try:
            results.append(run())
        finally:
            _threads.set_num_threads(threads)
    return results


def test_compiled_lstm_input_layer_matches_the_numpy_composition(monkeypatch):
    # Note [Projection inside the layer]: each block of batch rows projects its own input and
    # makes its share of dx and of [dW_ih | dW_hh | db]; against the numpy composition (the
    # projection's matmul, then the layer), on two threads over blocks of 4-5, 7 and 8 rows
    # (panel_matmul: tiles of 8 (wide panels only), 4, 2 and 1 rows, hidden sizes past a multiple
    # of the panel width) and of 17 rows (OpenBLAS), with and without a projection, in both
    # directions, with and without dx.
    pytest.importorskip("numba")
    monkeypatch.setattr(_threads, "_MIN_SPLIT_ELEMENTS", 0)  # split even these small arrays
    rng = np.random.default_rng(6)
    cases = [
        (False, False, 9, 9, True),
        (True, True, 34, 5, False),
        (True, False, 16, 6, True),
        (False, True, 14, 7, True),
    ]
    for reverse, proj, batch, hidden, input_grad in cases:
        size = 2 if proj else hidden
        shapes = [(4, batch, 3), (4 * hidden, 3), (4 * hidden,), (batch, size), (batch, hidden), (4 * hidden, size)]
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes + ([(size, hidden)] if proj else [])]
        weights = rng.standard_normal((4, 8 if proj else 7, batch, hidden)).astype(np.float32)
        forward = recurrent_layers._lstm_input_proj_layer if proj else recurrent_layers._lstm_input_layer
        backward = (
            recurrent_layers._lstm_input_proj_layer_backward if proj else recurrent_layers._lstm_input_layer_backward
        )

        def run():
            out = forward.kernel(np, *arrays, reverse)
            saved = arrays[:2] + arrays[3:]
            return out, backward.kernel(np, weights, out, *saved, reverse, input_grad)

        results = _compiled_then_numpy(monkeypatch, arrays, run)
        (out, grads), (expected_out, expected_grads) = results
        np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-6)
        assert grads.size == expected_grads.size == sum(a.size for a in arrays) - (0 if input_grad else arrays[0].size)
        np.testing.assert_allclose(grads, expected_grads, rtol=1e-4, atol=1e-5)


def test_compiled_lstm_steps_refuse_shapes_that_do_not_fit():
    # The kernels index raw memory: a bad shape is a ValueError before they run, not a crash.
    pytest.importorskip("numba")
    xg, h0, c0, w_hh = (tensor.tensor(a) for a in _float32_lstm_arrays(proj=False))
    with pytest.raises(ValueError, match=r"w_hh \(20, 4\)"):
        recurrent_layers.lstm_layer(xg, h0, c0, w_hh[:, :4])


@pytest.mark.slow  # a fresh interpreter that imports numba: 2-5 s
def test_numba_loads_with_the_first_float32_lstm_layer_only():
    pytest.importorskip("numba")
    code = (
        "import sys, numpy as np, nn, tensor\n"
        "lstm = nn.LSTM(3, 4)\n"
        "lstm.double()(tensor.zeros(2, 1, 3, dtype=tensor.float64))\n"
        "assert 'numba' not in sys.modules, 'numba loaded before a float32 LSTM ran'\n"
        "lstm.float()(tensor.zeros(2, 1, 3))\n"
        "print('numba' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"
