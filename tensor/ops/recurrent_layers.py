"""Fused recurrent layers: a whole LSTM, GRU or Elman RNN layer and direction as one op.

Note [Fused layers]
~~~~~~~~~~~~~~~~~~~
As torch's CPU kernels do, ``lstm_layer``, ``gru_layer`` and ``rnn_layer`` run the recurrence
over all the time steps inside one op (one graph node per layer and direction), and their
backward runs through time over arrays. The input projections of every step come in as one tensor ``xg``
(one matrix product, made by the caller; ``nn.LSTM`` calls ``lstm_input_layer`` instead, which
makes them inside the op: Note [Projection inside the layer] in ``_lstm_numba.py``); the
recurrent weight's gradient is one product over all the steps after the loop. The kernels
write into buffers allocated once per call, and keep every block they work on contiguous: the
packed output is (steps, blocks, batch, hidden),

* ``lstm_layer``: blocks ``[h, c, i, f, o, g, tanh(c)]``;
* ``gru_layer``: blocks ``[h, r, z, n, hn]`` (``hn = W_hn h_prev + b_hn``);
* ``rnn_layer``: ``h`` alone, (steps, batch, hidden),

and the recurrent product of a step is one batched matmul with the weight laid out per gate,
(gates, hidden, hidden), so that its result lands gate by gate. Column blocks of a
(batch, gates * hidden) array instead cost numpy about 4x as much per elementwise op on issue
19's sizes (batch 16, hidden 128): the strided iteration's setup, not the arithmetic.

The derivative is written twice, as in Note [Fused cells]: with Tensor ops (the definition,
for double backward), reusing the step formulas ``lstm_grads``/``gru_grads``, and as one array
kernel (``*_backward``) for the ordinary backward. Both read the saved output, so nothing but
the states before each step is recomputed. On float32 host arrays the pointwise math of each
LSTM step, forward and backward, is one numba kernel instead (Note [Compiled LSTM steps] in
``_lstm_numba.py``); the numpy composition here stays the definition and the fallback.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os

import numpy as np

from .. import _autograd_hooks, _backend, _dispatch
from .join_split import cat, stack
from .recurrent import gru_grads, lstm_grads, sigmoid_
from .registry import defop
from .special import linear

__all__ = ["lstm_layer", "lstm_input_layer", "gru_layer", "rnn_layer", "over_packed_runs"]


def _order(steps: int, reverse: bool):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _states_before(cat_fn, seq, first, reverse: bool):
    """The state each step started from, (steps, batch, hidden), given the states after each
    step ``seq`` and the initial state ``first``; arrays (``cat_fn``: concatenate) or Tensors."""
    first = first[None]
    return cat_fn([seq[1:], first]) if reverse else cat_fn([first, seq[:-1]])


def _per_gate(xp, w_hh, gates: int, dtype):
    """``w_hh`` (gates * hidden, size) as (gates, size, hidden), each block transposed:
    ``h @ result`` is the recurrent projection, gate by gate."""
    return xp.ascontiguousarray(w_hh.reshape(gates, -1, w_hh.shape[1]).transpose(0, 2, 1), dtype=dtype)


def _by_gate(a, gates: int):
    """A (..., batch, gates * hidden) array as a (..., gates, batch, hidden) view."""
    *lead, batch, width = a.shape
    return a.reshape(*lead, batch, gates, width // gates).swapaxes(-3, -2)


def _split(flat, shapes) -> tuple:
    """Consecutive pieces of the 1-d ``flat`` (an array or a Tensor), with the given shapes: a
    backward kernel returns its gradients as one flat array."""
    parts, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        parts.append(flat[start : start + size].reshape(shape))
        start += size
    return tuple(parts)


def _flat_parts(xp, dtype, shapes) -> tuple:
    """A new flat buffer for gradients of the given shapes, and its ``_split`` views."""
    flat = xp.empty(sum(math.prod(s) for s in shapes), dtype)
    return flat, _split(flat, shapes)


# The numba step kernels of lstm_layer (Note [Compiled LSTM steps] in _lstm_numba.py): on unless
# TENSOR_RECURRENT_JIT=0; tests turn it off to run the numpy composition on float32 too.
COMPILED_STEPS = os.environ.get("TENSOR_RECURRENT_JIT", "1") != "0"


def _compiled_steps(*arrays):
    """The ``_lstm_numba`` module when its kernels apply to ``arrays`` (float32, on a device
    whose kernels numba compiles, numba installed, ``COMPILED_STEPS``); else None."""
    if not COMPILED_STEPS or any(a.dtype != np.float32 for a in arrays):
        return None
    if _backend.backend_for_array(arrays[0])[0].fused_codegen != "numba":
        return None
    if importlib.util.find_spec("numba") is None:
        return None
    module = importlib.import_module(f"{__package__}._lstm_numba")  # loads numba on first use
    return module if module.gemm() is not None else None


def _weight_grad(xp, dgates, h_before):
    """The recurrent weight's gradient: one product over all the steps."""
    width, hidden = dgates.shape[-1], h_before.shape[-1]
    return _backend.matmul(xp, dgates.reshape(-1, width).T, h_before.reshape(-1, hidden))


