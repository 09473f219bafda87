"""Private kernels of the recurrent layers: fused LSTM/GRU steps and shared helpers."""

from __future__ import annotations

import math

import tensor
from autograd.function import Function
from tensor import Tensor

from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


class _Unbind(Function):
    """Split along ``dim`` into views; the backward stacks the gradients in one copy
    (slicing step by step would allocate a full-size gradient per step)."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return tuple(x.unbind(dim))

    @staticmethod
    def backward(ctx, *grads):
        return tensor.stack(grads, ctx.dim), None


def _unbind(x: Tensor, dim: int) -> tuple:
    if x.shape[dim] == 1 or not x.requires_grad:
        return tuple(x.unbind(dim))
    return _Unbind.apply(x, dim)


# ---------------------------------------------------------------- one time step
# ``xg`` is the input projection (with its bias), ``hg`` the recurrent one. The LSTM and GRU
# pointwise parts are fused into one autograd node each: their backward is written with
# Tensor ops and, when a graph of the backward is being recorded (double backward), it
# recomputes the activations from the inputs so that the graph reaches them.

def _sigmoid_grad(s):
    return s * (1 - s)


def _sigmoid(x):
    # 0.5 * (1 + tanh(x / 2)): stable, and several times faster than the exp form.
    return (x * 0.5).tanh() * 0.5 + 0.5


class _LSTMCellFn(Function):
    @staticmethod
    def forward(ctx, xg, hg, c_prev):
        ctx.save_for_backward(xg, hg, c_prev)
        acts = _lstm_acts(xg + hg)
        i, f, g, o = acts
        c = f * c_prev + i * g
        tc = c.tanh()
        ctx.acts = acts + (tc,)
        return o * tc, c

    @staticmethod
    def backward(ctx, dh, dc):
        xg, hg, c_prev = ctx.saved_tensors
        if tensor.is_grad_enabled():  # double backward: rebuild the activations from the inputs
            i, f, g, o = _lstm_acts(xg + hg)
            tc = (f * c_prev + i * g).tanh()
        else:
            i, f, g, o, tc = ctx.acts
        dc = dc + dh * o * (1 - tc * tc)
        dgates = tensor.cat([dc * g * _sigmoid_grad(i), dc * c_prev * _sigmoid_grad(f),
                             dc * i * (1 - g * g), dh * tc * _sigmoid_grad(o)], 1)
        return dgates, dgates, dc * f


def _lstm_acts(gates):
    hidden = gates.shape[1] // 4
    act = _sigmoid(gates)  # g's share is replaced by a tanh below
    return (act[:, :hidden], act[:, hidden:2 * hidden], gates[:, 2 * hidden:3 * hidden].tanh(),
            act[:, 3 * hidden:])


class _GRUCellFn(Function):
    @staticmethod
    def forward(ctx, xg, hg, h):
        ctx.save_for_backward(xg, hg, h)
        ctx.acts = acts = _gru_acts(xg, hg)
        r, z, n = acts
        return n + z * (h - n)

    @staticmethod
    def backward(ctx, dout):
        xg, hg, h = ctx.saved_tensors
        r, z, n = _gru_acts(xg, hg) if tensor.is_grad_enabled() else ctx.acts
        hidden = h.shape[1]
        hn = hg[:, 2 * hidden:]
        dn = dout * (1 - z) * (1 - n * n)
        dr = dn * hn * _sigmoid_grad(r)
        dz = dout * (h - n) * _sigmoid_grad(z)
        return tensor.cat([dr, dz, dn], 1), tensor.cat([dr, dz, dn * r], 1), dout * z


def _gru_acts(xg, hg):
    hidden = hg.shape[1] // 3
    rz = _sigmoid(xg[:, :2 * hidden] + hg[:, :2 * hidden])
    r = rz[:, :hidden]
    return r, rz[:, hidden:], (xg[:, 2 * hidden:] + r * hg[:, 2 * hidden:]).tanh()


def _rnn_step(xg, hg, h, c, mode):
    pre = xg + hg
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def _lstm_step(xg, hg, h, c, mode):
    return _LSTMCellFn.apply(xg, hg, c)


def _gru_step(xg, hg, h, c, mode):
    return _GRUCellFn.apply(xg, hg, h), None


_STEPS = {"RNN_TANH": _rnn_step, "RNN_RELU": _rnn_step, "LSTM": _lstm_step, "GRU": _gru_step}


def _check_args(input_size, hidden_size, bias):
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(input_size, int) or isinstance(input_size, bool):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")


def _new_param(shape, dtype, device) -> Parameter:
    return Parameter(tensor.empty(*shape, dtype=dtype, device=device))


def _reset_uniform(module: Module, hidden_size: int) -> None:
    bound = 1.0 / math.sqrt(hidden_size)
    with tensor.no_grad():
        for weight in module.parameters():
            weight.uniform_(-bound, bound)
