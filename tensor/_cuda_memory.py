"""Bookkeeping of CUDA device memory for the seam (``_backend``): the base allocations of our pool,
and opened IPC mappings. It never imports CuPy; the CuPy backend hands it the module.

Note [Pooled IPC]: a CUDA IPC handle covers a whole ``cudaMalloc`` allocation and opens at its
base, while CuPy's pool carves many arrays out of one allocation (``array.data.mem.ptr`` is
the pool chunk's pointer, not the base) and does not say where an allocation starts. So the
pool allocates through ``Allocations.malloc``, which records every base and size.
"""

from __future__ import annotations

import bisect
import collections
import threading

__all__ = ["Allocations", "IpcMapping", "Usage"]


class Allocations:
    """The live device allocations of our pool (``cudaMalloc``'s base pointers and sizes).

    Freed allocations are not forgotten at once: a new allocation replaces every entry it
    overlaps, so the entry found for a pointer of a live pooled array is always its own.
    """

    def __init__(self, cupy) -> None:
        self._cuda = cupy.cuda
        self._bases: list[int] = []
        self._sizes: dict[int, int] = {}
        self._lock = threading.Lock()

    def malloc(self, size: int):
        """``cudaMalloc`` for the pool, recorded."""
        memptr = self._cuda.MemoryPointer(self._cuda.Memory(size), 0)
        base = memptr.ptr
        with self._lock:
            i = bisect.bisect_left(self._bases, base)
            if i and self._bases[i - 1] + self._sizes[self._bases[i - 1]] > base:
                i -= 1
            while i < len(self._bases) and self._bases[i] < base + size:
                del self._sizes[self._bases.pop(i)]
            self._bases.insert(i, base)
            self._sizes[base] = size
        return memptr

    def containing(self, ptr: int) -> tuple[int, int]:
        """``(base, size)`` of the allocation holding ``ptr``.

        Raises:
            RuntimeError: for memory our pool did not allocate (e.g. imported by IPC or DLPack).
        """
        with self._lock:
            i = bisect.bisect_right(self._bases, ptr) - 1
            if i >= 0 and ptr < self._bases[i] + self._sizes[self._bases[i]]:
                return self._bases[i], self._sizes[self._bases[i]]
        raise RuntimeError(f"cannot share CUDA memory at 0x{ptr:x} by IPC handle: it was not allocated by this "
                           "process's tensor allocator (it may itself be shared or imported). help: share a "
                           ".clone() of the tensor")


class IpcMapping:
    """An opened CUDA IPC handle; closing it when the last array over it is gone."""

    def __init__(self, ptr, close, device_index) -> None:
        self.ptr, self._close, self.device_index = ptr, close, device_index

    def __del__(self) -> None:
        try:
            self._close(self.ptr)
        except Exception:  # interpreter shutdown, or the context is already gone
            pass


class Usage:
    """Bytes in use and their peak per device, kept as allocations come and go: no walk of the
    pool (CuPy's ``used_bytes()`` sums every block in use, too slow to call per allocation).

    Each allocation is handed out wrapped in an ``UnownedMemory`` whose owner is a ``_Lease``
    holding the pooled block; when the array memory dies, the lease reports its bytes freed
    (into a deque, whose ``append`` is atomic: a finaliser may run in any thread, at any
    point, so it takes no lock) and drops the block back into the pool.
    """

    def __init__(self, cupy, pool) -> None:
        self._cuda = cupy.cuda
        self._pool = pool
        self._used: dict[int, int] = {}
        self._peak: dict[int, int] = {}
        self._freed: collections.deque = collections.deque()
        self._lock = threading.Lock()

    def malloc(self, nbytes: int):
        """A pooled allocation of ``nbytes``, counted on its device."""
        pooled = self._pool.malloc(nbytes)
        device, size = pooled.device_id, pooled.mem.size
        with self._lock:
            self._drain()
            used = self._used[device] = self._used.get(device, 0) + size
            self._peak[device] = max(self._peak.get(device, 0), used)
        memory = self._cuda.UnownedMemory(pooled.ptr, size, _Lease(pooled, device, size, self._freed), device)
        return self._cuda.MemoryPointer(memory, 0)

    def used(self, device: int) -> int:
        """Bytes in use on ``device``."""
        with self._lock:
            self._drain()
            return self._used.get(device, 0)

    def peak(self, device: int) -> int:
        """The most bytes in use at once on ``device`` since the last ``reset_peak``."""
        with self._lock:
            return self._peak.get(device, 0)

    def reset_peak(self, device: int) -> None:
        """Start the peak of ``device`` from its current use."""
        with self._lock:
            self._drain()
            self._peak[device] = self._used.get(device, 0)

    def _drain(self) -> None:
        while self._freed:
            device, size = self._freed.popleft()
            self._used[device] -= size


class _Lease:
    """The pooled block behind one array memory; reports its bytes freed when collected."""

    __slots__ = ("pooled", "device", "size", "freed")

    def __init__(self, pooled, device: int, size: int, freed: collections.deque) -> None:
        self.pooled, self.device, self.size, self.freed = pooled, device, size, freed

    def __del__(self) -> None:
        self.freed.append((self.device, self.size))
