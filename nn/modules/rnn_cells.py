"""The single-step recurrent cells: ``RNNCell``, ``LSTMCell``, ``GRUCell`` and their base
``RNNCellBase``. Parameter names, shapes, gate order and initialisation follow PyTorch's; each
step's pointwise part is one op (Note [Fused cells] in tensor/ops/recurrent.py).

Public through ``nn.modules.rnn``, as in ``torch.nn.modules.rnn``.
"""

from __future__ import annotations

from tensor import Tensor

from ._recurrent import _STEPS, _check_args, _new_param, _reset_uniform
from .module import Module

__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


class RNNCellBase(Module):
    """Shared parameters of the single-step cells: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``.

    Raises:
        TypeError / ValueError: for non-int or non-positive sizes, or a non-bool ``bias``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None) -> None:
        super().__init__()
        _check_args(input_size, hidden_size, bias)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = _new_param((num_chunks * hidden_size, input_size), dtype, device)
        self.weight_hh = _new_param((num_chunks * hidden_size, hidden_size), dtype, device)
        if bias:
            self.bias_ih = _new_param((num_chunks * hidden_size,), dtype, device)
            self.bias_hh = _new_param((num_chunks * hidden_size,), dtype, device)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        _reset_uniform(self, self.hidden_size)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        if nonlinearity != "tanh":
            s += f", nonlinearity={nonlinearity}"
        return s

    def _step(self, name: str, input: Tensor, hx: tuple, mode: str, fold_bias: bool):
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        hx = tuple(
            input.new_zeros((input.shape[0], self.hidden_size)) if h is None else (h if batched else h.unsqueeze(0))
            for h in hx
        )
        for h in hx:
            if tuple(h.shape) != (input.shape[0], self.hidden_size):
                raise RuntimeError(f"Expected hidden size {(input.shape[0], self.hidden_size)}, got {list(h.shape)}")
        xg = input @ self.weight_ih.T
        hg = hx[0] @ self.weight_hh.T
        if self.bias:
            if fold_bias:
                xg = xg + (self.bias_ih + self.bias_hh)
            else:
                xg, hg = xg + self.bias_ih, hg + self.bias_hh
        h, c = _STEPS[mode](xg, hg, hx[0], hx[1] if len(hx) > 1 else None, mode)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return h, c


def _check_hidden_dims(name: str, hx, label: str = "hidden") -> None:
    if hx is not None and hx.ndim not in (1, 2):
        raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {hx.ndim}D instead")


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``.

    Raises:
        ValueError: for an unknown nonlinearity; in forward, for input/hidden not 1-D or 2-D.
        RuntimeError: in forward, for a wrong input or hidden size.
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None, dtype=None
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        _check_hidden_dims("RNNCell", hx)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        return self._step("RNNCell", input, (hx,), mode, True)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c)=None) -> (h', c')``.

    Raises:
        ValueError: in forward, for input or hx parts not 1-D or 2-D.
        RuntimeError: in forward, for a wrong input or hidden size.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple | None = None) -> tuple:
        """The next (hidden, cell) state."""
        if hx is None:
            hx = (None, None)
        for i, h in enumerate(hx):
            _check_hidden_dims("LSTMCell", h, f"hx[{i}]")
        return self._step("LSTMCell", input, tuple(hx), "LSTM", True)


class GRUCell(RNNCellBase):
    """One GRU step: ``forward(input, hx=None) -> h'``.

    Raises:
        ValueError: in forward, for input/hidden not 1-D or 2-D.
        RuntimeError: in forward, for a wrong input or hidden size.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        _check_hidden_dims("GRUCell", hx)
        return self._step("GRUCell", input, (hx,), "GRU", False)[0]
