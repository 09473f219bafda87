"""The one seam between numpy (CPU) and CuPy (CUDA).

Every difference between the two array libraries lives here. Code outside this
module asks a device for its ``Backend`` and calls through it; it never imports
cupy and never asks "CPU or GPU?".
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import os

import numpy as np

from . import _threads

__all__ = ["Backend", "cpu_backend", "cuda_backend", "check_cuda_available"]


class Backend:
    """Array-library operations for one device type. ``xp`` is the array module."""

    xp = np
    array_type: type = np.ndarray
    name = "cpu"

    def device_guard(self, index: int | None):
        """A context that makes ``index`` the current device while arrays are made."""
        return contextlib.nullcontext()

    def asarray(self, data, dtype=None, index: int | None = None):
        """Make an array of ``data`` on this backend's device ``index`` (no copy if possible)."""
        return np.asarray(data, dtype=dtype)

    def to_numpy(self, array) -> np.ndarray:
        """Return a host ndarray (the same memory on CPU)."""
        return array

    def device_index(self, array) -> int | None:
        """The device index an array lives on (None for CPU)."""
        return None

    def current_index(self) -> int | None:
        """The index of the current device (None for CPU)."""
        return None

    def reshape_view(self, array, shape):
        """Reshape without copying; raises ValueError if the strides do not allow it."""
        return np.reshape(array, shape, copy=False)

    def data_ptr(self, array) -> int:
        """The address of the first element."""
        return array.__array_interface__["data"][0]

    def from_dlpack(self, obj):
        """Import an object that supports the DLPack protocol."""
        return np.from_dlpack(obj)

    def synchronize(self, index: int | None = None) -> None:
        """Wait for queued work; a no-op on CPU."""

    # Sharing between processes: host memory goes through tensor/_shared.py (OS shared memory);
    # a backend with ``ipc_supported`` shares its device memory by IPC handle instead.
    ipc_supported = False

    def ipc_export(self, array):
        """``(handle, offset, device_index, size)``: ``array``'s allocation for another process."""
        raise RuntimeError(f"{self.name} arrays are shared through OS shared memory, not IPC handles")

    def ipc_open(self, handle: bytes, device_index: int, size: int):
        """Map an exported handle once; the result, while alive, keeps the mapping open."""
        raise RuntimeError(f"{self.name} arrays are shared through OS shared memory, not IPC handles")

    def ipc_array(self, opened, offset: int, shape, dtype, strides):
        """An array over the memory of ``ipc_open``'s result, starting ``offset`` bytes in."""
        raise RuntimeError(f"{self.name} arrays are shared through OS shared memory, not IPC handles")


class _CupyBackend(Backend):
    name = "cuda"

    def __init__(self, cupy) -> None:
        self.cupy = cupy
        self.xp = cupy
        self.array_type = cupy.ndarray
        self._peak = 0
        pool = cupy.get_default_memory_pool()

        def tracking_malloc(nbytes):
            # CuPy's pool keeps no peak statistic; record it for max_memory_allocated().
            memory = pool.malloc(nbytes)
            self._peak = max(self._peak, pool.used_bytes())
            return memory

        cupy.cuda.set_allocator(tracking_malloc)

    def peak_bytes(self) -> int:
        """The most bytes in use at once since the last ``reset_peak``."""
        return self._peak

    def reset_peak(self) -> None:
        """Start tracking the peak from the current usage."""
        self._peak = self.cupy.get_default_memory_pool().used_bytes()

    def device_guard(self, index):
        return self.cupy.cuda.Device(0 if index is None else index)

    def asarray(self, data, dtype=None, index=None):
        with self.device_guard(index):
            return self.cupy.asarray(data, dtype=dtype)

    def to_numpy(self, array):
        return self.cupy.asnumpy(array)

    def device_index(self, array):
        return array.device.id

    def current_index(self):
        return self.cupy.cuda.Device().id

    def reshape_view(self, array, shape):
        out = array.view()
        try:
            out.shape = shape
        except AttributeError as exc:
            raise ValueError("Unable to avoid creating a copy while reshaping.") from exc
        return out

    def data_ptr(self, array):
        return array.data.ptr

    def from_dlpack(self, obj):
        return self.cupy.from_dlpack(obj)

    def synchronize(self, index=None):
        with self.device_guard(index):
            self.cupy.cuda.Device().synchronize()

    ipc_supported = True

    def ipc_export(self, array):
        # A handle covers the whole base allocation, which CuPy's pool may share between arrays:
        # send the array's offset in it too. The queue is synchronised first so that the
        # consumer reads finished data.
        runtime = self.cupy.cuda.runtime
        memory = array.data.mem
        with self.device_guard(array.device.id):
            self.cupy.cuda.get_current_stream().synchronize()
            handle = runtime.ipcGetMemHandle(memory.ptr)
        return bytes(handle), array.data.ptr - memory.ptr, array.device.id, memory.size

    def ipc_open(self, handle, device_index, size):
        cuda = self.cupy.cuda
        with self.device_guard(device_index):
            ptr = cuda.runtime.ipcOpenMemHandle(handle)
        opened = _IpcMapping(ptr, cuda.runtime.ipcCloseMemHandle, device_index)
        opened.memory = cuda.UnownedMemory(ptr, size, opened, device_index)
        return opened

    def ipc_array(self, opened, offset, shape, dtype, strides):
        pointer = self.cupy.cuda.MemoryPointer(opened.memory, offset)
        return self.cupy.ndarray(shape, dtype, memptr=pointer, strides=strides)


class _IpcMapping:
    """An opened CUDA IPC handle; closing it when the last array over it is gone."""

    def __init__(self, ptr, close, device_index) -> None:
        self.ptr, self._close, self.device_index = ptr, close, device_index

    def __del__(self) -> None:
        try:
            self._close(self.ptr)
        except Exception:  # interpreter shutdown, or the context is already gone
            pass


