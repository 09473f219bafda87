"""``nn.Parameter``: a leaf tensor that a Module registers as one of its parameters."""

from __future__ import annotations

import tensor
from tensor import Tensor

__all__ = ["Parameter", "Buffer"]


class Parameter(Tensor):
    """A tensor that is a module parameter: it requires grad by default, and assigning
    it as a Module attribute registers it. It shares storage with ``data``.

    Raises:
        TypeError: if ``data`` is not a tensor.
    """

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = tensor.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}")
        self._data = data._data
        self._device = data._device
        self._version_box = data._version_box
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        # As PyTorch: a copy of the data and requires_grad, without .grad or hooks.
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.detach().clone(), self.requires_grad)
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        return _rebuild_parameter, (self.detach(), self.requires_grad)


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute.

    ``persistent=False`` keeps it out of ``state_dict``.
    """

    def __init__(self, data: Tensor, *, persistent: bool = True) -> None:
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer expects a Tensor as data, got {type(data).__name__}")
        self._data = data._data
        self._device = data._device
        self._version_box = data._version_box
        self.persistent = persistent
