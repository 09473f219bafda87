"""Flatten parameters into one vector and back (``torch.nn.utils.convert_parameters``)."""

from __future__ import annotations

from collections.abc import Iterable

import tensor
from tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_device(param: Tensor, device):
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """One 1-D tensor with every parameter flattened, in order (differentiable).

    Raises:
        TypeError: if the parameters are on different devices.
    """
    device = None
    flat = []
    for param in parameters:
        device = _check_device(param, device)
        flat.append(param.reshape(-1))
    return tensor.cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters`` (their ``.data``).

    Raises:
        TypeError: if ``vec`` is not a Tensor, or parameters are on different devices.
        RuntimeError: if ``vec`` has too few elements.
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_device(param, device)
        n = param.numel()
        if pointer + n > vec.numel():
            raise RuntimeError(
                f"vector_to_parameters: vec has {vec.numel()} elements, too few for the parameters "
                f"(needs at least {pointer + n})"
            )
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
