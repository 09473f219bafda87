"""Process and thread state of the stand-in: emulated devices, the current device, fork poisoning,
and the synchronisation counter.

CUDA's current device is per thread and starts at 0 in every new thread, whatever the main
thread chose; CUDA does not survive ``fork`` once initialised in the parent. Both are modelled
here because our code has gone wrong on both.
"""

from __future__ import annotations

import os
import threading


def _visible_devices() -> list[int]:
    """The emulated devices this process sees, as CUDA does: all of them, or the ids listed in
    CUDA_VISIBLE_DEVICES up to the first that is not a device."""
    total = int(os.environ.get("DISTRIB_CUPY_STANDIN_DEVICES", "2"))
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return list(range(total))
    visible: list[int] = []
    for entry in listed.split(","):
        if not entry.strip().isdigit() or int(entry) >= total or int(entry) in visible:
            break
        visible.append(int(entry))
    return visible


VISIBLE = _visible_devices()  # visible index -> the emulated ("physical") device
DEVICE_COUNT = len(VISIBLE)


class CUDARuntimeError(RuntimeError):
    """A failed CUDA runtime call, as ``cupy_backends.cuda.api.runtime.CUDARuntimeError``."""

    def __init__(self, status: int, name: str, message: str) -> None:
        self.status = status
        super().__init__(f"{name}: {message}")


class DeviceSynchronized(RuntimeError):
    """Raised when a synchronisation happens inside ``cupyx.allow_synchronize(False)``."""

    def __init__(self, message=None) -> None:
        super().__init__(message or "Device synchronization was detected while disallowed.")


class _Thread(threading.local):
    def __init__(self) -> None:
        self.device = 0
        self.device_stack: list[int] = []
        self.allow_synchronize = True


thread = _Thread()
_initialised = [False]
_poisoned = [False]
_sync_lock = threading.Lock()
_syncs = [0]


def _after_fork_in_child() -> None:
    if _initialised[0]:
        _poisoned[0] = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def check_usable() -> None:
    """Mark CUDA initialised; raise as CUDA does in a forked child of an initialised parent."""
    if _poisoned[0]:
        raise CUDARuntimeError(3, "cudaErrorInitializationError", "initialization error")
    _initialised[0] = True


def check_device_id(device_id: int) -> int:
    """``device_id`` if it names an emulated device, else CUDA's invalid-device error."""
    if not isinstance(device_id, int) or not 0 <= device_id < DEVICE_COUNT:
        raise CUDARuntimeError(101, "cudaErrorInvalidDevice", "invalid device ordinal")
    return device_id


def get_device() -> int:
    """This thread's current device (0 in a thread that never chose one)."""
    check_usable()
    return thread.device


def set_device(device_id: int) -> None:
    """Make ``device_id`` this thread's current device."""
    check_usable()
    thread.device = check_device_id(int(device_id))


def declare_synchronize() -> None:
    """Count one host synchronisation; raise if this thread disallowed them."""
    if not thread.allow_synchronize:
        raise DeviceSynchronized()
    with _sync_lock:
        _syncs[0] += 1


def synchronizations() -> int:
    """How many host synchronisations this process has made so far."""
    return _syncs[0]


_elementwise = [0]


def count_elementwise_launch() -> None:
    """Count one ``ElementwiseKernel`` launch."""
    with _sync_lock:
        _elementwise[0] += 1


def elementwise_launches() -> int:
    """How many ``ElementwiseKernel`` launches this process has made so far."""
    return _elementwise[0]


_trace: list[list] = []  # the open traces (see start_trace)


def start_trace() -> list:
    """A list that, until ``stop_trace``, collects what this process does with streams and
    NCCL, in order: ``("record", event, stream)``, ``("wait", stream, event)`` and
    ``("nccl", op, stream)`` (handles are ints), so a test can check which stream an
    operation was queued on and what that stream waited for."""
    entries: list = []
    _trace.append(entries)
    return entries


def stop_trace(entries: list) -> None:
    """Stop collecting into ``entries`` (from ``start_trace``)."""
    _trace.remove(entries)


def trace(*entry) -> None:
    """Add ``entry`` to every open trace."""
    with _sync_lock:
        for entries in _trace:
            entries.append(entry)
