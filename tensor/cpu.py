"""``tensor.cpu``: the cpu's device module, as ``torch.cpu`` (what ``tensor.get_device_module("cpu")``
returns). The cpu runs work in order in the caller's thread: one device, one stream, always done.
"""

from __future__ import annotations

from ._streams import Event, Stream

__all__ = ["Event", "Stream", "current_device", "current_stream", "device_count", "is_available", "synchronize"]


def is_available() -> bool:
    """Always True."""
    return True


def device_count() -> int:
    """Always 1."""
    return 1


def current_device() -> str:
    """Always ``"cpu"``."""
    return "cpu"


def synchronize(device=None) -> None:
    """Return at once: cpu work is done when its op returns."""


def current_stream(device=None) -> Stream:
    """The cpu stream."""
    return Stream("cpu")
