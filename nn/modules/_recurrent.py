"""Private helpers of the recurrent layers: one time step of each mode, argument checks."""

from __future__ import annotations

import math

import tensor
from tensor.ops import recurrent

from ..parameter import Parameter
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ---------------------------------------------------------------- one time step
# ``xg`` is the input projection (with its bias), ``hg`` the recurrent one. The LSTM and GRU
# pointwise parts are one op each (Note [Fused cells] in tensor/ops/recurrent.py).


def _rnn_step(xg, hg, h, c, mode):
    pre = xg + hg
    return (pre.tanh() if mode == "RNN_TANH" else pre.relu()), None


def _lstm_step(xg, hg, h, c, mode):
    return recurrent.lstm_cell(xg, hg, c)


def _gru_step(xg, hg, h, c, mode):
    return recurrent.gru_cell(xg, hg, h), None


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
