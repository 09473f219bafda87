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
import json
import os

import numpy as np

from . import _cuda_memory, _device_asserts, _dtype, _lapack, _threads

__all__ = ["Backend", "cpu_backend", "cuda_backend", "check_cuda_available"]


class Backend:
    """Array-library operations for one device type. ``xp`` is the array module."""

    xp = np
    array_type: type = np.ndarray
    name = "cpu"

    def device_guard(self, index: int | None):
        """A context that makes ``index`` the current device while arrays are made."""
        return contextlib.nullcontext()

    def launch(self, index: int | None, kernel, *args):
        """``kernel(*args)`` run on device ``index``: a kernel runs on its tensors' device,
        whatever device is current in the calling thread (on the CPU: just the call)."""
        return kernel(*args)

    def check_dtype(self, np_dtype) -> None:
        """Raise TypeError naming ``np_dtype`` if this backend cannot hold arrays of it."""

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

    def timing_event(self, index: int | None):
        """An event recorded now on device ``index``'s current stream, to time device work
        with ``elapsed_ms`` (tensor.profiler's CUDA activity); None on the CPU."""
        return None

    def elapsed_ms(self, start, end) -> float:
        """Milliseconds of device time between two ``timing_event``s (waits for ``end``)."""
        raise NotImplementedError(f"{self.name} has no device events")

    def new_event(self, index: int | None, enable_timing: bool, blocking: bool, interprocess: bool):
        """An unrecorded device event on device ``index`` (``tensor.Event``); None on the CPU,
        which has no events."""
        return None

    def new_generator(self, seed: int, index: int | None):
        """A random generator on device ``index`` seeded by ``seed``: numpy's PCG64 here, CuPy's
        Philox4x32-10 counter generator on a GPU (Note [Random numbers per device] in _random.py).
        Both answer ``random``, ``standard_normal`` and ``integers`` as numpy's Generator does."""
        return np.random.Generator(np.random.PCG64(seed))

    def permutation(self, rng, n: int):
        """A random permutation of ``range(n)`` drawn by ``rng`` (from ``new_generator``) on its device."""
        return rng.permutation(n)

    def generator_state(self, rng) -> bytes:
        """The state of ``rng`` (from ``new_generator``) as bytes, copied to the host."""
        return json.dumps(rng.bit_generator.state).encode()

    def set_generator_state(self, rng, state: bytes) -> None:
        """Restore a state from ``generator_state`` into ``rng``.

        Raises:
            ValueError (or KeyError, TypeError): if ``state`` is not such a state.
        """
        rng.bit_generator.state = json.loads(state.decode())

    def elementwise_kernel(self, name: str, in_params: str, out_params: str, operation: str, host):
        """A kernel called as ``kernel(*inputs, *outputs)``, updating the outputs in place: on a
        GPU one ``cupy.ElementwiseKernel`` launch of the C ``operation`` (compiled once per
        process), on the CPU ``host(xp, *inputs, *outputs)``, the numpy composition that defines
        it. Tests check that the two agree."""
        return functools.partial(host, self.xp)

    # The code generator of tensor.compile's fused kernels for this device: tensor/_compile/
    # codegen_<name>.py (numba loop nests here, CUDA C RawKernels on a GPU).
    fused_codegen = "numba"
    # Whether GEMMs in float16/bfloat16 run natively; numpy's run in float32 (``matmul``), so
    # autocast's convolution here rounds its operands and stays in float32 (nn/functional/conv.py).
    native_low_precision_gemm = False

    def matmul_pair(self, a1, b1, a2, b2) -> tuple | None:
        """``(a1 @ b1, a2 @ b2)``, two independent products each whole on its own intra-op thread,
        or None (nothing computed) where that does not apply (Note [Paired products] in
        tensor/_compile/lowering.py). Raises what ``matmul`` raises."""
        return _threads.matmul_pair(a1, b1, a2, b2)

    def raw_kernel(self, source: str, name: str):
        """The kernel ``name`` of the CUDA C ``source``, called as ``kernel(grid, block, args)``
        (a ``cupy.RawKernel``, compiled once per process).

        Raises:
            RuntimeError: on the CPU, which runs generated kernels through numba instead.
        """
        raise RuntimeError(f"{self.name} has no CUDA C kernels (tensor.compile uses numba here)")

    def device_assert(self, bad, error: type, message: str, describe=None) -> None:
        """Check that the 0-d bool array ``bad`` is False without synchronising (Note
        [Device-side asserts] in _device_asserts.py): on the CPU at once, on a GPU at the next
        synchronisation. ``message`` names the op; ``describe()``, when given, is the message
        with the offending values, used where reading them is free (the CPU).

        Raises:
            ``error``: on the CPU, when ``bad`` is True.
        """
        if bad:
            raise error(describe() if describe is not None else message)

    def scalar_operand(self, value, dtype):
        """A Python number as the second operand of a kernel on an array of ``dtype``, so that it
        never widens the array's dtype (PyTorch's rule). numpy 2 treats Python numbers so already
        (NEP 50): returned as is, except beside the ml_dtypes types (bfloat16, float8), with which
        numpy promotes a Python float to float32: there it becomes a scalar of the array's dtype."""
        if type(value) is float and dtype.kind == "V":
            return dtype.type(value)
        return value

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
        self._get_device = cupy.cuda.runtime.getDevice
        self.allocations = _cuda_memory.Allocations(cupy)
        self.asserts = _device_asserts.DeviceAsserts(cupy)
        self._kernels: dict[tuple, object] = {}  # ElementwiseKernel compiles per device itself
        # Our own pool over a recording cudaMalloc: IPC needs the allocation base of a pooled
        # pointer (Note [Pooled IPC] in _cuda_memory.py), which CuPy's pool does not tell; and
        # usage counted per allocation, for max_memory_allocated() (CuPy's pool keeps no peak).
        self.pool = cupy.cuda.MemoryPool(self.allocations.malloc)
        self.usage = _cuda_memory.Usage(cupy, self.pool)
        cupy.cuda.set_allocator(self.usage.malloc)

    def peak_bytes(self, index: int) -> int:
        """The most bytes in use at once on device ``index`` since the last ``reset_peak``."""
        return self.usage.peak(index)

    def reset_peak(self, index: int) -> None:
        """Start tracking device ``index``'s peak from its current usage."""
        self.usage.reset_peak(index)

    def pool_bytes(self, index: int) -> tuple[int, int]:
        """``(used, held)`` bytes of the caching allocator on device ``index``."""
        with self.device_guard(index):
            return self.usage.used(index), self.pool.total_bytes()

    def free_cached(self) -> None:
        """Release the cached, unused blocks of every device this process used."""
        for index in range(self.cupy.cuda.runtime.getDeviceCount()):
            with self.device_guard(index):
                self.pool.free_all_blocks()

    def new_stream(self, index: int | None, priority: int):
        """A non-blocking stream on device ``index`` (the current one for None).

        Raises:
            RuntimeError: for a priority this CuPy cannot set (CuPy 13 has none).
        """
        with self.device_guard(index):
            if priority == 0:
                return self.cupy.cuda.Stream(non_blocking=True)
            try:
                return self.cupy.cuda.Stream(non_blocking=True, priority=priority)
            except TypeError:
                raise RuntimeError(f"stream priority {priority} needs CuPy 14 or newer (this is CuPy "
                                   f"{self.cupy.__version__}). help: upgrade CuPy, or use the default "
                                   "priority 0") from None

    def device_guard(self, index):
        # None is the current device, not device 0: "cuda" means the current device.
        return contextlib.nullcontext() if index is None else self.cupy.cuda.Device(index)

    def launch(self, index, kernel, *args):
        # CuPy launches on the thread's current device and refuses arrays of another one.
        if index is None or index == self._get_device():
            return kernel(*args)
        with self.cupy.cuda.Device(index):
            return kernel(*args)

    def check_dtype(self, np_dtype) -> None:
        _check_cuda_dtype(np_dtype)

    def asarray(self, data, dtype=None, index=None):
        _check_cuda_dtype(np.dtype(dtype) if dtype is not None else getattr(data, "dtype", None))
        with self.device_guard(index):
            return self.cupy.asarray(data, dtype=dtype)

    def to_numpy(self, array):
        host = self.cupy.asnumpy(array)
        self.asserts.raise_pending(array.device.id)
        return host

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

    def timing_event(self, index):
        with self.device_guard(index):
            event = self.cupy.cuda.Event()
            event.record()
        return event

    def elapsed_ms(self, start, end):
        end.synchronize()
        return self.cupy.cuda.get_elapsed_time(start, end)

    def new_event(self, index, enable_timing, blocking, interprocess):
        with self.device_guard(index):
            return self.cupy.cuda.Event(block=blocking, disable_timing=not enable_timing, interprocess=interprocess)

    def synchronize(self, index=None):
        with self.device_guard(index):
            self.cupy.cuda.Device().synchronize()
            self.asserts.raise_pending(self.current_index())

    def device_assert(self, bad, error, message, describe=None):
        self.asserts.record(bad, error, message)

    def new_generator(self, seed, index):
        with self.device_guard(index):
            return self.cupy.random.Generator(self.cupy.random.Philox4x3210(seed))

    def permutation(self, rng, n):
        # CuPy's Generator has no permutation: sort random keys, on the device
        return rng.random(n).argsort()

    def generator_state(self, rng):
        # CuPy keeps a cuRAND generator's per-thread states in a device array, ``_state`` (not
        # public API, in CuPy 13 and 14); copying it out synchronises.
        return rng.bit_generator._state.get().tobytes()

    def set_generator_state(self, rng, state):
        target = rng.bit_generator._state
        if len(state) != target.nbytes:
            raise ValueError(f"a state of {len(state)} bytes for a generator of {target.nbytes}")
        target.set(np.frombuffer(state, dtype=target.dtype))

    def elementwise_kernel(self, name, in_params, out_params, operation, host):
        key = (name, in_params, out_params, operation)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = self.cupy.ElementwiseKernel(in_params, out_params, operation, name)
        return kernel

    fused_codegen = "cupy"
    native_low_precision_gemm = True

    def matmul_pair(self, a1, b1, a2, b2):
        # One device queue runs products in order, each on the whole GPU: nothing to pair.
        return None

    def raw_kernel(self, source, name):
        key = ("raw", name, source)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = self.cupy.RawKernel(source, name)
        return kernel

    def scalar_operand(self, value, dtype):
        # CuPy 13 types a Python scalar by its value (uint8 + 300 runs an int16 loop): give it the
        # array's dtype, an out-of-range int wrapping around as in PyTorch.
        if type(value) is int and dtype.kind in "iu":
            return np.array(value & 0xFFFFFFFFFFFFFFFF, np.uint64).astype(dtype)[()]
        return dtype.type(value)

    ipc_supported = True

    def ipc_export(self, array):
        # The offset is taken from the allocation's base, not the pool chunk's (Note [Pooled IPC]
        # in _cuda_memory.py). The queue is synchronised first so that the consumer reads
        # finished data.
        ptr = array.data.ptr
        base, size = self.allocations.containing(ptr)
        with self.device_guard(array.device.id):
            self.cupy.cuda.get_current_stream().synchronize()
            handle = self.cupy.cuda.runtime.ipcGetMemHandle(base)
        return bytes(handle), ptr - base, array.device.id, size

    def ipc_open(self, handle, device_index, size):
        cuda = self.cupy.cuda
        with self.device_guard(device_index):
            ptr = cuda.runtime.ipcOpenMemHandle(handle)
        opened = _cuda_memory.IpcMapping(ptr, cuda.runtime.ipcCloseMemHandle, device_index)
        opened.memory = cuda.UnownedMemory(ptr, size, opened, device_index)
        return opened

    def ipc_array(self, opened, offset, shape, dtype, strides):
        pointer = self.cupy.cuda.MemoryPointer(opened.memory, offset)
        return self.cupy.ndarray(shape, dtype, memptr=pointer, strides=strides)


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


