"""Streams and events, with the ordering our code relies on.

Kernels of the stand-in run on the host when launched, so a stream is only a queue of
*pending work*: NCCL operations, which progress on their own threads. An op launched on a
stream waits for the work pending there first (and the legacy null stream for blocking
streams, as CUDA does); an event recorded on a stream is done when the work pending there at
record time is. A stream and an event belong to the device current when they were made;
recording an event on another device's stream is CUDA's invalid-handle error.
"""

from __future__ import annotations

import itertools
import threading
import time

from .. import _state

streamLegacy = 1
streamPerThread = 2
_handles = itertools.count(0x5000)
_lock = threading.Lock()
_streams: dict[int, tuple[int, bool]] = {}  # handle -> (device, blocking) for created streams
_pending: dict[tuple[int, int], list] = {}  # (device, handle) -> works not known to be done


class Work:
    """Pending device work (a queued NCCL operation): done once ``finish`` is called."""

    def __init__(self) -> None:
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        """True once the work has finished."""
        return self._done.is_set()

    def finish(self) -> None:
        """Mark the work finished (wakes its waiters)."""
        self._done.set()

    def wait(self) -> None:
        """Block until the work has finished."""
        self._done.wait()


def _key(handle: int, device_id: int | None = None) -> tuple[int, int]:
    """The queue a stream handle names: created streams know their device, the null stream and
    the per-thread stream belong to the device current in the calling thread."""
    known = _streams.get(handle)
    if known is not None:
        return known[0], handle
    if handle in (0, streamLegacy):
        return (_state.get_device() if device_id is None else device_id), 0
    if handle == streamPerThread:
        return (_state.get_device() if device_id is None else device_id), -threading.get_ident()
    raise _state.CUDARuntimeError(400, "cudaErrorInvalidResourceHandle", "invalid resource handle")


def dependencies(handle: int, device_id: int | None = None) -> list:
    """The unfinished work the next operation on stream ``handle`` must wait for."""
    if not _pending:
        return []
    device, ident = _key(handle, device_id)
    keys = [(device, ident)]
    if ident == 0:  # the legacy stream waits for every blocking stream of its device
        keys += [(device, h) for h, (d, blocking) in list(_streams.items()) if d == device and blocking]
    elif _streams.get(ident, (0, False))[1]:
        keys.append((device, 0))
    with _lock:
        out = []
        for key in keys:
            works = _pending.get(key)
            if works:
                works[:] = [w for w in works if not w.done]
                out += works
                if not works:
                    del _pending[key]
        return out


def enqueue(handle: int, work: Work, device_id: int | None = None) -> None:
    """Put ``work`` on stream ``handle``: later operations there wait for it."""
    key = _key(handle, device_id)
    with _lock:
        _pending.setdefault(key, []).append(work)


def wait_for(handle: int, device_id: int | None = None) -> None:
    """Block until the work pending on stream ``handle`` is done (a kernel launch does this)."""
    for work in dependencies(handle, device_id):
        work.wait()


def wait_device(device_id: int) -> None:
    """Block until all work pending on any stream of ``device_id`` is done."""
    with _lock:
        works = [w for (d, _), ws in _pending.items() if d == device_id for w in ws]
    for work in works:
        work.wait()


class _ThreadStreams(threading.local):
    def __init__(self) -> None:
        self.current: dict[int, _BaseStream] = {}
        self.stack: list[tuple[int, _BaseStream]] = []


_tls = _ThreadStreams()


def get_current_stream(device_id: int = -1):
    """This thread's current stream on ``device_id`` (the current device by default)."""
    if device_id == -1:
        device_id = _state.get_device()
    return _tls.current.get(device_id, Stream.null)


def get_current_stream_ptr() -> int:
    """The handle of this thread's current stream on the current device."""
    return get_current_stream().ptr


def _check_device_match(device_id: int) -> int:
    current = _state.get_device()
    if device_id == -1:
        return current
    if device_id != current:
        raise RuntimeError(f"The device that the stream is created on ({device_id}) does not match "
                           f"with the current device ({current})")
    return device_id


