"""``autograd.Variable``: PyTorch's deprecated wrapper, kept so that old programs port. Since
PyTorch 0.4 a Variable is a Tensor: ``Variable(t, requires_grad=True)`` is a new leaf sharing
``t``'s storage, and ``isinstance(t, Variable)`` holds for every tensor."""

from __future__ import annotations

import tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return tensor.is_tensor(other)


class Variable(metaclass=_VariableMeta):
    """``Variable(data=None, requires_grad=False)``: a new leaf sharing ``data``'s storage (an empty
    tensor without ``data``), requiring grad as asked.

    Raises:
        TypeError: when ``data`` is not a Tensor.
    """

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if data is None:
            data = tensor.empty(0)
        if not tensor.is_tensor(data):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)
