"""``tensor.cuda``: CUDA device queries, streams and memory statistics (via CuPy).

Every function works without CuPy: queries answer "no GPU", and calls that
need a GPU raise RuntimeError saying how to install one. A device argument may be
an index, ``"cuda:N"``, a ``tensor.device`` or None/``"cuda"``: the current device.
"""

from __future__ import annotations

import weakref

from . import _backend, _random
from ._device import device as _make_device
from .profiler import _live

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "synchronize", "Stream",
    "current_stream", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "reset_peak_memory_stats", "empty_cache", "get_device_name", "manual_seed", "manual_seed_all",
    "memory_summary", "is_bf16_supported",
]


def is_available() -> bool:
    """True when CuPy is installed and a CUDA device is present."""
    return _backend.cuda_available()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: CuPy has no bfloat16 arrays, so CUDA tensors here cannot hold bfloat16 (creating one
    raises); programs that ask first, as nanoGPT's does, fall back to float16."""
    return False


def device_count() -> int:
    """The number of CUDA devices (0 without CuPy or a GPU)."""
    if not is_available():
        return 0
    return _backend.cupy_module().cuda.runtime.getDeviceCount()


def current_device() -> int:
    """The index of this thread's current CUDA device."""
    return _backend.cuda_backend().current_index()


def _index(device) -> int:
    """The device index ``device`` names (the current device for None or a bare ``"cuda"``).

    Raises:
        ValueError: for a CPU device.
    """
    if device is None:
        return current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    resolved = _make_device(device)
    if resolved.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {resolved}")
    return current_device() if resolved.index is None else resolved.index


def set_device(device) -> None:
    """Make ``device`` this thread's current CUDA device."""
    _backend.cupy_module().cuda.Device(_index(device)).use()


def get_device_name(device=None) -> str:
    """The marketing name of a CUDA device."""
    props = _backend.cupy_module().cuda.runtime.getDeviceProperties(_index(device))
    return props["name"].decode()


def synchronize(device=None) -> None:
    """Wait for all queued work on ``device`` (the current one by default)."""
    _backend.cuda_backend().synchronize(_index(device))
    _release_done()


def manual_seed(seed: int, device=None) -> None:
    """Seed the random generator of ``device`` (the current one by default); its numbers are
    made on the device (Note [Random numbers per device] in tensor/_random.py)."""
    _random.seed_device(_make_device("cuda", _index(device)), seed)


def manual_seed_all(seed: int) -> None:
    """Seed the random generator of every GPU."""
    for index in range(device_count()):
        manual_seed(seed, index)


class Stream:
    """A CUDA stream on ``device`` (the current one by default); as a context manager it becomes
    the current stream, and its device the current device, as in PyTorch.

    Raises:
        RuntimeError: for a ``priority`` the installed CuPy cannot set.
    """

    def __init__(self, device=None, priority: int = 0) -> None:
        index = _index(device)
        self._stream = _backend.cuda_backend().new_stream(index, priority)
        self.device = _make_device("cuda", index)
        self.priority = priority
        self._entered: list = []

    @classmethod
    def _wrap(cls, stream, index: int) -> Stream:
        out = cls.__new__(cls)
        out._stream, out.device, out.priority, out._entered = stream, _make_device("cuda", index), 0, []
        return out

    def synchronize(self) -> None:
        """Wait until all work queued on this stream is done.

        Raises:
            IndexError (or the failed check's error): a device-side assert that failed since
                the last synchronisation (Note [Device-side asserts]).
        """
        self._stream.synchronize()
        _backend.cuda_backend().asserts.raise_pending(self.device.index)

    def query(self) -> bool:
        """True if all queued work is done."""
        return self._stream.done

    def wait_stream(self, other: Stream) -> None:
        """Make future work on this stream wait for work queued so far on ``other``."""
        with _backend.cuda_backend().device_guard(other.device.index):
            event = other._stream.record()  # an event belongs to its stream's device
        self._stream.wait_event(event)

    def __enter__(self) -> Stream:
        guard = _backend.cuda_backend().device_guard(self.device.index)
        guard.__enter__()
        self._stream.__enter__()
        self._entered.append(guard)
        return self

    def __exit__(self, *exc) -> None:
        self._stream.__exit__(*exc)
        self._entered.pop().__exit__(*exc)


