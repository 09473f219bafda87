"""``pin_memory``: copy a batch's CPU tensors into page-locked host memory, when a GPU is present.

Pinned memory makes host-to-GPU copies faster (and lets them overlap with compute). Without a GPU
there is nothing to gain, so pinning is a no-op (the DataLoader warns once, as PyTorch does).
The memory comes from the backend seam (``tensor/_pinned.py``), the only code that knows CuPy.
"""

from __future__ import annotations

import collections.abc

from tensor import Tensor, _pinned

__all__ = ["pin_memory", "pinning_available"]


def pinning_available() -> bool:
    """True when page-locked host memory can be had (a CUDA device is present)."""
    return _pinned.available()


def pin_memory(data):
    """``data`` with every CPU tensor copied into pinned memory (recursively); unchanged without a GPU."""
    if not pinning_available():
        return data
    return _pin(data)


def _pin(data):
    if isinstance(data, Tensor):
        if data.device.type != "cpu":
            return data
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(x) for x in data))
    if isinstance(data, tuple):
        return [_pin(x) for x in data]  # a list, as PyTorch does
    if isinstance(data, collections.abc.Mapping):
        items = {k: _pin(v) for k, v in data.items()}
        try:
            return type(data)(items)
        except TypeError:
            return items
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([_pin(x) for x in data])
        except TypeError:
            return [_pin(x) for x in data]
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