def _assign(dst, src) -> None:
    dst[...] = src


def copy_into(dst, src) -> None:
    """``dst[...] = src`` for arrays of either library, run on ``dst``'s device (from any thread)."""
    backend, index = backend_for_array(dst)
    if not isinstance(src, backend.array_type):
        src = move(src, backend, index)
    backend.launch(index, _assign, dst, src)


def contiguous_copy(array):
    """A C-contiguous copy of ``array`` on its own device (from any thread)."""
    backend, index = backend_for_array(array)
    return backend.launch(index, array.copy)


def empty_like(array, shape, dtype=None):
    """An uninitialised array of ``shape`` with ``array``'s library, device and (by default) dtype."""
    backend, index = backend_for_array(array)
    with backend.device_guard(index):
        return backend.xp.empty(shape, dtype=array.dtype if dtype is None else dtype)


def move(array, target: Backend, index: int | None):
    """Copy ``array`` (of either library) to ``target``'s device ``index``."""
    if target is cpu_backend:
        return backend_for_array(array)[0].to_numpy(array)
    _check_cuda_dtype(array.dtype)
    with target.device_guard(index):
        return target.xp.array(array, copy=True)


_E4M3_MAX = 448.0  # float8_e4m3fn has no infinity; its largest finite value


def astype(xp, array, np_dtype):
    """``array`` converted to ``np_dtype`` (``Tensor.to``). Into float8_e4m3fn, out-of-range values
    and infinities saturate to +-448 as in PyTorch, where ml_dtypes would give NaN."""
    if xp is not np:
        _check_cuda_dtype(np_dtype)
    if np_dtype == _dtype.float8_e4m3fn.numpy and array.dtype.kind in "fV" and array.dtype != np_dtype:
        wide = array.astype(np.float32)
        return xp.clip(wide, -_E4M3_MAX, _E4M3_MAX, out=wide).astype(np_dtype)
    return array.astype(np_dtype)


