"""Fused recurrent cells: the gate math of one LSTM or GRU time step as one op.

Note [Fused cells]
~~~~~~~~~~~~~~~~~~
``nn.LSTM``/``nn.GRU`` (and their cells) compute the input and recurrent projections with
matrix products, then hand the pointwise part of a step to one op here: one graph node per
step instead of a dozen recorded elementwise ops, as PyTorch's ``_thnn_fused_lstm_cell``.
The kernel writes everything backward needs into its one output, side by side:

* ``lstm_cell(xg, hg, c)``: ``[h, c, i, f, g, o]``, shape (batch, 6 * hidden);
* ``gru_cell(xg, hg, h)``: ``[h, r, z, n]``, shape (batch, 4 * hidden);

and the layer takes ``h`` (and ``c``) as views of it. ``nn.LSTM`` (without ``proj_size``)
and ``nn.GRU`` go further: a whole layer and direction is one op (Note [Fused layers] in
``recurrent_layers.py``); the cells here serve ``LSTMCell``, ``GRUCell`` and ``proj_size``.
The derivative is written twice, the same formula: with Tensor ops (the definition; it runs
when a graph of the backward is being recorded, so double backward works), and as one array
kernel (``*_backward``, an optimisation of that composition) for the ordinary backward. Both read the gate values from
the saved output, so nothing is recomputed.
"""

from __future__ import annotations

import numpy as np

from .. import _autograd_hooks, _dispatch
from .join_split import cat
from .registry import defop

__all__ = ["lstm_cell", "gru_cell"]


def sigmoid_(xp, a) -> None:
    """The logistic function of ``a``, in place, as ``1 / (1 + exp(-a))``: half the time of
    ``0.5 + 0.5 * tanh(a / 2)`` in numpy (float32, AVX2). ``exp(-a)`` overflows to inf below
    about -88 (float32), which gives the exact limit 0; callers run it under
    ``numpy.errstate(over="ignore")`` (CuPy does not warn)."""
    xp.negative(a, out=a)
    xp.exp(a, out=a)
    a += 1
    xp.reciprocal(a, out=a)


def _blocks(a, hidden: int, n: int) -> list:
    """The ``n`` column blocks of width ``hidden`` of ``a``."""
    return [a[:, k * hidden : (k + 1) * hidden] for k in range(n)]


# ---------------------------------------------------------------- LSTM
@defop("lstm_cell", saves=(2,), saves_output=True)
def _lstm_cell(xp, xg, hg, c_prev):
    out = xp.empty((xg.shape[0], 6 * c_prev.shape[1]), xp.result_type(xg, hg, c_prev))
    with np.errstate(over="ignore"):  # sigmoid_
        _lstm_step_into(xp, xg, hg, c_prev, out)
    return out


def _lstm_step_into(xp, xg, hg, c_prev, out):
    """One LSTM step written into ``out`` (batch, 6 * hidden): ``[h, c, i, f, g, o]``."""
    hidden = c_prev.shape[1]
    h, c, i, f, g, o = _blocks(out, hidden, 6)
    gates = out[:, 2 * hidden :]
    xp.add(xg, hg, out=gates)
    sigmoid_(xp, out[:, 2 * hidden : 4 * hidden])  # i and f
    xp.tanh(g, out=g)
    sigmoid_(xp, o)
    xp.multiply(f, c_prev, out=c)
    c += i * g
    xp.tanh(c, out=h)
    h *= o


@_lstm_cell.derivative
def _(node, grad):
    (c_prev,) = node.saved
    out = node.output
    if not _autograd_hooks.grad_mode.enabled:
        packed = _dispatch.apply(_lstm_cell_backward, (grad, out, c_prev))
        hidden = c_prev.shape[1]
        dgates = packed[:, : 4 * hidden]
        return dgates, dgates, packed[:, 4 * hidden :]
    return _lstm_cell_grads(grad, out, c_prev)


def _lstm_cell_grads(grad, out, c_prev):
    """The derivative with Tensor ops (differentiable): gradients of xg, hg and c_prev."""
    hidden = c_prev.shape[1]
    gh, gc, gi, gf, gg, go = _blocks(grad, hidden, 6)
    _, c, i, f, g, o = _blocks(out, hidden, 6)
    dgates, dc_prev = lstm_grads(gh, gc, (gi, gf, gg, go), c_prev, (i, f, g, o), c.tanh())
    dgates = cat(dgates, 1)
    return dgates, dgates, dc_prev


def lstm_grads(gh, gc, ggates, c_prev, gates, tc):
    """One LSTM step's derivative (Tensors or arrays): the gradients of the gate pre-activations
    (i, f, g, o) and of ``c_prev``, from those of ``h``, ``c`` and the gate values ``ggates``,
    given the gate values, the previous cell state and ``tc = tanh(c)``."""
    i, f, g, o = gates
    gi, gf, gg, go = ggates
    dc = gc + gh * o * (1 - tc * tc)
    return (
        (gi + dc * g) * i * (1 - i),
        (gf + dc * c_prev) * f * (1 - f),
        (gg + dc * i) * (1 - g * g),
        (go + gh * tc) * o * (1 - o),
    ), dc * f


