"""``tensor.cuda``: CUDA device queries, streams and memory statistics (via CuPy).

Every function works without CuPy: queries answer "no GPU", and calls that
need a GPU raise RuntimeError saying how to install one.
"""

from __future__ import annotations

from . import _backend

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "synchronize", "Stream",
    "current_stream", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "reset_peak_memory_stats", "empty_cache", "get_device_name",
]


def is_available() -> bool:
    """True when CuPy is installed and a CUDA device is present."""
    return _backend.cuda_available()


def device_count() -> int:
    """The number of CUDA devices (0 without CuPy or a GPU)."""
    if not is_available():
        return 0
    return _backend.cupy_module().cuda.runtime.getDeviceCount()


def current_device() -> int:
    """The index of the current CUDA device."""
    return _backend.cuda_backend().current_index()


def set_device(device) -> None:
    """Make ``device`` (an int, ``"cuda:N"`` or a device) the current CUDA device."""
    from ._device import device as make_device  # noqa: PLC0415 - keeps this module importable first

    index = device if isinstance(device, int) else make_device(device).index or 0
    _backend.cupy_module().cuda.Device(index).use()


def get_device_name(device=None) -> str:
    """The marketing name of a CUDA device."""
    index = current_device() if device is None else int(str(device).split(":")[-1])
    props = _backend.cupy_module().cuda.runtime.getDeviceProperties(index)
    return props["name"].decode()


def synchronize(device=None) -> None:
    """Wait for all queued work on ``device`` (the current one by default)."""
    index = None if device is None else int(str(device).split(":")[-1])
    _backend.cuda_backend().synchronize(index)


class Stream:
    """A CUDA stream; usable as a context manager that makes it current."""

    def __init__(self, device=None, priority: int = 0) -> None:
        cupy = _backend.cupy_module()
        self._stream = cupy.cuda.Stream(non_blocking=True)

    def synchronize(self) -> None:
        """Wait until all work queued on this stream is done."""
        self._stream.synchronize()

    def query(self) -> bool:
        """True if all queued work is done."""
        return self._stream.done

    def wait_stream(self, other: Stream) -> None:
        """Make future work on this stream wait for work queued so far on ``other``."""
        self._stream.wait_event(other._stream.record())

    def __enter__(self) -> Stream:
        self._stream.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._stream.__exit__(*exc)


def current_stream(device=None) -> Stream:
    """The stream that new work goes to."""
    stream = Stream.__new__(Stream)
    stream._stream = _backend.cupy_module().cuda.get_current_stream()
    return stream


def _pool():
    return _backend.cupy_module().get_default_memory_pool()


def memory_allocated(device=None) -> int:
    """Bytes occupied by live tensors (0 without a GPU)."""
    return _pool().used_bytes() if is_available() else 0


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since start or the last reset (0 without a GPU)."""
    return _backend.cuda_backend().peak_bytes() if is_available() else 0


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator (0 without a GPU)."""
    return _pool().total_bytes() if is_available() else 0


def reset_peak_memory_stats(device=None) -> None:
    """Restart the peak tracked by ``max_memory_allocated``."""
    if is_available():
        _backend.cuda_backend().reset_peak()


def empty_cache() -> None:
    """Release cached, unused GPU memory to the driver."""
    if is_available():
        _pool().free_all_blocks()