def round_to(a, np_dtype):
    """Float32 ``a`` with each element rounded to ``np_dtype`` (bfloat16, float16), still float32
    (Note [Autocast convolution] in nn/functional/conv.py)."""
    return a.astype(np_dtype).astype(a.dtype)


def _check_cuda_dtype(np_dtype) -> None:
    """CuPy has no bfloat16 or float8 arrays (it allocates only numpy's own dtypes): refuse them on
    a GPU by name rather than fail inside CuPy."""
    if np_dtype is not None and np_dtype in _dtype.LOW_PRECISION_NUMPY:
        raise TypeError(f"dtype {np_dtype.name} is not supported on cuda devices: CuPy has no "
                        f"{np_dtype.name} arrays; keep such tensors on the cpu, or use float16 on cuda")


# cupyx.scatter_add (CUDA's atomicAdd) takes only these dtypes (int64 from CuPy 14.2).
_ATOMIC_ADD = frozenset(np.dtype(t) for t in (np.int32, np.uint32, np.uint64, np.float16, np.float32, np.float64))


def scatter_add(xp, target, index, values):
    """``target[index] += values`` with repeated indices accumulating (in place).

    On a GPU, dtypes without an atomic add go through one that has one: int64 as uint64 (the
    same bits), smaller ints and bool through int32.
    """
    if xp is np:
        np.add.at(target, index, values)
        return
    import cupyx  # noqa: PLC0415 - only reached with the CuPy backend loaded

    dtype = target.dtype
    if dtype in _ATOMIC_ADD:
        cupyx.scatter_add(target, index, values)
    elif dtype == np.int64:
        cupyx.scatter_add(target.view(np.uint64), index, xp.asarray(values, dtype).view(np.uint64))
    elif dtype.kind == "c":  # no complex atomics: the real and imaginary parts, each a float view
        values = xp.asarray(values, dtype)
        cupyx.scatter_add(target.real, index, values.real)
        cupyx.scatter_add(target.imag, index, values.imag)
    else:
        wide = target.astype(np.int32)
        cupyx.scatter_add(wide, index, xp.asarray(values).astype(np.int32))
        target[...] = wide.astype(dtype)