@defop("lstm_cell_backward", differentiable=False)
def _lstm_cell_backward(xp, grad, out, c_prev):
    """``_lstm_cell_grads`` on arrays: ``[dgates, dc_prev]`` side by side."""
    hidden = c_prev.shape[1]
    gh, gc, gi, gf, gg, go = _blocks(grad, hidden, 6)
    _, c, i, f, g, o = _blocks(out, hidden, 6)
    packed = xp.empty((grad.shape[0], 5 * hidden), grad.dtype)
    di, df, dg, do, dc_prev = _blocks(packed, hidden, 5)
    tc = xp.tanh(c)
    xp.multiply(gh, tc, out=do)
    do += go
    do *= o
    do *= 1 - o
    dc = 1 - tc * tc
    dc *= o
    dc *= gh
    dc += gc
    xp.multiply(dc, g, out=di)
    di += gi
    di *= i
    di *= 1 - i
    xp.multiply(dc, c_prev, out=df)
    df += gf
    df *= f
    df *= 1 - f
    xp.multiply(dc, i, out=dg)
    dg += gg
    dg *= 1 - g * g
    xp.multiply(dc, f, out=dc_prev)
    return packed


def lstm_cell(xg, hg, c):
    """The pointwise part of an LSTM step (Note [Fused cells]): ``(h, c')`` from the input and
    recurrent projections ``xg``, ``hg`` (batch, 4 * hidden; gates i, f, g, o, biases
    included) and the cell state ``c`` (batch, hidden)."""
    hidden = c.shape[1]
    out = _dispatch.apply(_lstm_cell, (xg, hg, c))
    return out[:, :hidden], out[:, hidden : 2 * hidden]


# ---------------------------------------------------------------- GRU
@defop("gru_cell", saves=(1, 2), saves_output=True)
def _gru_cell(xp, xg, hg, h_prev):
    hidden = h_prev.shape[1]
    out = xp.empty((xg.shape[0], 4 * hidden), xp.result_type(xg, hg, h_prev))
    h, r, z, n = _blocks(out, hidden, 4)
    rz = out[:, hidden : 3 * hidden]
    xp.add(xg[:, : 2 * hidden], hg[:, : 2 * hidden], out=rz)
    with np.errstate(over="ignore"):
        sigmoid_(xp, rz)
    xp.multiply(r, hg[:, 2 * hidden :], out=n)
    n += xg[:, 2 * hidden :]
    xp.tanh(n, out=n)
    xp.subtract(h_prev, n, out=h)
    h *= z
    h += n
    return out


@_gru_cell.derivative
def _(node, grad):
    hg, h_prev = node.saved
    out = node.output
    if not _autograd_hooks.grad_mode.enabled:
        packed = _dispatch.apply(_gru_cell_backward, (grad, out, hg, h_prev))
        hidden = h_prev.shape[1]
        return packed[:, : 3 * hidden], packed[:, 3 * hidden : 6 * hidden], packed[:, 6 * hidden :]
    return _gru_cell_grads(grad, out, hg, h_prev)


def _gru_cell_grads(grad, out, hg, h_prev):
    """The derivative with Tensor ops (differentiable): gradients of xg, hg and h_prev."""
    hidden = h_prev.shape[1]
    gh, gr, gz, gn = _blocks(grad, hidden, 4)
    _, r, z, n = _blocks(out, hidden, 4)
    dr, dz, dn, dhn, dh_prev = gru_grads(gh, (gr, gz, gn), 0, h_prev, (r, z, n), hg[:, 2 * hidden :])
    return cat([dr, dz, dn], 1), cat([dr, dz, dhn], 1), dh_prev


def gru_grads(gh, ggates, ghn, h_prev, gates, hn):
    """One GRU step's derivative (Tensors or arrays): the gradients of the pre-activations of
    r, z and n, of ``hn = W_hn h_prev + b_hn`` and the direct one of ``h_prev``, from those of
    ``h``, the gate values ``ggates`` and ``hn`` (``ghn``), given the gate values and ``hn``."""
    r, z, n = gates
    gr, gz, gn = ggates
    dn = (gn + gh * (1 - z)) * (1 - n * n)
    return ((gr + dn * hn) * r * (1 - r), (gz + gh * (h_prev - n)) * z * (1 - z), dn, ghn + dn * r, gh * z)


@defop("gru_cell_backward", differentiable=False)
def _gru_cell_backward(xp, grad, out, hg, h_prev):
    """``_gru_cell_grads`` on arrays: ``[dxg, dhg, dh_prev]`` side by side."""
    hidden = h_prev.shape[1]
    gh, gr, gz, gn = _blocks(grad, hidden, 4)
    _, r, z, n = _blocks(out, hidden, 4)
    packed = xp.empty((grad.shape[0], 7 * hidden), grad.dtype)
    dxr, dxz, dxn, _, _, dhn, dh_prev = _blocks(packed, hidden, 7)
    xp.multiply(gh, 1 - z, out=dxn)
    dxn += gn
    dxn *= 1 - n * n
    xp.multiply(dxn, hg[:, 2 * hidden :], out=dxr)
    dxr += gr
    dxr *= r
    dxr *= 1 - r
    xp.subtract(h_prev, n, out=dxz)
    dxz *= gh
    dxz += gz
    dxz *= z
    dxz *= 1 - z
    packed[:, 3 * hidden : 5 * hidden] = packed[:, : 2 * hidden]
    xp.multiply(dxn, r, out=dhn)
    xp.multiply(gh, z, out=dh_prev)
    return packed


def gru_cell(xg, hg, h):
    """The pointwise part of a GRU step (Note [Fused cells]): ``h'`` from the input and
    recurrent projections ``xg``, ``hg`` (batch, 3 * hidden; gates r, z, n, biases
    included) and the hidden state ``h`` (batch, hidden)."""
    return _dispatch.apply(_gru_cell, (xg, hg, h))[:, : h.shape[1]]