# ---------------------------------------------------------------- LSTM
# The packed output holds the gates as i, f, o, g (one sigmoid over three blocks); ``xg`` and
# ``w_hh`` hold them as i, f, g, o (PyTorch's order). _IFOG[k]: the xg gate of output gate k.
# With a projection ``w_hr`` (proj_size P < hidden), block 0 holds o * tanh(c) and an eighth
# block holds the projected state h = block 0 @ w_hr.T in its first P columns.
_IFOG = (0, 1, 3, 2)


def _lstm_forward(xp, xg, h0, c0, w_hh, w_hr, reverse):
    steps, batch = xg.shape[:2]
    hidden = c0.shape[1]
    weights = (w_hh,) if w_hr is None else (w_hh, w_hr)
    dtype = xp.result_type(xg, h0, c0, *weights)
    out = xp.empty((steps, 7 if w_hr is None else 8, batch, hidden), dtype)
    if w_hr is not None:
        out[:, 7] = 0  # the columns past proj_size stay 0
    compiled = _compiled_steps(xg, h0, c0, *weights)
    if compiled is not None:
        xg, h0, c0 = (xp.ascontiguousarray(a) for a in (xg, h0, c0))
        compiled.lstm_forward(out, xg, h0, c0, w_hh, w_hr, _order(steps, reverse))
        return out
    for k, gate in enumerate(_IFOG):
        out[:, 2 + k] = _by_gate(xg, 4)[:, gate]
    w_t = _per_gate(xp, w_hh, 4, dtype)[list(_IFOG)]
    hg = xp.empty((4, batch, hidden), dtype)
    ig = xp.empty((batch, hidden), dtype)
    h_prev, c_prev = h0.astype(dtype, copy=False), c0
    with np.errstate(over="ignore"):  # sigmoid_
        for t in _order(steps, reverse):
            h, c, i, f, o, g, tc = out[t, :7]
            out[t, 2:6] += xp.matmul(h_prev, w_t, out=hg)
            sigmoid_(xp, out[t, 2:5])  # i, f and o
            xp.tanh(g, out=g)
            xp.multiply(f, c_prev, out=c)
            c += xp.multiply(i, g, out=ig)
            xp.tanh(c, out=tc)
            xp.multiply(o, tc, out=h)
            if w_hr is not None:
                h = out[t, 7, :, : w_hr.shape[0]]
                h[...] = out[t, 0] @ w_hr.T
            h_prev, c_prev = h, c
    return out


@defop("lstm_layer", saves=(1, 2, 3), saves_output=True)
def _lstm_layer(xp, xg, h0, c0, w_hh, reverse):
    return _lstm_forward(xp, xg, h0, c0, w_hh, None, reverse)


@defop("lstm_proj_layer", saves=(1, 2, 3, 4), saves_output=True)
def _lstm_proj_layer(xp, xg, h0, c0, w_hh, w_hr, reverse):
    return _lstm_forward(xp, xg, h0, c0, w_hh, w_hr, reverse)


def _lstm_derivative(node, grad):
    h0, c0, w_hh, *w_hr = node.saved
    out = node.output
    (reverse,) = node.params
    if _autograd_hooks.grad_mode.enabled:
        return _lstm_layer_grads(grad, out, h0, c0, w_hh, w_hr[0] if w_hr else None, reverse)
    backward = _lstm_proj_layer_backward if w_hr else _lstm_layer_backward
    flat = _dispatch.apply(backward, (grad, out, *node.saved), (reverse,))
    return _split(flat, _lstm_grad_shapes(out.shape, *(tuple(t.shape) for t in node.saved)))


_lstm_layer.derivative(_lstm_derivative)
_lstm_proj_layer.derivative(_lstm_derivative)


def _lstm_grad_shapes(out_shape, h0_shape, c0_shape, *weight_shapes) -> list:
    steps, _, batch, hidden = out_shape
    return [(steps, batch, 4 * hidden), h0_shape, c0_shape, *weight_shapes]


