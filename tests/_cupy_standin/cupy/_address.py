"""Emulated device memory: per-device arenas (``cudaMalloc``), fake device addresses, CUDA IPC.

Each emulated device's memory is one ``memfd`` mapping of this process (sparse: pages exist only
once touched). Device pointers are fake addresses in a per-process window, never host addresses,
so code that treats one as host memory fails. ``cudaMalloc`` is a first-fit allocator over the
arena. An IPC handle names the base allocation (the exporting process, its memfd and the
allocation's offset in it); opening it maps that allocation again, at a new fake address.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import threading

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
        """A first-fit allocation of ``size`` bytes (rounded to 512); its fake address."""
        size = round_up(size)
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
        """Return an allocation, merging it with free neighbours."""
        size = round_up(size)
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


def round_up(size: int) -> int:
    """``size`` rounded up to CuPy's allocation unit (512 bytes)."""
    return -(-size // ALLOCATION_UNIT) * ALLOCATION_UNIT


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
