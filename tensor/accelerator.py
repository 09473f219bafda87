"""``tensor.accelerator``: the current accelerator, as ``torch.accelerator``.

The only accelerator here is CUDA (through CuPy). Without a GPU, ``is_available()`` is False,
``current_accelerator()`` is None and ``device_count()`` is 0, so the common idiom

    >>> import tensor
    >>> dev = tensor.accelerator.current_accelerator() if tensor.accelerator.is_available() else "cpu"

picks the CPU.
"""

from __future__ import annotations

from . import cuda
from ._device import device as _device

__all__ = [
    "is_available",
    "current_accelerator",
    "device_count",
    "set_device_index",
    "current_device_index",
    "set_device_idx",
    "current_device_idx",
    "synchronize",
]


def is_available() -> bool:
    """True when an accelerator (a CUDA device through CuPy) is present."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> _device | None:
    """``tensor.device('cuda')`` when a GPU is present, else None (also when ``check_available``
    is False: the CPU-only build has no accelerator type at all)."""
    return _device("cuda") if is_available() else None


def device_count() -> int:
    """The number of accelerator devices (0 without one)."""
    return cuda.device_count()


def _require(what: str) -> None:
    if not is_available():
        raise RuntimeError(
            f"tensor.accelerator.{what}: no accelerator is available (install CuPy "
            "and run on a machine with a CUDA GPU)"
        )


def set_device_index(device) -> None:
    """Make ``device`` (an index, ``"cuda:N"`` or a ``tensor.device``) the current accelerator device.

    Raises:
        RuntimeError: without an accelerator.
    """
    _require("set_device_index")
    cuda.set_device(device)


def current_device_index() -> int:
    """The index of the current accelerator device.

    Raises:
        RuntimeError: without an accelerator.
    """
    _require("current_device_index")
    return cuda.current_device()


set_device_idx = set_device_index  # PyTorch's older names
current_device_idx = current_device_index


def synchronize(device=None) -> None:
    """Wait for all queued work on the accelerator device (the current one by default).

    Raises:
        RuntimeError: without an accelerator.
    """
    _require("synchronize")
    cuda.synchronize(device)