def _projected(out, w_hr):
    """The layer's output sequence h (steps, batch, hidden or proj_size) in the packed ``out``."""
    return out[:, 0] if w_hr is None else out[:, 7, :, : w_hr.shape[0]]


def _lstm_layer_grads(grad, out, h0, c0, w_hh, w_hr, reverse):
    """The layer's derivative with Tensor ops (differentiable): gradients of xg, h0, c0, w_hh
    (and w_hr)."""
    steps, hidden = out.shape[0], c0.shape[1]
    c_before = _states_before(cat, out[:, 1], c0, reverse)
    dxg, dhr = [None] * steps, [None] * steps
    dh = dc = None
    for t in _order(steps, not reverse):
        gh, gc, gi, gf, go, gg, gtc = grad[t, :7].unbind(0)
        _, c, i, f, o, g, tc = out[t, :7].unbind(0)
        if w_hr is not None:  # the gradient of the projected h, then of o * tanh(c)
            dhr[t] = grad[t, 7, :, : w_hr.shape[0]] if dh is None else grad[t, 7, :, : w_hr.shape[0]] + dh
            gh = gh + dhr[t] @ w_hr
        elif dh is not None:
            gh = gh + dh
        if dc is not None:
            gc = gc + dc
        gc = gc + gtc * (1 - tc * tc)
        dgates, dc = lstm_grads(gh, gc, (gi, gf, gg, go), c_before[t], (i, f, g, o), tc)
        dxg[t] = cat(dgates, 1)
        dh = dxg[t] @ w_hh
    dxg = stack(dxg)
    h_before = _states_before(cat, _projected(out, w_hr), h0, reverse)
    grads = [dxg, dh, dc, dxg.reshape(-1, 4 * hidden).T @ h_before.reshape(-1, h0.shape[1])]
    if w_hr is not None:
        grads.append(stack(dhr).reshape(-1, w_hr.shape[0]).T @ out[:, 0].reshape(-1, hidden))
    return tuple(grads)


def _lstm_backward_arrays(xp, grad, out, h0, c0, w_hh, w_hr, reverse):
    """``_lstm_layer_grads`` on arrays: the gradients flattened one after another.

    Only what depends on the carried gradients of ``h`` and ``c`` runs step by step: with
    ``P`` the gates' derivatives, ``dgates = D0 + [dc * G, gh * tanh(c) * P_o]``, where
    ``D0 = grad_gates * P`` and ``G = [g, c_prev, i] * P_ifg`` are computed for all the
    steps at once, and ``dc = C0 + dc_next * f + gh * o * (1 - tanh(c)^2)``."""
    steps, _, batch, hidden = out.shape
    dtype = grad.dtype
    weights = (w_hh,) if w_hr is None else (w_hh, w_hr)
    shapes = _lstm_grad_shapes(out.shape, h0.shape, c0.shape, *(w.shape for w in weights))
    flat, (dxg, dh, dc, dw, *dw_hr) = _flat_parts(xp, dtype, shapes)
    h_before = _states_before(xp.concatenate, _projected(out, w_hr), h0, reverse)
    dhr = None if w_hr is None else xp.empty((steps, batch, w_hr.shape[0]), dtype)  # of the projected h
    compiled = _compiled_steps(grad, out, c0, *weights)
    if compiled is not None:
        grad, out, c0 = (xp.ascontiguousarray(a) for a in (grad, out, c0))
        compiled.lstm_backward(grad, out, c0, w_hh, w_hr, _order(steps, not reverse), dxg, dh, dc, dhr)
    else:
        _lstm_backward_steps(xp, grad, out, c0, w_hh, w_hr, reverse, dxg, dh, dc, dhr)
    dw[...] = _weight_grad(xp, dxg, h_before)
    if w_hr is not None:
        dw_hr[0][...] = _weight_grad(xp, dhr, out[:, 0])
    return flat


