"""``cupy.cuda``: devices, streams, events, memory and pinned host memory of the stand-in."""

from __future__ import annotations

import mmap

from .. import _state
from . import memory, runtime, stream
from .memory import (
    BaseMemory,
    Memory,
    MemoryPointer,
    MemoryPool,
    OutOfMemoryError,
    PooledMemory,
    UnownedMemory,
    alloc,
    get_allocator,
    set_allocator,
)
from .stream import Event, ExternalStream, Stream, get_current_stream, get_elapsed_time

__all__ = ["Device", "Stream", "ExternalStream", "Event", "get_current_stream", "get_elapsed_time", "get_device_id",
           "Memory",
           "MemoryPointer", "MemoryPool", "UnownedMemory", "PooledMemory", "BaseMemory", "OutOfMemoryError",
           "alloc", "set_allocator", "get_allocator", "alloc_pinned_memory", "PinnedMemoryPointer",
           "is_available", "memory", "runtime", "stream"]


def get_device_id() -> int:
    """This thread's current device."""
    return _state.get_device()


def is_available() -> bool:
    """True when at least one emulated device is visible."""
    return _state.DEVICE_COUNT > 0


class Device:
    """An emulated CUDA device; as a context manager it is this thread's current device."""

    def __init__(self, device=None) -> None:
        self.id = _state.get_device() if device is None else int(device)

    def __int__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id}>"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and self.id == other.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __enter__(self) -> Device:
        current = _state.get_device()
        _state.thread.device_stack.append(current)
        if self.id != current:
            _state.set_device(self.id)
        return self

    def __exit__(self, *exc) -> None:
        _state.set_device(_state.thread.device_stack.pop())

    def use(self) -> Device:
        """Make this device current in this thread."""
        _state.set_device(self.id)
        return self

    def synchronize(self) -> None:
        """Wait for all work on this device (a synchronisation)."""
        _state.check_device_id(self.id)
        _state.declare_synchronize()
        stream.wait_device(self.id)

    @property
    def compute_capability(self) -> str:
        """The emulated devices claim compute capability 8.0."""
        return "80"

    @property
    def mem_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes of this device."""
        with self:
            return runtime.memGetInfo()


class PinnedMemoryPointer(mmap.mmap):
    """Page-locked host memory: a buffer numpy can wrap (``np.frombuffer``)."""

    @property
    def ptr(self) -> int:
        """The host address of the buffer."""
        import ctypes

        return ctypes.addressof(ctypes.c_char.from_buffer(self))


def alloc_pinned_memory(size: int) -> PinnedMemoryPointer:
    """``size`` bytes of pinned host memory (needs CUDA: initialises it)."""
    _state.check_usable()
    return PinnedMemoryPointer(-1, max(size, 1))
