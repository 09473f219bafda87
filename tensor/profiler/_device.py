"""``ProfilerActivity.CUDA``: the device time of each op on a GPU, from events around it.

While recording, each op on a device whose backend has timing events (the seam's
``timing_event``; none on the CPU) gets one recorded before its kernel and one after. When the
recording ends, the events are read: an op's device time is the time between its two, and it
is placed on the timeline at the host time of the device's first event plus the device time
since that event, on a row of its own per device (category ``kernel``).
"""

from __future__ import annotations

__all__ = ["DeviceTimer"]


class DeviceTimer:
    """Pairs of timing events per op, turned into ``kernel`` events by ``collect``."""

    def __init__(self) -> None:
        self.anchors: dict = {}  # device -> (event, host ns at its record)
        self.pending: list = []  # (name, device, start event, end event)

    def begin(self, device, host_ns: int):
        """Record the start event of an op on ``device``; None for a device without events."""
        backend = device._backend or device.backend
        event = backend.timing_event(device.index)
        if event is not None and device not in self.anchors:
            self.anchors[device] = (event, host_ns)
        return event

    def end(self, name: str, device, start) -> None:
        """Record the end event of the op begun with ``start``."""
        backend = device._backend or device.backend
        self.pending.append((name, device, start, backend.timing_event(device.index)))

    def collect(self) -> list[tuple]:
        """The ``kernel`` events of the recorded ops (waits for the devices to reach them)."""
        events = []
        for name, device, start, end in self.pending:
            backend = device._backend or device.backend
            anchor, anchor_ns = self.anchors[device]
            offset_ms = backend.elapsed_ms(anchor, start)
            duration_ms = backend.elapsed_ms(start, end)
            events.append(
                (
                    name,
                    "kernel",
                    f"{device} stream",
                    anchor_ns + int(offset_ms * 1e6),
                    int(duration_ms * 1e6),
                    {"device": str(device)},
                )
            )
        self.pending.clear()
        return events