def _lstm_backward_steps(xp, grad, out, c0, w_hh, w_hr, reverse, dxg, dh, dc, dhr):
    """The numpy composition of ``_lstm_backward_arrays``'s loop (see its docstring)."""
    steps, _, batch, hidden = out.shape
    dtype = grad.dtype
    dxg_by_gate = _by_gate(dxg, 4)
    i, f, o, g, tc = (out[:, k] for k in range(2, 7))
    sig = out[:, 2:5]
    p_ifo = sig * (1 - sig)
    p_g = 1 - g * g
    p_tc = 1 - tc * tc
    d0 = xp.empty((steps, 4, batch, hidden), dtype)  # i, f, g, o, as xg
    xp.multiply(grad[:, 2:4], p_ifo[:, :2], out=d0[:, :2])
    xp.multiply(grad[:, 5], p_g, out=d0[:, 2])
    xp.multiply(grad[:, 4], p_ifo[:, 2], out=d0[:, 3])
    by_dc = xp.empty((steps, 3, batch, hidden), dtype)  # i, f, g
    xp.multiply(g, p_ifo[:, 0], out=by_dc[:, 0])
    xp.multiply(_states_before(xp.concatenate, out[:, 1], c0, reverse), p_ifo[:, 1], out=by_dc[:, 1])
    xp.multiply(i, p_g, out=by_dc[:, 2])
    o_by_gh = tc * p_ifo[:, 2]
    c_by_gh = o * p_tc
    c0_grad = grad[:, 1] + grad[:, 6] * p_tc
    d4 = xp.empty((4, batch, hidden), dtype)
    gh, tmp = xp.empty((batch, hidden), dtype), xp.empty((batch, hidden), dtype)
    dh[...] = 0
    dc[...] = 0
    for t in _order(steps, not reverse):
        if w_hr is None:
            xp.add(grad[t, 0], dh, out=gh)
        else:
            xp.add(grad[t, 7, :, : w_hr.shape[0]], dh, out=dhr[t])
            xp.add(grad[t, 0], xp.matmul(dhr[t], w_hr), out=gh)
        dc += c0_grad[t]
        dc += xp.multiply(gh, c_by_gh[t], out=tmp)
        xp.multiply(dc, by_dc[t], out=d4[:3])
        xp.multiply(gh, o_by_gh[t], out=d4[3])
        d4 += d0[t]
        dc *= f[t]
        dxg_by_gate[t] = d4
        xp.matmul(dxg[t], w_hh, out=dh)


@defop("lstm_layer_backward", differentiable=False)
def _lstm_layer_backward(xp, grad, out, h0, c0, w_hh, reverse):
    return _lstm_backward_arrays(xp, grad, out, h0, c0, w_hh, None, reverse)


@defop("lstm_proj_layer_backward", differentiable=False)
def _lstm_proj_layer_backward(xp, grad, out, h0, c0, w_hh, w_hr, reverse):
    return _lstm_backward_arrays(xp, grad, out, h0, c0, w_hh, w_hr, reverse)


def lstm_layer(xg, h0, c0, w_hh, reverse: bool = False, w_hr=None):
    """One LSTM layer and direction (Note [Fused layers]): ``(output, h_n, c_n)`` from the input
    projections of every step ``xg`` (steps, batch, 4 * hidden; biases included), the initial
    state ``h0`` (batch, hidden or proj_size), ``c0`` (batch, hidden) and the recurrent weight
    ``w_hh`` (4 * hidden, hidden or proj_size); ``reverse`` runs from the last step to the
    first; ``w_hr`` (proj_size, hidden), when given, projects each step's h (``proj_size``)."""
    if w_hr is None:
        out = _dispatch.apply(_lstm_layer, (xg, h0, c0, w_hh), (reverse,))
    else:
        out = _dispatch.apply(_lstm_proj_layer, (xg, h0, c0, w_hh, w_hr), (reverse,))
    last = 0 if reverse else xg.shape[0] - 1
    seq = _projected(out, w_hr)
    return seq, seq[last], out[last, 1]


# The layer from its input: Note [Projection inside the layer] in _lstm_numba.py. The op's inputs
# are (x, w_ih, bias, h0, c0, w_hh[, w_hr]); off the compiled path it is the projection's
# matmul followed by the layer above.
def _lstm_input_forward(xp, x, w_ih, bias, h0, c0, w_hh, w_hr, reverse):
    weights = (w_hh,) if w_hr is None else (w_hh, w_hr)
    compiled = _compiled_steps(x, w_ih, bias, h0, c0, *weights)
    if compiled is None:
        return _lstm_forward(xp, _backend.matmul(xp, x, w_ih.T) + bias, h0, c0, w_hh, w_hr, reverse)
    steps, batch = x.shape[:2]
    out = xp.empty((steps, 7 if w_hr is None else 8, batch, c0.shape[1]), np.float32)
    if w_hr is not None:
        out[:, 7] = 0  # the columns past proj_size stay 0
    x, h0, c0 = (xp.ascontiguousarray(a) for a in (x, h0, c0))
    compiled.lstm_forward_from_input(out, x, w_ih, bias, h0, c0, w_hh, w_hr, _order(steps, reverse))
    return out


