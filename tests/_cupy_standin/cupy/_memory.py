"""Emulated device memory: per-device arenas, fake device addresses, CuPy's pool, CUDA IPC.

Each emulated device's memory is one ``memfd`` mapping of this process (sparse: pages exist only
once touched). Device pointers are fake addresses in a per-process window, never host addresses,
so code that treats one as host memory fails. ``cudaMalloc`` is a first-fit allocator over the
arena; CuPy's pool (``SingleDeviceMemoryPool``) sits on top, rounds to 512 bytes, splits and
merges blocks exactly as CuPy's does, so a pooled pointer is usually not its allocation's base.
An IPC handle names the base allocation (the exporting process, its memfd and the allocation's
offset in it); opening it maps that allocation again, at a new fake address.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import threading
import weakref

import numpy as np

from . import _state

ALLOCATION_UNIT = 512
ARENA_BYTES = int(os.environ.get("DISTRIB_CUPY_STANDIN_DEVICE_BYTES", str(4 << 30)))
_SLOT = 1 << 33  # fake address space per device, and where IPC mappings start after the devices
_WINDOW = (0x1000 + (os.getpid() & 0xFFF)) << 36
_HANDLE = struct.Struct("<4siiiqq")  # magic, pid, fd, device, offset, size
_lock = threading.RLock()


class OutOfMemoryError(MemoryError):
    """Out of emulated device memory, as ``cupy.cuda.memory.OutOfMemoryError``."""

    def __init__(self, size, total, limit=0) -> None:
        msg = f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes"
        msg += f", limit set to: {limit:,} bytes)." if limit else ")."
        super().__init__(msg)


# ---------------------------------------------------------------- fake addresses
class _Region:
    """A range of fake device addresses backed by host memory (an arena or an IPC mapping)."""

    def __init__(self, start: int, buffer, device_id: int) -> None:
        self.start, self.buffer, self.device_id = start, buffer, device_id
        self.bytes = np.frombuffer(buffer, np.uint8)
        self.size = self.bytes.size
        self.host = self.bytes.ctypes.data


_regions: list[_Region] = []
_starts: list[int] = []
_hosts: list[int] = []
_by_host: list[_Region] = []


def _register(region: _Region) -> None:
    with _lock:
        i = bisect.bisect(_starts, region.start)
        _starts.insert(i, region.start)
        _regions.insert(i, region)
        j = bisect.bisect(_hosts, region.host)
        _hosts.insert(j, region.host)
        _by_host.insert(j, region)


def _unregister(region: _Region) -> None:
    with _lock:
        i = _regions.index(region)
        del _regions[i], _starts[i]
        j = _by_host.index(region)
        del _by_host[j], _hosts[j]


def region_of(ptr: int, nbytes: int = 1) -> _Region:
    """The region holding ``[ptr, ptr + nbytes)``; CUDA's illegal-address error otherwise."""
    i = bisect.bisect(_starts, ptr) - 1
    if i >= 0:
        region = _regions[i]
        if ptr + max(nbytes, 1) <= region.start + region.size:
            return region
    raise _state.CUDARuntimeError(700, "cudaErrorIllegalAddress",
                                  f"an illegal memory access was encountered (0x{ptr:x}, {nbytes} bytes)")


def device_ptr(host_address: int) -> int:
    """The fake device address of a host address inside a region (for views made by numpy)."""
    j = bisect.bisect(_hosts, host_address) - 1
    region = _by_host[j]
    assert 0 <= host_address - region.host <= region.size, "host address outside device memory"
    return region.start + host_address - region.host


def host_bytes(ptr: int, nbytes: int) -> np.ndarray:
    """A uint8 host view of ``nbytes`` of device memory at ``ptr`` (what a kernel would touch)."""
    region = region_of(ptr, nbytes)
    offset = ptr - region.start
    return region.bytes[offset: offset + nbytes]


def device_of(ptr: int) -> int:
    """The device a fake device address belongs to."""
    return region_of(ptr).device_id


