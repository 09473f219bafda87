"""``tensor.Stream`` and ``tensor.Event``: PyTorch's device-generic streams and events (issue 16).

On ``cuda`` a Stream wraps a ``tensor.cuda.Stream`` and an Event a device event (made by the
backend seam, ``Backend.new_event``). On the ``cpu`` work runs in order in the caller's thread,
so, as in PyTorch, a cpu Stream is always done (``query()`` is True, ``synchronize`` returns at
once), and a cpu Event cannot be recorded ("cpu backend doesn't support events").
Without a device argument both take the current accelerator (``cuda`` when a GPU is present),
else the cpu.
"""

from __future__ import annotations

from . import accelerator, cuda
from ._device import device as _device_cls

__all__ = ["Event", "Stream"]

_DEVICE_TYPE_IDS = {"cpu": 0, "cuda": 1}  # PyTorch's DeviceType enum values, which .device_type returns
_NO_CPU_EVENTS = "cpu backend doesn't support events."


def _resolve(device) -> _device_cls:
    """The device named by ``device`` (None: the current accelerator, else the cpu), with a cuda
    index filled in from the current device."""
    dev = _device_cls(device if device is not None else accelerator.current_accelerator() or "cpu")
    if dev.type == "cuda" and dev.index is None:
        dev = _device_cls("cuda", cuda.current_device())
    return dev


class Stream:
    """An in-order queue of device work (``torch.Stream``); as a context manager it becomes the
    current stream of its device.

    >>> import tensor
    >>> s = tensor.Stream("cpu")
    >>> s.query()
    True

    Raises:
        RuntimeError: for an unknown device type, or a ``priority`` CuPy cannot set.
    """

    def __init__(self, device=None, *, priority: int = 0) -> None:
        self.device = _resolve(device)
        self._cuda = cuda.Stream(self.device, priority) if self.device.type == "cuda" else None

    @property
    def device_type(self) -> int:
        """PyTorch's number of the device type (0: cpu, 1: cuda)."""
        return _DEVICE_TYPE_IDS[self.device.type]

    @property
    def device_index(self) -> int:
        """The device's index (-1 for the cpu)."""
        return -1 if self.device.index is None else self.device.index

    @property
    def stream_id(self) -> int:
        """The stream's handle (0 for the cpu stream)."""
        return 0 if self._cuda is None else int(self._cuda._stream.ptr)

    def query(self) -> bool:
        """True if all work queued on this stream is done."""
        return True if self._cuda is None else self._cuda.query()

    def synchronize(self) -> None:
        """Wait until all work queued on this stream is done."""
        if self._cuda is not None:
            self._cuda.synchronize()

    def wait_event(self, event: Event) -> None:
        """Make future work on this stream wait for ``event`` (a no-op for a never-recorded event)."""
        if self._cuda is not None and event._recorded:
            self._cuda._stream.wait_event(event._event)

    def wait_stream(self, stream: Stream) -> None:
        """Make future work on this stream wait for the work queued so far on ``stream``.

        Raises:
            RuntimeError: on the cpu, which has no events to wait through (as PyTorch).
        """
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one by default) on this stream; returns it.

        Raises:
            RuntimeError: on the cpu (no events).
        """
        event = Event(self.device) if event is None else event
        event.record(self)
        return event

    def __enter__(self) -> Stream:
        if self._cuda is not None:
            self._cuda.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._cuda is not None:
            self._cuda.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and (self.device, self.stream_id) == (other.device, other.stream_id)

    def __hash__(self) -> int:
        return hash((str(self.device), self.stream_id))

    def __repr__(self) -> str:
        return (
            f"tensor.Stream device_type={self.device.type}, device_index={self.device_index}, "
            f"stream_id={self.stream_id}"
        )


class Event:
    """A marker in a stream, to wait for or to time device work (``torch.Event``).

    ``blocking`` and ``interprocess`` are passed to the device event (PyTorch documents them as
    no-ops).

    Raises:
        RuntimeError: for an unknown device type.
    """

    def __init__(
        self, device=None, *, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.device = _resolve(device)
        self.enable_timing = enable_timing
        self._event = self.device.backend.new_event(self.device.index, enable_timing, blocking, interprocess)
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        """Record the work queued so far on ``stream`` (the device's current stream by default).

        Raises:
            RuntimeError: on the cpu (no events), or for a stream of another device.
        """
        if self._event is None:
            raise RuntimeError(_NO_CPU_EVENTS)
        if stream is not None and stream.device != self.device:
            raise RuntimeError(f"Event device {self.device} does not match recording stream's device {stream.device}.")
        native = (cuda.current_stream(self.device) if stream is None else stream._cuda)._stream
        self._event.record(native)
        self._recorded = True

    def query(self) -> bool:
        """True once the recorded work is done (always for an unrecorded or cpu event)."""
        return not self._recorded or bool(self._event.done)

    def synchronize(self) -> None:
        """Wait until the recorded work is done."""
        if self._recorded:
            self._event.synchronize()

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on ``stream`` (the device's current stream by default) wait for this event."""
        if self._recorded:
            native = (cuda.current_stream(self.device) if stream is None else stream._cuda)._stream
            native.wait_event(self._event)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event's record and ``end_event``'s (waits for ``end_event``).

        Raises:
            ValueError: unless both events were made with ``enable_timing=True`` and recorded.
        """
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self.device.backend.elapsed_ms(self._event, end_event._event)

    def ipc_handle(self):
        """Not supported (nor in PyTorch's ``torch.Event``).

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("tensor.Event ipc is not supported yet, please open an issue if you need this!")

    def __repr__(self) -> str:
        index = -1 if self.device.index is None else self.device.index
        return f"tensor.Event device_type={self.device.type}, device_index={index}"