@defop("lstm_input_layer", saves=(0, 1, 3, 4, 5), saves_output=True)
def _lstm_input_layer(xp, x, w_ih, bias, h0, c0, w_hh, reverse):
    return _lstm_input_forward(xp, x, w_ih, bias, h0, c0, w_hh, None, reverse)


@defop("lstm_input_proj_layer", saves=(0, 1, 3, 4, 5, 6), saves_output=True)
def _lstm_input_proj_layer(xp, x, w_ih, bias, h0, c0, w_hh, w_hr, reverse):
    return _lstm_input_forward(xp, x, w_ih, bias, h0, c0, w_hh, w_hr, reverse)


def _lstm_input_derivative(node, grad):
    x, w_ih, h0, c0, w_hh, *w_hr = node.saved
    out = node.output
    (reverse,) = node.params
    input_grad = node.needs_input_grad[0]
    if _autograd_hooks.grad_mode.enabled:
        dxg, *rest = _lstm_layer_grads(grad, out, h0, c0, w_hh, w_hr[0] if w_hr else None, reverse)
        flat_dxg = dxg.reshape(-1, dxg.shape[-1])
        dx = dxg @ w_ih if input_grad else None
        return (dx, flat_dxg.T @ x.reshape(-1, x.shape[-1]), flat_dxg.sum(0), *rest)
    backward = _lstm_input_proj_layer_backward if w_hr else _lstm_input_layer_backward
    flat = _dispatch.apply(backward, (grad, out, *node.saved), (reverse, input_grad))
    dx, *rest = _split(flat, _lstm_input_grad_shapes(*(tuple(t.shape) for t in node.saved), input_grad))
    return (dx if input_grad else None, *rest)


_lstm_input_layer.derivative(_lstm_input_derivative)
_lstm_input_proj_layer.derivative(_lstm_input_derivative)


def _lstm_input_grad_shapes(x_shape, w_ih_shape, *state_and_weight_shapes_and_input_grad) -> list:
    """The shapes of ``lstm_input_layer``'s gradients (that of ``x`` empty without
    ``input_grad``, the last argument)."""
    *state_and_weight_shapes, input_grad = state_and_weight_shapes_and_input_grad
    return [x_shape if input_grad else (0,), w_ih_shape, w_ih_shape[:1], *state_and_weight_shapes]


def _lstm_input_backward_arrays(xp, grad, out, x, w_ih, h0, c0, w_hh, w_hr, reverse, input_grad):
    """The gradients of ``lstm_input_layer``'s inputs (``_lstm_input_grad_shapes``; that of
    ``x`` only with ``input_grad``), flattened one after another."""
    weights = (w_hh,) if w_hr is None else (w_hh, w_hr)
    compiled = _compiled_steps(grad, out, x, w_ih, h0, c0, *weights)
    if compiled is None:
        shapes = _lstm_grad_shapes(out.shape, h0.shape, c0.shape, *(w.shape for w in weights))
        dxg, *rest = _split(_lstm_backward_arrays(xp, grad, out, h0, c0, w_hh, w_hr, reverse), shapes)
        flat_dxg = dxg.reshape(-1, dxg.shape[-1])
        dw_ih = _backend.matmul(xp, flat_dxg.T, x.reshape(-1, x.shape[-1]))
        dx = _backend.matmul(xp, dxg, w_ih) if input_grad else xp.empty(0, dxg.dtype)
        return xp.concatenate([part.reshape(-1) for part in (dx, dw_ih, flat_dxg.sum(0), *rest)])
    weight_shapes = (w.shape for w in weights)
    shapes = _lstm_input_grad_shapes(x.shape, w_ih.shape, h0.shape, c0.shape, *weight_shapes, input_grad)
    flat, (dx, dw_ih, db, dh, dc, dw, *dw_hr) = _flat_parts(xp, grad.dtype, shapes)
    dhr = None if w_hr is None else xp.empty((*out.shape[:1], out.shape[2], w_hr.shape[0]), grad.dtype)
    grad, out, x, h0, c0 = (xp.ascontiguousarray(a) for a in (grad, out, x, h0, c0))
    order = _order(out.shape[0], not reverse)
    dx = dx if input_grad else None
    part = compiled.lstm_backward_from_input(grad, out, x, w_ih, h0, c0, w_hh, w_hr, order, dx, dh, dc, dhr)
    size = x.shape[-1]
    dw_ih[...] = part[:, :size]
    dw[...] = part[:, size:-1]
    db[...] = part[:, -1]
    if w_hr is not None:
        dw_hr[0][...] = _weight_grad(xp, dhr, out[:, 0])
    return flat


