"""ATen's recurrent entry points, ``torch.lstm``/``gru``/``rnn_tanh``/``rnn_relu`` and their
``*_cell`` forms (issue 16, coverage), with torch's ``_VF`` argument lists.

They are what ``nn.LSTM`` & co. call in PyTorch: flat parameter lists (per layer and direction
``w_ih, w_hh[, b_ih, b_hh][, w_hr]``, the LSTM's projection ``w_hr`` when its ``h`` and ``c``
differ in size), the gates in PyTorch's order (LSTM i, f, g, o; GRU r, z, n). Here
each layer and direction is one fused op of ``tensor/ops/recurrent_layers.py`` (Note [Fused
layers]), after one product for the input projections of every step; the cells use the fused
cell ops of ``tensor/ops/recurrent.py``. The packed overload (``data, batch_sizes, hx, ...``)
runs each group of sequences of equal length as a dense batch, as ``nn``'s packed path does.
Dropout between layers (``train`` and ``dropout > 0``) is ``nn.functional.dropout``, imported
when used.
"""

from __future__ import annotations

import importlib

from ._tensor import Tensor
from .ops import clamping, recurrent, recurrent_layers, unary
from .ops.join_split import cat, stack

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


def _layer_params(params, has_biases: bool, count: int, projected: bool) -> list[tuple]:
    """``params`` cut into ``count`` (w_ih, w_hh, b_ih, b_hh, w_hr) tuples (biases None without;
    the projection ``w_hr`` last, None without)."""
    per = (4 if has_biases else 2) + projected
    params = list(params)
    if len(params) != per * count:
        raise RuntimeError(
            f"expected {per * count} parameters ({per} per layer and direction, {count} layers x directions), "
            f"got {len(params)}"
        )
    out = []
    for i in range(0, len(params), per):
        group = params[i : i + per]
        w_hr = group.pop() if projected else None
        out.append((*group, *(None, None) * (not has_biases), w_hr))
    return out