# ---------------------------------------------------------------- cudaMalloc
class _Arena:
    """One device's memory in this process: a memfd mapping and a first-fit allocator over it."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.fd = os.memfd_create(f"cupy-standin-device{device_id}")
        os.ftruncate(self.fd, ARENA_BYTES)
        self.map = mmap.mmap(self.fd, ARENA_BYTES)
        self.region = _Region(_WINDOW + device_id * _SLOT, self.map, device_id)
        _register(self.region)
        self.free_list = [(0, ARENA_BYTES)]  # sorted (offset, size)
        self.live: list[int] = []  # sorted offsets of live allocations
        self.sizes: dict[int, int] = {}
        self.used = 0

    def malloc(self, size: int) -> int:
        size = _round(size)
        for i, (offset, length) in enumerate(self.free_list):
            if length >= size:
                if length == size:
                    del self.free_list[i]
                else:
                    self.free_list[i] = (offset + size, length - size)
                self.used += size
                bisect.insort(self.live, offset)
                self.sizes[offset] = size
                return self.region.start + offset
        raise OutOfMemoryError(size, self.used, ARENA_BYTES)

    def base_of(self, offset: int) -> tuple[int, int]:
        """``cuMemGetAddressRange``: base offset and size of the live allocation holding ``offset``."""
        i = bisect.bisect(self.live, offset) - 1
        if i < 0 or offset >= self.live[i] + self.sizes[self.live[i]]:
            raise _state.CUDARuntimeError(1, "cudaErrorInvalidValue", "invalid argument")
        return self.live[i], self.sizes[self.live[i]]

    def free(self, ptr: int, size: int) -> None:
        size = _round(size)
        offset = ptr - self.region.start
        self.used -= size
        del self.live[bisect.bisect_left(self.live, offset)], self.sizes[offset]
        _release_pages(self.map, offset, size)
        i = bisect.bisect(self.free_list, (offset, size))
        self.free_list.insert(i, (offset, size))
        if i + 1 < len(self.free_list) and offset + size == self.free_list[i + 1][0]:
            self.free_list[i] = (offset, size + self.free_list.pop(i + 1)[1])
        if i > 0 and sum(self.free_list[i - 1]) == offset:
            prev = self.free_list.pop(i - 1)
            self.free_list[i - 1] = (prev[0], prev[1] + self.free_list[i - 1][1])


def _release_pages(buffer: mmap.mmap, offset: int, size: int) -> None:
    """Give whole freed pages back to the OS (freed device memory holds garbage anyway)."""
    first = -(-offset // mmap.PAGESIZE) * mmap.PAGESIZE
    last = (offset + size) // mmap.PAGESIZE * mmap.PAGESIZE
    if last - first >= 16 * mmap.PAGESIZE:
        buffer.madvise(mmap.MADV_REMOVE, first, last - first)


_arenas: dict[int, _Arena] = {}


def arena(device_id: int) -> _Arena:
    """The arena of an emulated device, made on first use."""
    found = _arenas.get(device_id)
    if found is None:
        with _lock:
            found = _arenas.get(device_id) or _Arena(_state.check_device_id(device_id))
            _arenas[device_id] = found
    return found


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
        from .cuda import Device

        return Device(self.device_id)


class Memory(BaseMemory):
    """A ``cudaMalloc`` allocation on the current device, freed when collected."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.device_id = _state.get_device()
        self.ptr = arena(self.device_id).malloc(size) if size > 0 else 0

    def __del__(self) -> None:
        if self.ptr:
            _arenas[self.device_id].free(self.ptr, self.size)
            self.ptr = 0


class UnownedMemory(BaseMemory):
    """Memory that CuPy does not own (kept alive through ``owner``)."""

    def __init__(self, ptr: int, size: int, owner, device_id: int = -1) -> None:
        if device_id < 0:
            if ptr == 0:
                raise RuntimeError("UnownedMemory requires explicit device ID for a null pointer.")
            device_id = device_of(ptr)
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
        return self.mem.ptr + self.offset

    def split(self, size: int):
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
        ptr, self.ptr = self.ptr, 0
        pool = self.pool() if ptr else None
        if pool is not None:
            pool.free(ptr, self.size)

    def __del__(self) -> None:
        self.free()