@defop("lstm_input_layer_backward", differentiable=False)
def _lstm_input_layer_backward(xp, grad, out, x, w_ih, h0, c0, w_hh, reverse, input_grad):
    return _lstm_input_backward_arrays(xp, grad, out, x, w_ih, h0, c0, w_hh, None, reverse, input_grad)


@defop("lstm_input_proj_layer_backward", differentiable=False)
def _lstm_input_proj_layer_backward(xp, grad, out, x, w_ih, h0, c0, w_hh, w_hr, reverse, input_grad):
    return _lstm_input_backward_arrays(xp, grad, out, x, w_ih, h0, c0, w_hh, w_hr, reverse, input_grad)


def lstm_input_layer(x, w_ih, bias, h0, c0, w_hh, reverse: bool = False, w_hr=None):
    """``lstm_layer`` from the layer's input ``x`` (steps, batch, input_size), ``w_ih``
    (4 * hidden, input_size) and ``bias`` (4 * hidden,: both biases, or None) instead of the
    projections ``x @ w_ih.T + bias``, as one op (Note [Projection inside the layer] in
    ``_lstm_numba.py``): ``(output, h_n, c_n)``. Inside an autocast region it is those two
    steps, so that the projection's matmul is cast as ``linear`` is."""
    if bias is None:
        bias = w_ih.new_zeros(w_ih.shape[0])
    if _dispatch.autocast is not None:
        return lstm_layer(linear(x, w_ih, bias), h0, c0, w_hh, reverse, w_hr=w_hr)
    if w_hr is None:
        out = _dispatch.apply(_lstm_input_layer, (x, w_ih, bias, h0, c0, w_hh), (reverse,))
    else:
        out = _dispatch.apply(_lstm_input_proj_layer, (x, w_ih, bias, h0, c0, w_hh, w_hr), (reverse,))
    last = 0 if reverse else x.shape[0] - 1
    seq = _projected(out, w_hr)
    return seq, seq[last], out[last, 1]


# ---------------------------------------------------------------- GRU
@defop("gru_layer", saves=(1, 2), saves_output=True)
def _gru_layer(xp, xg, h0, w_hh, b_hh, reverse):
    steps, batch = xg.shape[:2]
    hidden = h0.shape[1]
    dtype = xp.result_type(xg, h0, w_hh, b_hh)
    out = xp.empty((steps, 5, batch, hidden), dtype)
    out[:, 1:4] = _by_gate(xg, 3)
    out[:, 1:3] += b_hh[: 2 * hidden].reshape(2, 1, hidden)  # b_hr, b_hz; b_hn is inside r * (...)
    b_hn = b_hh[2 * hidden :]
    w_t = _per_gate(xp, w_hh, 3, dtype)
    hg = xp.empty((3, batch, hidden), dtype)
    rhn = xp.empty((batch, hidden), dtype)
    h_prev = h0.astype(dtype, copy=False)
    with np.errstate(over="ignore"):  # sigmoid_
        for t in _order(steps, reverse):
            h, r, z, n, hn = out[t]
            xp.matmul(h_prev, w_t, out=hg)
            out[t, 1:3] += hg[:2]
            sigmoid_(xp, out[t, 1:3])  # r and z
            xp.add(hg[2], b_hn, out=hn)
            n += xp.multiply(r, hn, out=rhn)
            xp.tanh(n, out=n)
            xp.subtract(h_prev, n, out=h)
            h *= z
            h += n
            h_prev = h
    return out


@_gru_layer.derivative
def _(node, grad):
    h0, w_hh = node.saved
    out = node.output
    (reverse,) = node.params
    if _autograd_hooks.grad_mode.enabled:
        return _gru_layer_grads(grad, out, h0, w_hh, reverse)
    flat = _dispatch.apply(_gru_layer_backward, (grad, out, h0, w_hh), (reverse,))
    return _split(flat, _gru_grad_shapes(out.shape, tuple(w_hh.shape)))


def _gru_grad_shapes(out_shape, w_shape) -> list:
    steps, _, batch, hidden = out_shape
    return [(steps, batch, 3 * hidden), (batch, hidden), w_shape, (3 * hidden,)]


