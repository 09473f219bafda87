"""The NCCL seam: ``cupy.cuda.nccl`` and the CUDA stream/event calls the ``nccl`` backend needs.

Like ``_backend``, this is a place that knows about CuPy; it imports cleanly without it
(CuPy loads on the first call, through ``_backend``). Buffers cross as integer device
pointers and streams as integer handles, which is what ``cupy.cuda.nccl`` takes.
"""

from __future__ import annotations

import numpy as np

from . import _backend

__all__ = [
    "nccl_module",
    "DTYPES",
    "unique_id",
    "communicator",
    "current_device",
    "array_device",
    "current_stream",
    "new_stream",
    "stream_handle",
    "on_device",
    "data_ptr",
    "record_event",
    "stream_wait",
    "event_done",
    "group_start",
    "group_end",
    "empty",
    "to_device",
    "to_host",
]

# NCCL datatype codes (ncclDataType_t). bfloat16 (9) has no numpy dtype here.
DTYPES = {
    np.dtype(np.int8): 0,
    np.dtype(np.uint8): 1,
    np.dtype(np.int32): 2,
    np.dtype(np.uint32): 3,
    np.dtype(np.int64): 4,
    np.dtype(np.uint64): 5,
    np.dtype(np.float16): 6,
    np.dtype(np.float32): 7,
    np.dtype(np.float64): 8,
}
# ncclRedOp_t
OPS = {"SUM": 0, "PROD": 1, "MAX": 2, "MIN": 3, "AVG": 4}


def nccl_module():
    """``cupy.cuda.nccl``; RuntimeError naming the reason when CUDA or NCCL is unusable."""
    try:
        nccl = _backend.cupy_submodule("cuda.nccl")
    except ImportError as exc:
        raise RuntimeError(
            f"CuPy cannot load NCCL ({exc}). help: install a CuPy wheel "
            "with NCCL (e.g. cupy-cuda12x) and the nvidia-nccl-cu12 package, or use "
            "backend='zmq'"
        ) from exc
    if not getattr(nccl, "available", True):
        raise RuntimeError(
            "CuPy was built without NCCL support. help: install a CuPy wheel with NCCL, or use backend='zmq'"
        )
    return nccl


def unique_id():
    """A new NCCL unique id (bytes in CuPy 14, a tuple of ints before: treat it as opaque)."""
    return nccl_module().get_unique_id()


def communicator(size: int, uid, rank: int):
    """An ``NcclCommunicator`` on the current device (blocks until all ``size`` ranks join)."""
    return nccl_module().NcclCommunicator(size, uid, rank)


def current_device() -> int:
    return _backend.cuda_backend().current_index()


def array_device(array) -> int:
    return _backend.cuda_backend().device_index(array)


def current_stream(device: int):
    """This thread's current CUDA stream on ``device`` (the caller's work is ordered on it)."""
    return _backend.cupy_module().cuda.get_current_stream(device)


def new_stream(device: int):
    """A new non-blocking stream on ``device`` (it does not order after the legacy default stream)."""
    return _backend.cuda_backend().new_stream(device, 0)


def on_device(device: int):
    """A context manager that makes ``device`` current in this thread."""
    return _backend.cuda_backend().device_guard(device)


def stream_handle(stream) -> int:
    """The integer handle of ``stream`` (what ``cupy.cuda.nccl`` takes)."""
    return stream.ptr


def data_ptr(array) -> int:
    return _backend.cuda_backend().data_ptr(array)


def record_event(stream):
    """An event recorded on ``stream`` now, on the stream's device (current in the caller)."""
    event = _backend.cupy_module().cuda.Event(disable_timing=True)
    event.record(stream)
    return event


def stream_wait(stream, event) -> None:
    """Make later work on ``stream`` wait for ``event`` (the host does not wait)."""
    stream.wait_event(event)


def event_done(event) -> bool:
    """Whether the work before ``event`` is done (a query: the host does not wait)."""
    return bool(event.done)


def group_start() -> None:
    nccl_module().groupStart()


def group_end() -> None:
    nccl_module().groupEnd()


def to_device(host: np.ndarray, device: int):
    """A copy of a host array on ``device``."""
    return _backend.cuda_backend().asarray(host, None, device)


def to_host(array) -> np.ndarray:
    """A host copy of a device array (synchronises)."""
    return _backend.cuda_backend().to_numpy(array)


def empty(count: int, dtype, device: int):
    """An uninitialised device array on ``device``."""
    cupy = _backend.cupy_module()
    with cupy.cuda.Device(device):
        return cupy.empty(count, dtype=dtype)
