"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their base ``RNNBase`` (our
``torch.nn.modules.rnn``, whose single-step cells are defined in ``rnn_cells`` and public here).

Parameter names, shapes, gate order and initialisation follow PyTorch, so a
PyTorch ``state_dict`` loads unchanged. Each layer and direction computes the
input projection for every time step with one matrix product; only the
recurrent part loops over time.
"""

from __future__ import annotations

import numbers
import warnings

import tensor
from tensor import Tensor
from tensor.ops import recurrent_layers

from .. import functional as F
from ..utils.rnn import PackedSequence, pad_packed_sequence
from ._recurrent import _GATES, _check_args, _new_param, _reset_uniform
from .module import Module
from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

for _cls in (RNNCellBase, RNNCell, LSTMCell, GRUCell):
    _cls.__module__ = __name__  # defined in rnn_cells; public (and pickled) from here, as torch's


class RNNBase(Module):
    """Shared machinery of ``RNN``, ``LSTM`` and ``GRU`` (``mode`` picks the cell).

    Raises:
        ValueError: for a dropout outside [0, 1], non-positive sizes, a bad ``proj_size``
            or an unknown mode.
        TypeError: for a non-bool ``bias``/``batch_first`` or non-int sizes.
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability of an element being zeroed"
            )
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so non-zero "
                f"dropout expects num_layers greater than 1, but got dropout={dropout} and "
                f"num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        _check_args(input_size, hidden_size, bias)
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size or hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for direction in range(directions):
                shapes = [(gate_size, layer_input), (gate_size, out_size)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, _new_param(shape, dtype, device))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """No-op kept for PyTorch compatibility (there is no cuDNN weight buffer here)."""

    @property
    def all_weights(self) -> list:
        """The parameters, one list per layer and direction."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    # ------------------------------------------------------------ checks
    def _check_input(self, input: Tensor) -> None:
        weight = self.weight_ih_l0
        if input.dtype is not weight.dtype and not tensor.is_autocast_enabled(input.device.type):
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                f"input: input.to({weight.dtype}), or convert model: model.to({input.dtype})"
            )
        if input.shape[-1] != self.input_size:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got {input.shape[-1]}"
            )

    def _expected_hidden(self, batch: int, cell: bool = False) -> tuple:
        size = self.hidden_size if cell or not self.proj_size else self.proj_size
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    def _check_hidden(self, hx: Tensor, expected: tuple, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.shape) != expected:
            raise RuntimeError(msg.format(expected, list(hx.shape)))
        weight = self.weight_ih_l0
        if hx.dtype is not weight.dtype and not tensor.is_autocast_enabled(hx.device.type):
            raise RuntimeError(f"Expected a hidden state of the weights' dtype {weight.dtype}, got {hx.dtype}")

    def _prepare(self, input: Tensor, hx, name: str):
        """Validate; return (batched input, batched hx or None, is_batched)."""
        if input.ndim not in (2, 3):
            tail = "tensor instead" if name == "RNN" else "instead"
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D {tail}")
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        if hx is not None:
            dims = 3 if batched else 2
            if isinstance(hx, tuple):
                if hx[0].ndim != dims or hx[1].ndim != dims:
                    kind = "batched 3-D" if batched else "unbatched 2-D"
                    raise RuntimeError(
                        f"For {kind} input, hx and cx should also be {dims}-D but got "
                        f"({hx[0].ndim}-D, {hx[1].ndim}-D) tensors"
                    )
                if not batched:
                    hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
            else:
                if hx.ndim != dims:
                    kind = "batched 3-D" if batched else "unbatched 2-D"
                    raise RuntimeError(f"For {kind} input, hx should also be {dims}-D but got {hx.ndim}-D tensor")
                if not batched:
                    hx = hx.unsqueeze(1)
        self._check_input(input)
        if input.shape[1 if self.batch_first else 0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        return input, hx, batched

    # ------------------------------------------------------------ computation
    def _run(self, input: Tensor, h0: Tensor, c0: Tensor | None):
        """The stacked (bi)directional recurrence on batched input; returns (output, h_n, c_n)."""
        time_dim = 1 if self.batch_first else 0
        directions = 2 if self.bidirectional else 1
        fold_bias = self.mode != "GRU"  # b_hh sits inside r * (W_hn h + b_hn) for GRU
        h_n, c_n = [], []
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                params = [getattr(self, n) for n in self._all_weights[index]]
                bias = None
                if self.bias:
                    bias = params[2] + params[3] if fold_bias else params[2]
                if self.mode == "LSTM":  # the input's projection inside the layer's op
                    seq, h, c = self._lstm(layer_input, bias, h0[index], c0[index], params, bool(direction), time_dim)
                else:
                    projected = F.linear(layer_input, params[0], bias)  # every step: one product
                    seq, h, c = self._recur(projected, h0[index], params, bool(direction), time_dim)
                h_n.append(h)
                if c is not None:
                    c_n.append(c)
                outputs.append(seq)
            layer_input = outputs[0] if directions == 1 else tensor.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, tensor.stack(h_n), (tensor.stack(c_n) if c_n else None)

    def _run_packed(self, input: PackedSequence, hx):
        """The recurrence over a ``PackedSequence``: (output PackedSequence, h_n, c_n or None).

        The batch is sorted by length (longest first); each run of equal lengths goes through
        ``_run`` as a dense batch of exactly that many steps, so no step sees padding and every
        sequence's final states are h_n/c_n, as in PyTorch. ``hx`` and the returned states are in
        the caller's batch order (permuted by ``sorted_indices``/``unsorted_indices``).

        Raises:
            ValueError: for packed data that is not 2-D or has the wrong dtype.
            RuntimeError: for a wrong feature size or hidden/cell shape.
        """
        data, batch_sizes, sorted_indices, unsorted_indices = input
        if data.ndim != 2:
            raise ValueError(f"{type(self).__name__}: Expected packed data to be 2D, got {data.ndim}D instead")
        self._check_input(data)
        sizes = [int(b) for b in batch_sizes.tolist()]
        batch, lstm = sizes[0], self.mode == "LSTM"
        if hx is None:
            h0, c0 = (
                tensor.zeros(*self._expected_hidden(batch, cell), dtype=data.dtype, device=data.device)
                for cell in (False, True)
            )
            c0 = c0 if lstm else None
        else:
            h0, c0 = hx if lstm else (hx, None)
            self._check_hidden(h0, self._expected_hidden(batch), "Expected hidden[0] size {}, got {}")
            if c0 is not None:
                self._check_hidden(c0, self._expected_hidden(batch, cell=True), "Expected hidden[1] size {}, got {}")
            if sorted_indices is not None:
                h0 = h0.index_select(1, sorted_indices)
                c0 = None if c0 is None else c0.index_select(1, sorted_indices)
        padded, _ = pad_packed_sequence(PackedSequence(data, batch_sizes))  # (steps, batch, *), sorted

        def run(x, h, c):
            out, h, c = self._run(x.transpose(0, 1) if self.batch_first else x, h, c)
            return (out.transpose(0, 1) if self.batch_first else out), h, c

        def take(length, start, end):
            return padded[:length, start:end]

        steps, h_n, c_n = recurrent_layers.over_packed_runs(sizes, take, run, h0, c0)
        output = PackedSequence(steps, batch_sizes, sorted_indices, unsorted_indices)
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = None if c_n is None else c_n.index_select(1, unsorted_indices)
        return output, h_n, c_n

    def _lstm(self, x: Tensor, bias: Tensor | None, h: Tensor, c: Tensor, params: list, reverse: bool, time_dim: int):
        """One LSTM layer and direction over its input ``x``, projection included: (output
        sequence, h_n, c_n), as one op (Note [Projection inside the layer] in
        tensor/ops/_lstm_numba.py)."""
        x = x if time_dim == 0 else x.transpose(0, 1)
        w_hr = params[-1] if self.proj_size else None
        out, h, c = recurrent_layers.lstm_input_layer(x, params[0], bias, h, c, params[1], reverse, w_hr=w_hr)
        return (out if time_dim == 0 else out.transpose(0, 1)), h, c

    def _recur(self, projected: Tensor, h: Tensor, params: list, reverse: bool, time_dim: int):
        """One GRU or RNN layer and direction over ``projected`` (the input projections, with the
        biases that fold into them): (output sequence, h_n, None), as one op (Note [Fused layers]
        in tensor/ops/recurrent_layers.py)."""
        w_hh = params[1]
        seq = projected if time_dim == 0 else projected.transpose(0, 1)
        if self.mode == "GRU":
            b_hh = params[3] if self.bias else w_hh.new_zeros(w_hh.shape[0])
            out, h = recurrent_layers.gru_layer(seq, h, w_hh, b_hh, reverse)
        else:
            out, h = recurrent_layers.rnn_layer(seq, h, w_hh, self.nonlinearity, reverse)
        return (out if time_dim == 0 else out.transpose(0, 1)), h, None

    def _forward_without_cell(self, input: Tensor | PackedSequence, hx: Tensor | None, name: str):
        """``forward`` of the layers without a cell state (RNN, GRU): ``(output, h_n)``."""
        if isinstance(input, PackedSequence):
            output, h_n, _ = self._run_packed(input, hx)
            return output, h_n
        batched_input, hx, batched = self._prepare(input, hx, name)
        batch = batched_input.shape[0 if self.batch_first else 1]
        if hx is None:
            hx = self._zeros_hidden(batched_input)
        self._check_hidden(hx, self._expected_hidden(batch))
        output, h_n, _ = self._run(batched_input, hx, None)
        if not batched:
            output, h_n = output.squeeze(0 if self.batch_first else 1), h_n.squeeze(1)
        return output, h_n

    def _zeros_hidden(self, input: Tensor, cell: bool = False) -> Tensor:
        batch = input.shape[0 if self.batch_first else 1]
        return tensor.zeros(*self._expected_hidden(batch, cell), dtype=input.dtype, device=input.device)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` with act tanh or relu.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; ``forward(input, hx=None) -> (output, h_n)``.

    Raises:
        ValueError: for an unknown nonlinearity, ``proj_size``, or the RNNBase argument errors;
            in forward, for input that is not 2-D or 3-D or has the wrong dtype.
        RuntimeError: in forward, for a wrong feature size or hidden shape.
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.__dict__["nonlinearity"] = args[3]
            args = args[:3] + args[4:]
        else:
            self.__dict__["nonlinearity"] = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None):
        """Run the sequence (a tensor or a ``PackedSequence``); returns ``(output, h_n)``."""
        return self._forward_without_cell(input, hx, "RNN")


class LSTM(RNNBase):
    """Long short-term memory (gate order i, f, g, o as in PyTorch), optionally with ``proj_size``.

    ``forward(input, (h_0, c_0)=None) -> (output, (h_n, c_n))``.

    Raises:
        ValueError: for the RNNBase argument errors; in forward, for input that is not 2-D or 3-D.
        RuntimeError: in forward, for a wrong feature size or hidden/cell shape.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input: Tensor | PackedSequence, hx: tuple | None = None):
        """Run the sequence (a tensor or a ``PackedSequence``); returns ``(output, (h_n, c_n))``."""
        if isinstance(input, PackedSequence):
            output, h_n, c_n = self._run_packed(input, hx)
            return output, (h_n, c_n)
        batched_input, hx, batched = self._prepare(input, hx, "LSTM")
        batch = batched_input.shape[0 if self.batch_first else 1]
        if hx is None:
            hx = (self._zeros_hidden(batched_input), self._zeros_hidden(batched_input, cell=True))
        self._check_hidden(hx[0], self._expected_hidden(batch), "Expected hidden[0] size {}, got {}")
        self._check_hidden(hx[1], self._expected_hidden(batch, cell=True), "Expected hidden[1] size {}, got {}")
        output, h_n, c_n = self._run(batched_input, hx[0], hx[1])
        if not batched:
            output, h_n, c_n = output.squeeze(0 if self.batch_first else 1), h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit (gate order r, z, n; ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``).

    ``forward(input, hx=None) -> (output, h_n)``.

    Raises:
        ValueError: for ``proj_size`` or the RNNBase argument errors; in forward, for input that
            is not 2-D or 3-D.
        RuntimeError: in forward, for a wrong feature size or hidden shape.
    """

    def __init__(self, *args, **kwargs) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Tensor | PackedSequence, hx: Tensor | None = None):
        """Run the sequence (a tensor or a ``PackedSequence``); returns ``(output, h_n)``."""
        return self._forward_without_cell(input, hx, "GRU")