def _gru_layer_grads(grad, out, h0, w_hh, reverse):
    """The layer's derivative with Tensor ops (differentiable): gradients of xg, h0, w_hh, b_hh."""
    steps, hidden = out.shape[0], h0.shape[1]
    h_before = _states_before(cat, out[:, 0], h0, reverse)
    dxg, dhg = [None] * steps, [None] * steps
    dh = None
    for t in _order(steps, not reverse):
        gh, gr, gz, gn, ghn = grad[t].unbind(0)
        _, r, z, n, hn = out[t].unbind(0)
        if dh is not None:
            gh = gh + dh
        dr, dz, dn, dhn, dh = gru_grads(gh, (gr, gz, gn), ghn, h_before[t], (r, z, n), hn)
        dxg[t], dhg[t] = cat([dr, dz, dn], 1), cat([dr, dz, dhn], 1)
        dh = dh + dhg[t] @ w_hh
    dhg = stack(dhg)
    dw = dhg.reshape(-1, 3 * hidden).T @ h_before.reshape(-1, hidden)
    return stack(dxg), dh, dw, dhg.sum((0, 1))


@defop("gru_layer_backward", differentiable=False)
def _gru_layer_backward(xp, grad, out, h0, w_hh, reverse):
    """``_gru_layer_grads`` on arrays: the four gradients flattened one after another.

    As for the LSTM, what does not depend on the carried gradient of ``h`` is computed for all
    the steps at once: with ``P`` the gates' derivatives, ``[dz, dn] = D0_zn + gh * K`` with
    ``K = [(h_prev - n) * P_z, (1 - z) * P_n]``, and ``dr = D0_r + dn * hn * P_r``."""
    steps, _, batch, hidden = out.shape
    dtype = grad.dtype
    flat, (dxg, dh, dw, db) = _flat_parts(xp, dtype, _gru_grad_shapes(out.shape, w_hh.shape))
    dxg_by_gate = _by_gate(dxg, 3)
    dhg = xp.empty((steps, batch, 3 * hidden), dtype)
    dhg_by_gate = _by_gate(dhg, 3)
    h_before = _states_before(xp.concatenate, out[:, 0], h0, reverse)
    r, z, n, hn = (out[:, k] for k in range(1, 5))
    p = xp.empty((steps, 3, batch, hidden), dtype)  # r, z, n
    xp.subtract(1, out[:, 1:3], out=p[:, :2])
    p[:, :2] *= out[:, 1:3]
    xp.multiply(n, n, out=p[:, 2])
    xp.subtract(1, p[:, 2], out=p[:, 2])
    d0 = grad[:, 1:4] * p
    by_gh = xp.empty((steps, 2, batch, hidden), dtype)  # z, n
    xp.subtract(h_before, n, out=by_gh[:, 0])
    by_gh[:, 0] *= p[:, 1]
    xp.subtract(1, z, out=by_gh[:, 1])
    by_gh[:, 1] *= p[:, 2]
    r_by_dn = hn * p[:, 0]
    d3 = xp.empty((3, batch, hidden), dtype)
    gh, tmp = xp.empty((batch, hidden), dtype), xp.empty((batch, hidden), dtype)
    dh[...] = 0
    for t in _order(steps, not reverse):
        xp.add(grad[t, 0], dh, out=gh)
        xp.multiply(gh, by_gh[t], out=d3[1:])
        d3[1:] += d0[t, 1:]
        xp.multiply(d3[2], r_by_dn[t], out=d3[0])
        d3[0] += d0[t, 0]
        dxg_by_gate[t] = d3
        d3[2] *= r[t]  # now the gradient of hn
        d3[2] += grad[t, 4]
        dhg_by_gate[t] = d3
        xp.matmul(dhg[t], w_hh, out=dh)
        dh += xp.multiply(gh, z[t], out=tmp)
    dw[...] = _weight_grad(xp, dhg, h_before)
    db[...] = dhg.sum((0, 1))
    return flat


def gru_layer(xg, h0, w_hh, b_hh, reverse: bool = False):
    """One GRU layer and direction (Note [Fused layers]): ``(output, h_n)`` from the input
    projections of every step ``xg`` (steps, batch, 3 * hidden; ``b_ih`` included), the initial
    state ``h0`` (batch, hidden), the recurrent weight ``w_hh`` (3 * hidden, hidden) and bias
    ``b_hh`` (3 * hidden,); ``reverse`` runs from the last step to the first."""
    out = _dispatch.apply(_gru_layer, (xg, h0, w_hh, b_hh), (reverse,))
    return out[:, 0], out[0 if reverse else xg.shape[0] - 1, 0]