# Note [record_stream]
#     PyTorch's caching allocator hands a freed block out again at once to work on the stream it
#     was allocated on; a tensor used on another stream is marked with ``record_stream(s)`` so
#     that, when it is freed, its block waits for the work queued on ``s`` by then. CuPy's pool
#     reuses freed memory the same way, so ``record_stream`` keeps the tensor's array alive after
#     the tensor is freed, until an event recorded on ``s`` at that moment has completed. Arrays
#     whose events are done are let go at the next ``record_stream``, ``synchronize`` or
#     ``empty_cache``.
_held: list = []  # (event recorded when the tensor was freed, its array)


def record_stream(t, stream) -> None:
    """Keep ``t``'s memory from being reused, once ``t`` is freed, until the work queued on
    ``stream`` by then is done (Note [record_stream]); ``Tensor.record_stream``.

    Raises:
        RuntimeError: for a tensor that is not on a GPU.
        TypeError: for a ``stream`` that is not a CUDA stream.
    """
    if t.device.type != "cuda":
        raise RuntimeError(f"record_stream expects a CUDA tensor, got one on {t.device}")
    stream = getattr(stream, "_cuda", stream)  # a tensor.Stream on cuda wraps one of these
    if not isinstance(stream, Stream):
        raise TypeError(f"record_stream expects a CUDA stream, got {type(stream).__name__}")
    _release_done()
    weakref.finalize(t, _hold_until_done, t._data, stream)


def _hold_until_done(array, stream: Stream) -> None:
    with _backend.cuda_backend().device_guard(stream.device.index):
        _held.append((stream._stream.record(), array))


def _release_done() -> None:
    _held[:] = [(event, array) for event, array in _held if not event.done]


def current_stream(device=None) -> Stream:
    """The stream that new work on ``device`` goes to (in this thread)."""
    index = _index(device)
    return Stream._wrap(_backend.cupy_module().cuda.get_current_stream(index), index)


def memory_allocated(device=None) -> int:
    """Bytes occupied by live tensors on ``device`` (0 without a GPU)."""
    return _backend.cuda_backend().pool_bytes(_index(device))[0] if is_available() else 0


def max_memory_allocated(device=None) -> int:
    """The peak of ``memory_allocated`` since start or the last reset (0 without a GPU)."""
    return _backend.cuda_backend().peak_bytes(_index(device)) if is_available() else 0


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator on ``device`` (0 without a GPU)."""
    return _backend.cuda_backend().pool_bytes(_index(device))[1] if is_available() else 0


def reset_peak_memory_stats(device=None) -> None:
    """Restart the peak tracked by ``max_memory_allocated``."""
    if is_available():
        _backend.cuda_backend().reset_peak(_index(device))


def empty_cache() -> None:
    """Release cached, unused GPU memory to the driver."""
    if is_available():
        _release_done()
        _backend.cuda_backend().free_cached()


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A printable summary of ``device``'s memory (as ``torch.cuda.memory_summary``)."""
    index = _index(device) if is_available() else 0
    lines = [
        f"distrib CUDA memory summary, device {index}",
        f"  allocated: {memory_allocated(index)} bytes",
        f"  peak:      {max_memory_allocated(index)} bytes",
        f"  reserved:  {memory_reserved(index)} bytes",
    ]
    if not abbreviated:  # the largest tensors recorded by tensor._memory_snapshot._record_memory_history
        blocks = [b for b in _live.live.blocks.values() if b["device"].startswith("cuda")]
        for block in sorted(blocks, key=lambda b: b["size"], reverse=True)[:10]:
            lines.append(f"  {block['size']:>12} bytes  {block['dtype']} {block['shape']}")
    return "\n".join(lines)


def __getattr__(name: str):
    """``tensor.cuda.amp`` (the deprecated spellings of ``tensor.amp``, tensor/amp/_deprecated.py)
    and ``tensor.cuda.memory`` (the memory recorder, tensor/_memory_snapshot.py), loaded on first
    use since both import this module."""
    if name == "amp":
        from .amp import _deprecated  # noqa: PLC0415 - a cycle at import time otherwise

        return _deprecated.cuda
    if name == "memory":  # torch.cuda.memory._record_memory_history / _snapshot / _dump_snapshot
        from . import _memory_snapshot  # noqa: PLC0415 - it imports this module

        return _memory_snapshot
    raise AttributeError(f"module 'tensor.cuda' has no attribute {name!r}")