_SCATTER_UFUNC = {"amax": "maximum", "amin": "minimum", "prod": "multiply"}


def scatter_reduce(xp, target, index, values, reduce: str) -> None:
    """``target[index] = reduce(target[index], values)`` over repeated indices (in place);
    ``reduce`` is "amax", "amin" or "prod".

    CuPy has atomic max/min for 32/64-bit types only and no atomic multiply: the other
    dtypes and "prod" run on the host and are copied back (Note [scatter_reduce on CUDA]).
    """
    ufunc = _SCATTER_UFUNC[reduce]
    if xp is np:
        getattr(np, ufunc).at(target, index, values)
        return
    import cupyx  # noqa: PLC0415 - only reached with the CuPy backend loaded

    if reduce != "prod" and target.dtype in _ATOMIC_ADD and target.dtype != np.float16:
        getattr(cupyx, f"scatter_{reduce[1:]}")(target, index, values)
        return
    # Note [scatter_reduce on CUDA]: correctness first; a segmented kernel would avoid the copy.
    host = xp.asnumpy(target)
    host_index = tuple(xp.asnumpy(i) if isinstance(i, xp.ndarray) else i for i in index)
    getattr(np, ufunc).at(host, host_index, xp.asnumpy(values))
    target[...] = xp.asarray(host)