class _BaseStream:
    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr, self.device_id = ptr, device_id

    def __eq__(self, other) -> bool:
        return isinstance(other, _BaseStream) and self.ptr == other.ptr

    def __hash__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.ptr} (device {self.device_id})>"

    def __enter__(self):
        device_id = _check_device_match(self.device_id)
        _tls.stack.append((device_id, get_current_stream(device_id)))
        _tls.current[device_id] = self
        return self

    def __exit__(self, *exc) -> None:
        device_id, previous = _tls.stack.pop()
        _tls.current[device_id] = previous

    def use(self):
        """Make this stream current in this thread."""
        _tls.current[_check_device_match(self.device_id)] = self
        return self

    @property
    def done(self) -> bool:
        """True if all work queued on this stream is done."""
        return not dependencies(self.ptr, self._device())

    def synchronize(self) -> None:
        """Wait for all work queued on this stream."""
        _state.declare_synchronize()
        wait_for(self.ptr, self._device())

    def record(self, event=None):
        """Record ``event`` (a new one by default) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event) -> None:
        """Make future work on this stream wait for ``event``."""
        _state.trace("wait", self.ptr, event.ptr)
        for work in event._works:
            enqueue(self.ptr, work, self._device())

    def _device(self) -> int | None:
        return None if self.device_id == -1 else self.device_id


class Stream(_BaseStream):
    """A CUDA stream on the current device (``null=True``: the legacy default stream)."""

    null: Stream
    ptds: Stream

    def __init__(self, null=False, non_blocking=False, ptds=False) -> None:
        if null:
            ptr, device_id = 0, -1
        elif ptds:
            ptr, device_id = streamPerThread, -1
        else:
            device_id = _state.get_device()
            ptr = next(_handles)
            _streams[ptr] = (device_id, not non_blocking)
        super().__init__(ptr, device_id)


class ExternalStream(_BaseStream):
    """A stream made elsewhere, by handle (its device is looked up when it is used)."""

    def __init__(self, ptr: int, device_id: int = -1) -> None:
        super().__init__(ptr, device_id)


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


class Event:
    """A CUDA event on the device current at creation."""

    def __init__(self, block=False, disable_timing=False, interprocess=False) -> None:
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        self.device_id = _state.get_device()
        self.ptr = next(_handles)
        self._works: list = []
        self._timing = not disable_timing
        self._recorded_at: float | None = None  # host time of the record: the stand-in's event clock

    @property
    def done(self) -> bool:
        """True once the work before the record is done."""
        return all(w.done for w in self._works)

    def record(self, stream=None) -> None:
        """Capture the work queued on ``stream`` (the current one by default)."""
        stream = get_current_stream() if stream is None else stream
        device, _ = _key(stream.ptr, None if stream.device_id == -1 else stream.device_id)
        if device != self.device_id:
            raise _state.CUDARuntimeError(400, "cudaErrorInvalidResourceHandle",
                                          f"invalid resource handle (event of device {self.device_id} "
                                          f"recorded on a stream of device {device})")
        self._works = dependencies(stream.ptr, device)
        self._recorded_at = time.perf_counter()
        _state.trace("record", self.ptr, stream.ptr)

    def synchronize(self) -> None:
        """Wait until the event is done."""
        _state.declare_synchronize()
        for work in self._works:
            work.wait()


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """Milliseconds between two recorded events (CuPy's ``cupy.cuda.get_elapsed_time``); here the
    host time between the two records.

    Raises:
        CUDARuntimeError: for an event made with ``disable_timing=True`` or never recorded
            (cudaErrorInvalidResourceHandle), or one whose work is still pending (cudaErrorNotReady).
    """
    for event in (start_event, end_event):
        if not event._timing or event._recorded_at is None:
            raise _state.CUDARuntimeError(400, "cudaErrorInvalidResourceHandle", "invalid resource handle")
        if not event.done:
            raise _state.CUDARuntimeError(600, "cudaErrorNotReady", "device not ready")
    return (end_event._recorded_at - start_event._recorded_at) * 1000.0