cpu_backend = Backend()


def tune_host_allocator() -> bool:
    """Keep freed large host buffers for reuse instead of returning them to the OS.

    Note [Host allocator]: glibc serves large ``malloc`` calls (numpy arrays of more
    than 128 KiB, until its threshold adapts) with fresh ``mmap``s and unmaps them on
    free, so every training step page-faults its activations and gradients in again.
    On small VMs those faults cost more than the arithmetic (an MLP step went from
    8.1 to 3.7 ms). PyTorch avoids this with its own caching allocator; we raise
    glibc's mmap and trim thresholds instead. The cost is that up to 128 MiB of freed
    memory stays in the process. Set ``DISTRIB_HOST_ALLOCATOR=system`` to opt out.
    Returns True if the setting was applied.
    """
    if os.environ.get("DISTRIB_HOST_ALLOCATOR", "tuned") == "system":
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: leave the allocator alone
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(mallopt(m_mmap_threshold, 32 << 20)) and bool(mallopt(m_trim_threshold, 128 << 20))


tune_host_allocator()


def reshape_view(array, shape):
    """Reshape an array of either library without copying (ValueError if impossible)."""
    if isinstance(array, np.ndarray):
        return cpu_backend.reshape_view(array, shape)
    return cuda_backend().reshape_view(array, shape)


def owns_fresh_memory(array) -> bool:
    """True for a writable, C-contiguous array that owns its memory (is not a view)."""
    flags = array.flags
    if array.base is not None or not flags.c_contiguous:
        return False
    return bool(getattr(flags, "writeable", True))


def move(array, target: Backend, index: int | None):
    """Copy ``array`` (of either library) to ``target``'s device ``index``."""
    if target is cpu_backend:
        return backend_for_array(array)[0].to_numpy(array)
    with target.device_guard(index):
        return target.xp.array(array, copy=True)


def scatter_add(xp, target, index, values):
    """``target[index] += values`` with repeated indices accumulating (in place)."""
    if xp is np:
        np.add.at(target, index, values)
    else:
        import cupyx  # noqa: PLC0415 - only reached with the CuPy backend loaded

        cupyx.scatter_add(target, index, values)


def matmul(xp, a, b):
    """``a @ b``; on the CPU a large product is split across the intra-op threads
    (Note [Intra-op matmul] in tensor/_threads.py). Raises what ``matmul`` raises."""
    if xp is np:
        return _threads.matmul(a, b)
    return xp.matmul(a, b)


def parallel_for(xp, size: int, work: int, body) -> None:
    """``body(block)`` over slices covering ``range(size)``, split across the intra-op threads
    on the CPU when ``work`` (elements touched) is large; once, whole, on a GPU."""
    if xp is np:
        _threads.parallel_for(size, work, body)
    else:
        body(slice(0, size))


def as_strided(xp, array, shape, strides):
    """A view of ``array`` with the given shape and byte strides (e.g. sliding windows).

    Nothing is copied or checked: the caller keeps every view inside the array's memory.
    """
    if xp is np:
        return np.lib.stride_tricks.as_strided(array, shape, strides, writeable=False)
    import cupy  # noqa: PLC0415 - only reached with the CuPy backend loaded

    return cupy.lib.stride_tricks.as_strided(array, shape, strides)


@functools.lru_cache(maxsize=1)
def _load_cupy():
    try:
        import cupy  # noqa: PLC0415 - the optional GPU library is loaded only when asked for
    except Exception as exc:  # ImportError, or a CUDA library that fails to load
        return None, f"{type(exc).__name__}: {exc}"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"CuPy is installed but CUDA is not usable: {exc}"
    if count == 0:
        return None, "CuPy is installed but no CUDA device was found"
    return cupy, None


def cuda_available() -> bool:
    """True when CuPy imports and at least one CUDA device exists."""
    return _load_cupy()[0] is not None


def check_cuda_available() -> None:
    """Raise RuntimeError telling the user how to fix the setup when CUDA is unusable."""
    cupy, reason = _load_cupy()
    if cupy is None:
        raise RuntimeError(
            f"CUDA is not available ({reason}). help: install the GPU extra with "
            "`pip install 'distrib[cuda]'` on a machine with an NVIDIA GPU and driver, "
            "or use device='cpu'."
        )


@functools.lru_cache(maxsize=1)
def cuda_backend() -> Backend:
    """The CuPy backend; raises RuntimeError with a fix when CUDA is unusable."""
    check_cuda_available()
    return _CupyBackend(_load_cupy()[0])


def cuda_initialized() -> bool:
    """True once this process created the CUDA backend (CUDA then does not survive ``fork``)."""
    return cuda_backend.cache_info().currsize > 0


def cupy_module():
    """The cupy module itself, for ``tensor.cuda``; raises like ``cuda_backend``."""
    check_cuda_available()
    return _load_cupy()[0]


def cupy_submodule(name: str):
    """A CuPy submodule such as ``cuda.nccl``; raises RuntimeError without CUDA, ImportError
    if this CuPy lacks it."""
    check_cuda_available()
    return importlib.import_module(f"cupy.{name}")


def backend_for_array(array) -> tuple[Backend, int | None]:
    """Find the backend and device index of a numpy or cupy array.

    Raises:
        TypeError: if ``array`` is neither.
    """
    if isinstance(array, np.ndarray):
        return cpu_backend, None
    if type(array).__module__.startswith("cupy"):
        backend = cuda_backend()
        return backend, backend.device_index(array)
    raise TypeError(f"expected a numpy or cupy array, got {type(array).__name__}")