def _one_direction(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, weights: tuple, reverse: bool):
    """One layer and direction over time-major ``x``: (output, h_n, c_n or None)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    xg = x @ w_ih.T
    if mode == "GRU":  # b_hh sits inside r * (W_hn h + b_hn)
        xg = xg if b_ih is None else xg + b_ih
        out, h = recurrent_layers.gru_layer(xg, h0, w_hh, w_hh.new_zeros(w_hh.shape[0]) if b_hh is None else b_hh,
                                            reverse)  # fmt: skip
        return out, h, None
    if b_ih is not None:
        xg = xg + (b_ih + b_hh)
    if mode == "LSTM":
        return recurrent_layers.lstm_layer(xg, h0, c0, w_hh, reverse, w_hr=w_hr)
    out, h = recurrent_layers.rnn_layer(xg, h0, w_hh, mode, reverse)
    return out, h, None


def _dense(mode, x, h0, c0, params, has_biases, num_layers, dropout, train, bidirectional):
    """The stacked recurrence on time-major ``x`` (steps, batch, features): (output, h_n, c_n)."""
    directions = 2 if bidirectional else 1
    # As ATen: an LSTM projects its states (a w_hr per layer and direction) when h and c differ in size
    projected = c0 is not None and h0.shape[-1] != c0.shape[-1]
    weights = _layer_params(params, has_biases, num_layers * directions, projected)
    h_n, c_n = [], []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            c = None if c0 is None else c0[index]
            out, h, c = _one_direction(mode, x, h0[index], c, weights[index], bool(direction))
            outputs.append(out)
            h_n.append(h)
            c_n.append(c)
        x = outputs[0] if directions == 1 else cat(outputs, -1)
        if dropout and train and layer < num_layers - 1:
            x = importlib.import_module("nn.functional").dropout(x, dropout, True)
    return x, stack(h_n), (None if c0 is None else stack(c_n))


def _packed(mode, data, batch_sizes, h0, c0, args):
    """The packed overload (``recurrent_layers.over_packed_runs``)."""
    sizes = [int(b) for b in batch_sizes.tolist()]
    offsets = [sum(sizes[:t]) for t in range(len(sizes))]

    def take(length, start, end):
        return stack([data[offsets[t] + start : offsets[t] + end] for t in range(length)])

    return recurrent_layers.over_packed_runs(sizes, take, lambda x, h, c: _dense(mode, x, h, c, *args), h0, c0)


def _run(mode: str, name: str, input: Tensor, second, rest: tuple):
    """Both overloads: ``(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` and ``(data, batch_sizes, hx, params, has_biases, num_layers,
    dropout, train, bidirectional)``."""
    # LSTM's hx is a pair and the others' a float tensor: a tensor there (of integers) is batch_sizes
    packed = isinstance(second, Tensor) and (mode == "LSTM" or not second.dtype.is_floating_point)
    if len(rest) != 7:
        form = "data, batch_sizes, hx, ..., bidirectional" if packed else "input, hx, ..., batch_first"
        raise TypeError(f"{name}({form}): expected 9 arguments, got {len(rest) + 2}")
    if packed:
        hx, *args = rest
        batch_first = False
    else:
        hx, args = second, list(rest)
        batch_first = args.pop()
    h0, c0 = (hx[0], hx[1]) if mode == "LSTM" else (hx, None)
    if packed:
        return _packed(mode, input, second, h0, c0, args)
    if input.ndim != 3:
        raise RuntimeError(f"{name}: expected a 3-D input (steps, batch, features), got {input.ndim}-D")
    x = input.transpose(0, 1) if batch_first else input
    out, h, c = _dense(mode, x, h0, c0, *args)
    return (out.transpose(0, 1) if batch_first else out), h, c


def lstm(input: Tensor, hx, *args) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` with ``hx = (h0, c0)`` (layers x directions, batch, hidden), or the packed form
    ``torch.lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional)``: ``(output, h_n, c_n)``.

    Raises:
        RuntimeError: for a parameter count that does not match, or a non-3-D input.
        TypeError: for a wrong number of arguments.
    """
    return _run("LSTM", "lstm", input, hx, args)


def _without_cell(mode: str, name: str):
    def run(input: Tensor, hx, *args) -> tuple[Tensor, Tensor]:
        out, h, _ = _run(mode, name, input, hx, args)
        return out, h

    run.__name__ = run.__qualname__ = name
    run.__doc__ = (
        f"``torch.{name}(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`` "
        f"or the packed form ``torch.{name}(data, batch_sizes, hx, params, has_biases, num_layers, dropout, "
        "train, bidirectional)``: ``(output, h_n)``. Raises as ``lstm``."
    )
    return run


gru = _without_cell("GRU", "gru")
rnn_tanh = _without_cell("tanh", "rnn_tanh")
rnn_relu = _without_cell("relu", "rnn_relu")


def _projections(input: Tensor, h: Tensor, w_ih, w_hh, b_ih, b_hh, name: str) -> tuple[Tensor, Tensor]:
    if input.ndim != 2 or h.ndim != 2:
        raise RuntimeError(f"{name}: expected 2-D input and hidden state (batch, features), got "
                           f"{input.ndim}-D and {h.ndim}-D")  # fmt: skip
    xg, hg = input @ w_ih.T, h @ w_hh.T
    return (xg, hg) if b_ih is None else (xg + b_ih, hg + b_hh)


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
    """One LSTM step, ``torch.lstm_cell(input, (h, c), w_ih, w_hh, b_ih, b_hh)``: ``(h', c')``.

    Raises:
        RuntimeError: for an input or state that is not 2-D.
    """
    h, c = hx
    xg, hg = _projections(input, h, w_ih, w_hh, b_ih, b_hh, "lstm_cell")
    return recurrent.lstm_cell(xg, hg, c)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:  # fmt: skip
    """One GRU step, ``torch.gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)``: ``h'``. Raises as ``lstm_cell``."""
    xg, hg = _projections(input, hx, w_ih, w_hh, b_ih, b_hh, "gru_cell")
    return recurrent.gru_cell(xg, hg, hx)


def _elman_cell(name: str, nonlinearity):
    def cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:  # fmt: skip
        xg, hg = _projections(input, hx, w_ih, w_hh, b_ih, b_hh, name)
        return nonlinearity(xg + hg)

    cell.__name__ = cell.__qualname__ = name
    cell.__doc__ = (
        f"One Elman RNN step, ``torch.{name}(input, hx, w_ih, w_hh, b_ih, b_hh)``: "
        f"``{nonlinearity.__name__}(input @ w_ih.T + b_ih + hx @ w_hh.T + b_hh)``. Raises as ``lstm_cell``."
    )
    return cell


rnn_tanh_cell = _elman_cell("rnn_tanh_cell", unary.tanh)
rnn_relu_cell = _elman_cell("rnn_relu_cell", clamping.relu)