# ---------------------------------------------------------------- Elman RNN
@defop("rnn_layer", saves=(1, 2), saves_output=True)
def _rnn_layer(xp, xg, h0, w_hh, nonlinearity, reverse):
    dtype = xp.result_type(xg, h0, w_hh)
    out = xp.empty(xg.shape, dtype)
    w_t = xp.ascontiguousarray(w_hh.T, dtype=dtype)
    h_prev = h0.astype(dtype, copy=False)
    for t in _order(xg.shape[0], reverse):
        h = out[t]
        xp.matmul(h_prev, w_t, out=h)
        h += xg[t]
        if nonlinearity == "tanh":
            xp.tanh(h, out=h)
        else:
            xp.maximum(h, 0, out=h)
        h_prev = h
    return out


@_rnn_layer.derivative
def _(node, grad):
    h0, w_hh = node.saved
    out = node.output
    nonlinearity, reverse = node.params
    if _autograd_hooks.grad_mode.enabled:
        return _rnn_layer_grads(grad, out, h0, w_hh, nonlinearity, reverse)
    flat = _dispatch.apply(_rnn_layer_backward, (grad, out, h0, w_hh), node.params)
    return _split(flat, [tuple(out.shape), tuple(h0.shape), tuple(w_hh.shape)])


def _rnn_derivative(out, nonlinearity: str):
    """The nonlinearity's derivative, from its output (Tensors or arrays)."""
    return 1 - out * out if nonlinearity == "tanh" else out > 0


def _rnn_layer_grads(grad, out, h0, w_hh, nonlinearity, reverse):
    """The layer's derivative with Tensor ops (differentiable): gradients of xg, h0, w_hh."""
    steps = out.shape[0]
    act = _rnn_derivative(out, nonlinearity)
    dxg = [None] * steps
    dh = None
    for t in _order(steps, not reverse):
        dxg[t] = (grad[t] if dh is None else grad[t] + dh) * act[t]
        dh = dxg[t] @ w_hh
    dxg = stack(dxg)
    h_before = _states_before(cat, out, h0, reverse)
    return dxg, dh, dxg.reshape(-1, dxg.shape[-1]).T @ h_before.reshape(-1, h0.shape[1])


@defop("rnn_layer_backward", differentiable=False)
def _rnn_layer_backward(xp, grad, out, h0, w_hh, nonlinearity, reverse):
    """``_rnn_layer_grads`` on arrays: the three gradients flattened one after another."""
    shapes = [out.shape, h0.shape, w_hh.shape]
    flat, (dxg, dh, dw) = _flat_parts(xp, grad.dtype, shapes)
    act = _rnn_derivative(out, nonlinearity)
    dh[...] = 0
    for t in _order(out.shape[0], not reverse):
        dxg_t = dxg[t]
        xp.add(grad[t], dh, out=dxg_t)
        dxg_t *= act[t]
        xp.matmul(dxg_t, w_hh, out=dh)
    dw[...] = _weight_grad(xp, dxg, _states_before(xp.concatenate, out, h0, reverse))
    return flat


def rnn_layer(xg, h0, w_hh, nonlinearity: str = "tanh", reverse: bool = False):
    """One Elman RNN layer and direction (Note [Fused layers]): ``(output, h_n)`` from the input
    projections of every step ``xg`` (steps, batch, hidden; both biases included), the initial
    state ``h0`` (batch, hidden) and the recurrent weight ``w_hh`` (hidden, hidden);
    ``nonlinearity`` is ``"tanh"`` or ``"relu"``; ``reverse`` runs from the last step to the
    first."""
    out = _dispatch.apply(_rnn_layer, (xg, h0, w_hh), (nonlinearity, reverse))
    return out, out[0 if reverse else xg.shape[0] - 1]


def over_packed_runs(batch_sizes: list[int], take, run, h0, c0):
    """A recurrence over packed sequences (``batch_sizes`` per step, the batch sorted longest
    first), as one dense run per group of sequences of equal length, so that no step sees
    padding and each sequence's final state is its own: ``take(length, start, end)`` gives the
    group's time-major input, ``run(x, h, c)`` its ``(output, h_n, c_n)`` (time-major; ``c`` None
    but for LSTM). Returns the packed output's data, ``h_n`` and ``c_n`` (None without ``c0``)."""
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(batch_sizes[0] if batch_sizes else 0)]
    groups, h_n, c_n, start = [], [], [], 0
    while start < len(lengths):
        length = lengths[start]
        end = start + lengths.count(length)
        out, h, c = run(take(length, start, end), h0[:, start:end], None if c0 is None else c0[:, start:end])
        groups.append((length, out))
        h_n.append(h)
        c_n.append(c)
        start = end
    steps = [out[t] for t in range(len(batch_sizes)) for length, out in groups if length > t]
    return cat(steps, 0), cat(h_n, 1), (None if c0 is None else cat(c_n, 1))