def check_index_bounds(xp, shape, index: tuple) -> None:
    """Check that no integer array in ``index`` points outside ``shape``.

    numpy raises IndexError by itself; CuPy wraps such indices around silently (a wrong
    answer), so on a GPU each integer array gets a device-side assert (Note [Device-side
    asserts]): an IndexError at the next synchronisation instead of a synchronisation here.
    """
    if xp is np:
        return
    arrays = [part for part in index if isinstance(part, xp.ndarray)]
    masks = sum(part.ndim - 1 for part in arrays if part.dtype.kind == "b")
    consumed = sum(1 for part in index if part is not None and part is not Ellipsis) + masks
    axis = 0
    for part in index:
        if part is Ellipsis:
            axis += len(shape) - consumed
        elif part is not None:
            if isinstance(part, xp.ndarray) and part.dtype.kind in "iu" and part.size:
                size = shape[axis]
                bad = xp.logical_or(part.min() < -size, part.max() >= size)
                cuda_backend().device_assert(
                    bad, IndexError, f"indexing: an index is out of bounds for dimension {axis} with size {size}")
            axis += part.ndim if isinstance(part, xp.ndarray) and part.dtype.kind == "b" else 1


def might_hold(xp, predicate) -> bool:
    """``bool(predicate())`` on the CPU; True without calling it on a GPU, where reading a device
    flag would synchronise. For a fast path taken only when a property of the data is known
    to be absent (no NaN, all finite): the GPU takes the general path instead of waiting."""
    return xp is not np or bool(predicate())


def running_scan(xp, ufunc: str, a):
    """``getattr(np, ufunc).accumulate(a, axis=-1)`` (ufunc: "maximum", "minimum", "logical_or").

    CuPy offers ``ufunc.accumulate`` for selected ufuncs only: on a GPU this is a Hillis-Steele
    scan, log2(n) elementwise steps.
    """
    if xp is np:
        return getattr(np, ufunc).accumulate(a, axis=-1)
    op = getattr(xp, ufunc)
    out = a.copy()
    shift = 1
    while shift < a.shape[-1]:
        out[..., shift:] = op(out[..., shift:], out[..., :-shift])  # the right side is a new array
        shift *= 2
    return out


def linalg_eig(xp, a):
    """``(eigenvalues, eigenvectors)`` of general square matrices (complex).

    CuPy 13 has no ``linalg.eig`` (only the symmetric ``eigh``): on a GPU the matrices are
    solved on the host and the results copied back.
    """
    if xp is np:
        return np.linalg.eig(a)
    values, vectors = np.linalg.eig(xp.asnumpy(a))
    return xp.asarray(values), xp.asarray(vectors)


def on_host(xp, kernel, *arrays):
    """``kernel(np, *arrays)``, for kernels that pick each step from the values of the last (the
    LDL factorisation): on a GPU they run on host copies, one transfer each way, instead of
    syncing at every step; the result comes back to the device."""
    if xp is np:
        return kernel(np, *arrays)
    return xp.asarray(kernel(np, *(xp.asnumpy(a) if isinstance(a, xp.ndarray) else a for a in arrays)))


