"""CuPy's memory classes over the emulated devices: ``Memory`` (a ``cudaMalloc``), ``MemoryPointer``,
``UnownedMemory`` and the pool (``SingleDeviceMemoryPool``), which rounds to 512 bytes, splits and
merges blocks exactly as CuPy's does, so a pooled pointer is usually not its allocation's base.
"""

from __future__ import annotations

import bisect
import threading
import weakref

from . import _address, _state
from ._address import ARENA_BYTES, OutOfMemoryError

__all__ = ["ARENA_BYTES", "OutOfMemoryError", "BaseMemory", "Memory", "UnownedMemory", "MemoryPointer",
           "PooledMemory", "SingleDeviceMemoryPool", "MemoryPool", "alloc", "get_allocator", "set_allocator",
           "get_default_memory_pool"]


# ---------------------------------------------------------------- CuPy's memory classes
class BaseMemory:
    """Memory on a device: ``ptr``, ``size``, ``device_id``."""

    ptr = 0
    size = 0
    device_id = 0

    def __int__(self) -> int:
        return self.ptr

    @property
    def device(self):
        """The device of this memory."""
        from .cuda import Device

        return Device(self.device_id)


class Memory(BaseMemory):
    """A ``cudaMalloc`` allocation on the current device, freed when collected."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.device_id = _state.get_device()
        self.ptr = _address.arena(self.device_id).malloc(size) if size > 0 else 0

    def __del__(self) -> None:
        if self.ptr:
            _address.arena(self.device_id).free(self.ptr, self.size)
            self.ptr = 0


class UnownedMemory(BaseMemory):
    """Memory that CuPy does not own (kept alive through ``owner``)."""

    def __init__(self, ptr: int, size: int, owner, device_id: int = -1) -> None:
        if device_id < 0:
            if ptr == 0:
                raise RuntimeError("UnownedMemory requires explicit device ID for a null pointer.")
            device_id = _address.device_of(ptr)
        self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    """A pointer into ``mem``: ``ptr = mem.ptr + offset``."""

    __slots__ = ("mem", "ptr", "device_id")

    def __init__(self, mem: BaseMemory, offset: int) -> None:
        assert mem.ptr != 0 or offset == 0
        self.mem, self.ptr, self.device_id = mem, mem.ptr + offset, mem.device_id

    def __int__(self) -> int:
        return self.ptr

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

    def __sub__(self, offset: int) -> MemoryPointer:
        return self + -offset

    def __repr__(self) -> str:
        return f"<MemoryPointer 0x{self.ptr:x} device={self.device_id} mem={self.mem!r}>"

    @property
    def device(self):
        """The device of this memory."""
        from .cuda import Device

        return Device(self.device_id)


class _Chunk:
    """A piece of a pooled allocation (CuPy's ``_Chunk``): ``ptr = mem.ptr + offset``."""

    __slots__ = ("mem", "offset", "size", "stream_ident", "prev", "next")

    def __init__(self, mem, offset, size, stream_ident) -> None:
        self.mem, self.offset, self.size, self.stream_ident = mem, offset, size, stream_ident
        self.prev = self.next = None

    @property
    def ptr(self) -> int:
        """The chunk's address: its allocation's base plus its offset."""
        return self.mem.ptr + self.offset

    def split(self, size: int):
        """Keep the first ``size`` bytes; return the rest as a new chunk (None if nothing is left)."""
        if self.size == size:
            return None
        rest = _Chunk(self.mem, self.offset + size, self.size - size, self.stream_ident)
        self.size = size
        rest.next, rest.prev = self.next, self
        if self.next is not None:
            self.next.prev = rest
        self.next = rest
        return rest

    def merge(self, rest: _Chunk) -> None:
        """Absorb the next chunk ``rest``."""
        self.size += rest.size
        self.next = rest.next
        if rest.next is not None:
            rest.next.prev = self


class PooledMemory(BaseMemory):
    """A chunk handed out by a pool; its ``ptr`` is the chunk's, not the allocation's base."""

    def __init__(self, chunk: _Chunk, pool) -> None:
        self.ptr, self.size, self.device_id = chunk.ptr, chunk.size, chunk.mem.device_id
        self.pool = weakref.ref(pool)

    def free(self) -> None:
        """Give the chunk back to its pool."""
        ptr, self.ptr = self.ptr, 0
        pool = self.pool() if ptr else None
        if pool is not None:
            pool.free(ptr, self.size)

    def __del__(self) -> None:
        self.free()


class SingleDeviceMemoryPool:
    """CuPy's pool for one device: best fit from free chunks per stream, splitting and merging."""

    def __init__(self, allocator=None) -> None:
        self._allocator = allocator or _malloc
        self._device_id = _state.get_device()
        self._in_use: dict[int, _Chunk] = {}
        self._free: dict[int, list] = {}  # stream ident -> sorted [(size, ptr, chunk)]
        self._total = 0
        self._limit = 0
        self._lock = threading.RLock()

    def malloc(self, size: int) -> MemoryPointer:
        """Allocate ``size`` bytes (rounded to 512) on the current device."""
        from .cuda import stream as stream_module

        if size == 0:
            return MemoryPointer(Memory(0), 0)
        size = _address.round_up(size)
        ident = stream_module.get_current_stream_ptr()
        with self._lock:
            chunk = self._take(size, ident)
            if chunk is None:
                chunk = _Chunk(self._try_malloc(size).mem, 0, size, ident)
            self._in_use[chunk.ptr] = chunk
            return MemoryPointer(PooledMemory(chunk, self), 0)

    def _take(self, size, ident):
        free = self._free.get(ident)
        if not free:
            return None
        i = bisect.bisect_left(free, (size, 0))
        if i == len(free):
            return None
        chunk = free.pop(i)[2]
        rest = chunk.split(size)
        if rest is not None:
            bisect.insort(free, (rest.size, rest.ptr, rest))
        return chunk

    def _try_malloc(self, size: int) -> MemoryPointer:
        if self._limit and self._total + size > self._limit:
            self.free_all_blocks()
            if self._total + size > self._limit:
                raise OutOfMemoryError(size, self._total, self._limit)
        try:
            memptr = self._allocator(size)
        except OutOfMemoryError:
            self.free_all_blocks()
            memptr = self._allocator(size)
        self._total += size
        return memptr

    def free(self, ptr: int, size: int) -> None:
        """Take back the chunk at ``ptr``, merging it with free neighbours of the same allocation."""
        with self._lock:
            chunk = self._in_use.pop(ptr, None)
            if chunk is None:
                raise RuntimeError("Cannot free out-of-pool memory")
            free = self._free.setdefault(chunk.stream_ident, [])
            for neighbour in (chunk.next, chunk.prev):
                entry = None if neighbour is None else (neighbour.size, neighbour.ptr, neighbour)
                if entry is not None and _remove(free, entry):
                    if neighbour is chunk.next:
                        chunk.merge(neighbour)
                    else:
                        neighbour.merge(chunk)
                        chunk = neighbour
            bisect.insort(free, (chunk.size, chunk.ptr, chunk))

    def free_all_blocks(self, stream=None) -> None:
        """Return every free, unsplit block to the device."""
        with self._lock:
            for ident, free in self._free.items():
                if stream is not None and ident != stream.ptr:
                    continue
                keep = [e for e in free if e[2].prev is not None or e[2].next is not None]
                self._total -= sum(e[0] for e in free) - sum(e[0] for e in keep)
                self._free[ident] = keep

    def n_free_blocks(self) -> int:
        """How many free chunks are cached."""
        return sum(len(free) for free in self._free.values())

    def used_bytes(self) -> int:
        """Bytes handed out and not yet freed."""
        return sum(chunk.size for chunk in list(self._in_use.values()))

    def free_bytes(self) -> int:
        """Bytes cached in free chunks."""
        return sum(e[0] for free in self._free.values() for e in free)

    def total_bytes(self) -> int:
        """Bytes allocated from the device (used and cached)."""
        return self._total

    def set_limit(self, size=None, fraction=None) -> None:
        """Cap the bytes allocated from the device (0: no cap)."""
        if fraction is not None:
            size = int(fraction * ARENA_BYTES)
        self._limit = size or 0

    def get_limit(self) -> int:
        """The cap set by ``set_limit`` (0: none)."""
        return self._limit


def _remove(free: list, entry) -> bool:
    i = bisect.bisect_left(free, entry[:2])
    if i < len(free) and free[i][2] is entry[2]:
        del free[i]
        return True
    return False


class MemoryPool:
    """CuPy's memory pool: one ``SingleDeviceMemoryPool`` per device; calls act on the current one."""

    def __init__(self, allocator=None) -> None:
        self._allocator = allocator
        self._pools: dict[int, SingleDeviceMemoryPool] = {}

    def device_pool(self) -> SingleDeviceMemoryPool:
        """The pool of the current device."""
        device_id = _state.get_device()
        pool = self._pools.get(device_id)
        if pool is None:
            pool = self._pools[device_id] = SingleDeviceMemoryPool(self._allocator)
        return pool

    def malloc(self, size: int) -> MemoryPointer:
        """Allocate ``size`` bytes (rounded to 512) on the current device."""
        return self.device_pool().malloc(size)

    def free_all_blocks(self, stream=None) -> None:
        """Return the current device's free, unsplit blocks to the device."""
        self.device_pool().free_all_blocks(stream)

    def n_free_blocks(self) -> int:
        """How many free chunks are cached."""
        return self.device_pool().n_free_blocks()

    def used_bytes(self) -> int:
        """Bytes handed out and not yet freed."""
        return self.device_pool().used_bytes()

    def free_bytes(self) -> int:
        """Bytes cached in free chunks."""
        return self.device_pool().free_bytes()

    def total_bytes(self) -> int:
        """Bytes allocated from the device (used and cached)."""
        return self.device_pool().total_bytes()

    def set_limit(self, size=None, fraction=None) -> None:
        """Cap the bytes allocated from the device (0: no cap)."""
        self.device_pool().set_limit(size, fraction)

    def get_limit(self) -> int:
        """The cap set by ``set_limit`` (0: none)."""
        return self.device_pool().get_limit()


def _malloc(size: int) -> MemoryPointer:
    return MemoryPointer(Memory(size), 0)


_default_pool = MemoryPool()
_allocator = [_default_pool.malloc]


def get_default_memory_pool() -> MemoryPool:
    """The pool CuPy allocates arrays from by default."""
    return _default_pool


def set_allocator(allocator=None) -> None:
    """Make ``allocator(size) -> MemoryPointer`` the current allocator (None: unpooled)."""
    _allocator[0] = allocator or _malloc


def get_allocator():
    """The current allocator."""
    return _allocator[0]


def alloc(size: int) -> MemoryPointer:
    """Allocate ``size`` bytes on the current device with the current allocator."""
    _state.check_usable()
    return _allocator[0](size)
