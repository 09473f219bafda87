"""``cupy.cuda.memory``: the allocation classes and the allocator switch (see ``cupy._memory``)."""

from .._memory import (
    BaseMemory,
    Memory,
    MemoryPointer,
    MemoryPool,
    OutOfMemoryError,
    PooledMemory,
    SingleDeviceMemoryPool,
    UnownedMemory,
    alloc,
    get_allocator,
    set_allocator,
)

__all__ = ["BaseMemory", "Memory", "MemoryPointer", "MemoryPool", "OutOfMemoryError", "PooledMemory",
           "SingleDeviceMemoryPool", "UnownedMemory", "alloc", "get_allocator", "set_allocator"]