def lapack(xp):
    """``tensor/_lapack.py`` (LAPACK's getrf/sytrf/sytrs through numpy's bundled OpenBLAS) when
    ``xp`` is numpy and the library has them, else None: the LU and LDL kernels then keep their
    numpy code (a GPU, another numpy build, ``DISTRIB_NO_LAPACK=1``)."""
    return _lapack if xp is np and _lapack.available() else None


def matmul(xp, a, b):
    """``a @ b``; on the CPU a large product is split across the intra-op threads
    (Note [Intra-op matmul] in tensor/_threads.py). Raises what ``matmul`` raises.

    bfloat16 (and float8) operands run in float32 and the product is rounded back (Note
    [Low-precision floats] in tensor/_dtype.py): ml_dtypes' own matmul is a slow scalar loop
    that returns float32, while BLAS's float32 GEMM plus two casts costs little more than the
    float32 product itself, and accumulates in float32 as PyTorch's CPU bfloat16 GEMM does.
    """
    if a.dtype in _dtype.LOW_PRECISION_NUMPY or b.dtype in _dtype.LOW_PRECISION_NUMPY:
        low = a.dtype if a.dtype in _dtype.LOW_PRECISION_NUMPY else b.dtype
        _dtype.check_not_float8(low, "matmul")
        return matmul(xp, a.astype(np.float32), b.astype(np.float32)).astype(low)
    if xp is np:
        return _threads.matmul(a, b)
    return xp.matmul(a, b)


def accumulate(reduce, a, **kwargs):
    """``reduce(a, **kwargs)`` (a sum, product or scan); bfloat16 and float8 inputs accumulate in
    float32 and the result is rounded back, as PyTorch's CPU kernels do (Note [Low-precision
    floats] in tensor/_dtype.py): numpy would accumulate in the 8-bit mantissa itself, where
    256 + 1 is 256. With an explicit ``dtype=`` the result keeps that dtype."""
    if a.dtype not in _dtype.LOW_PRECISION_NUMPY:
        return reduce(a, **kwargs)
    _dtype.check_not_float8(a.dtype, reduce.__name__)
    out = reduce(a.astype(np.float32), **kwargs)
    return out.astype(a.dtype) if kwargs.get("dtype") is None else out


def widen(a):
    """``a`` itself, or for a bfloat16 or float8 array its float32 copy (exact). Kernels that
    add, compare or scatter many elements of a low-precision array run on this copy and round
    the result back once: ml_dtypes' ufuncs take ~2 ns per element against float32's ~0.25, and
    the casts ~0.15 (up) and ~0.75 (down) (Note [Low-precision floats] in tensor/_dtype.py)."""
    return a.astype(np.float32) if a.dtype in _dtype.LOW_PRECISION_NUMPY else a


_EXACT_INT = 1 << 24  # ints a float32 holds exactly: converting one to a.dtype rounds it once


def in_float32(ufunc, a, b):
    """``ufunc(a, b)`` for a bfloat16 or float8 array ``a``: when ``b`` has ``a``'s dtype both are
    widened to float32 and a float result is rounded back to that dtype. Bit-identical to
    ml_dtypes' own loops (which compute each element in float32 and round) for the arithmetic
    and comparison ufuncs, and 1.5x (add, mul) to 8x (comparisons) faster. A Python int ``b``
    (ReLU's backward compares with 0) takes ``a``'s dtype first, as numpy's weak scalars do."""
    if type(b) is int and -_EXACT_INT <= b <= _EXACT_INT:
        b = a.dtype.type(b)
    b_dtype = getattr(b, "dtype", None)
    if b_dtype is None or b_dtype != a.dtype:  # (numpy reads ``dtype == None`` as float64)
        return ufunc(a, b)
    out = ufunc(a.astype(np.float32), b.astype(np.float32))
    return out.astype(a.dtype) if out.dtype == np.float32 else out


def wide_dtype(np_dtype):
    """The dtype ``widen`` gives an array of ``np_dtype``: float32 for bfloat16 and float8."""
    return np.dtype(np.float32) if np_dtype in _dtype.LOW_PRECISION_NUMPY else np_dtype


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