def _round(size: int) -> int:
    return -(-size // ALLOCATION_UNIT) * ALLOCATION_UNIT


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
        from .cuda import stream as stream_module

        if size == 0:
            return MemoryPointer(Memory(0), 0)
        size = _round(size)
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
        return sum(len(free) for free in self._free.values())

    def used_bytes(self) -> int:
        return sum(chunk.size for chunk in list(self._in_use.values()))

    def free_bytes(self) -> int:
        return sum(e[0] for free in self._free.values() for e in free)

    def total_bytes(self) -> int:
        return self._total

    def set_limit(self, size=None, fraction=None) -> None:
        if fraction is not None:
            size = int(fraction * ARENA_BYTES)
        self._limit = size or 0

    def get_limit(self) -> int:
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
        device_id = _state.get_device()
        pool = self._pools.get(device_id)
        if pool is None:
            pool = self._pools[device_id] = SingleDeviceMemoryPool(self._allocator)
        return pool

    def malloc(self, size: int) -> MemoryPointer:
        return self.device_pool().malloc(size)

    def free_all_blocks(self, stream=None) -> None:
        self.device_pool().free_all_blocks(stream)

    def n_free_blocks(self) -> int:
        return self.device_pool().n_free_blocks()

    def used_bytes(self) -> int:
        return self.device_pool().used_bytes()

    def free_bytes(self) -> int:
        return self.device_pool().free_bytes()

    def total_bytes(self) -> int:
        return self.device_pool().total_bytes()

    def set_limit(self, size=None, fraction=None) -> None:
        self.device_pool().set_limit(size, fraction)

    def get_limit(self) -> int:
        return self.device_pool().get_limit()


def _malloc(size: int) -> MemoryPointer:
    return MemoryPointer(Memory(size), 0)


_default_pool = MemoryPool()
_allocator = [_default_pool.malloc]


def get_default_memory_pool() -> MemoryPool:
    return _default_pool


def set_allocator(allocator=None) -> None:
    _allocator[0] = allocator or _malloc


def get_allocator():
    return _allocator[0]


def alloc(size: int) -> MemoryPointer:
    """Allocate ``size`` bytes on the current device with the current allocator."""
    _state.check_usable()
    return _allocator[0](size)


# ---------------------------------------------------------------- CUDA IPC
def ipc_get_handle(ptr: int) -> bytes:
    """``cudaIpcGetMemHandle``: a handle for the base allocation that contains ``ptr``."""
    _state.check_usable()
    region = region_of(ptr)
    arena_ = _arenas.get(region.device_id)
    if arena_ is None or arena_.region is not region:
        raise _state.CUDARuntimeError(1, "cudaErrorInvalidValue", "invalid argument")
    base, size = arena_.base_of(ptr - region.start)
    return _HANDLE.pack(b"SIPC", os.getpid(), arena_.fd, region.device_id, base, size).ljust(64, b"\0")


_opened: dict[tuple, list] = {}  # (pid, fd, offset) -> [region, refcount]
_ipc_next = [_WINDOW + (1 << 35)]


def ipc_open_handle(handle: bytes) -> int:
    """``cudaIpcOpenMemHandle``: map another process's allocation; returns its base pointer here."""
    _state.check_usable()
    magic, pid, fd, device_id, offset, size = _HANDLE.unpack(bytes(handle)[:_HANDLE.size])
    if magic != b"SIPC":
        raise _state.CUDARuntimeError(1, "cudaErrorInvalidValue", "invalid argument")
    if pid == os.getpid():
        raise _state.CUDARuntimeError(201, "cudaErrorDeviceUninitialized",
                                      "invalid device context (IPC handle opened in the exporting process)")
    key = (pid, fd, offset)
    with _lock:
        if key in _opened:
            _opened[key][1] += 1
            return _opened[key][0].start
        page = offset // mmap.PAGESIZE * mmap.PAGESIZE
        path_fd = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDWR)
        try:
            mapped = mmap.mmap(path_fd, size + offset - page, offset=page)
        finally:
            os.close(path_fd)
        start = _ipc_next[0]
        _ipc_next[0] += -(-(size + mmap.PAGESIZE) // (1 << 21)) * (1 << 21)
        region = _Region(start, memoryview(mapped)[offset - page:], device_id)
        region.mapping = mapped
        _register(region)
        _opened[key] = [region, 1]
        return start


def ipc_close_handle(ptr: int) -> None:
    """``cudaIpcCloseMemHandle``: unmap once the last opener closes."""
    with _lock:
        for key, entry in list(_opened.items()):
            if entry[0].start == ptr:
                entry[1] -= 1
                if entry[1] == 0:
                    del _opened[key]
                    _unregister(entry[0])
                return
    raise _state.CUDARuntimeError(1, "cudaErrorInvalidValue", "invalid argument")