def diagonal_view(xp, array, offset: int, dim1: int, dim2: int):
    """The diagonal ``offset`` of the planes ``(dim1, dim2)`` as a view, writable where ``array``
    is (numpy makes the diagonal's view read-only; CuPy's is writable)."""
    view = array.diagonal(offset, dim1, dim2)
    if xp is np and array.flags.writeable:
        view.flags.writeable = True
    return view


def storage_of(xp, array):
    """``(storage, offset)``: an array spanning ``array``'s storage, and the byte offset of
    ``array``'s first element in it (``Tensor.storage_offset``, ``as_strided``).

    numpy: the array that owns the memory, found through the ``.base`` chain (also past
    as_strided's wrapper objects). CuPy: the allocation (``data.mem``) as bytes, since arrays made
    from a pointer have no ``.base``; CuPy's pool rounds allocations up to 512 bytes, so a storage
    on CUDA may be longer than its tensor (docs/coverage.md)."""
    if xp is not np:
        mem = array.data.mem
        return xp.ndarray((mem.size,), xp.uint8, memptr=xp.cuda.MemoryPointer(mem, 0)), array.data.ptr - mem.ptr
    root, base = array, array.base
    while base is not None:
        if isinstance(base, np.ndarray):
            root = base
        base = getattr(base, "base", None)
    return root, array.__array_interface__["data"][0] - root.__array_interface__["data"][0]


def storage_view(xp, storage, shape, strides, offset: int, dtype):
    """A view of ``storage``'s memory with the given shape, byte strides and byte offset
    (``Tensor.as_strided``). Not checked: the caller keeps it inside the storage's ``nbytes``."""
    if xp is np:
        return np.ndarray(shape, dtype, buffer=storage, offset=offset, strides=strides)
    return xp.ndarray(shape, dtype, memptr=storage.data + offset, strides=strides)


def xor_reduce_last(xp, a):
    """The bitwise xor of ``a``'s integers along its last axis (``hash_tensor``): numpy's ufunc
    reduction; on CuPy, whose ufuncs have no ``reduce``, by halving the axis."""
    if xp is np:
        return np.bitwise_xor.reduce(a, axis=-1)
    while a.shape[-1] > 1:
        if a.shape[-1] % 2:
            a = xp.concatenate([a, xp.zeros(a.shape[:-1] + (1,), a.dtype)], axis=-1)
        half = a.shape[-1] // 2
        a = xp.bitwise_xor(a[..., :half], a[..., half:])
    return a[..., 0] if a.shape[-1] else xp.zeros(a.shape[:-1], a.dtype)


_FORKED = "this process was forked from one that had initialised CUDA, and CUDA does not survive fork"
_forked_after_init = [False]


@functools.lru_cache(maxsize=1)
def _load_cupy():
    if _forked_after_init[0]:
        return None, _FORKED
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
    if cupy is None and reason is _FORKED:
        raise RuntimeError(f"CUDA cannot be used here: {reason}. help: start this process with the 'spawn' "
                           "(or 'forkserver') start method, e.g. DataLoader(..., multiprocessing_context='spawn')")
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
    """True once this process initialised CUDA, if only to count the devices (``is_available``):
    CUDA then does not survive ``fork``."""
    return _load_cupy.cache_info().currsize > 0 and _load_cupy()[0] is not None


def with_current_device(fn):
    """``fn`` bound to the calling thread's CUDA device: run later on another thread (a process
    group's worker, where CUDA's current device starts at 0), it runs with that device current,
    as it would have here. ``fn`` itself when this process never initialised CUDA."""
    if not cuda_initialized():
        return fn
    backend = cuda_backend()
    return functools.partial(backend.launch, backend.current_index(), fn)


def _forget_cuda_after_fork() -> None:
    # In a forked child of a process that initialised CUDA, every CUDA request fails with our
    # message (check_cuda_available) instead of the driver's, even through cached backends.
    if not cuda_initialized():
        return
    _forked_after_init[0] = True
    _load_cupy.cache_clear()
    cuda_backend.cache_clear()
    from ._device import device  # noqa: PLC0415 - _device imports this module

    for dev in list(device._interned.values()):
        if dev.type == "cuda":
            dev._backend = None


os.register_at_fork(after_in_child=_forget_cuda_after_fork)


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
