"""The recorder behind ``tensor.profiler``: events of ops, backward nodes and higher layers.

Note [Profiler hooks]: the recorder is reached through one global per hot path, None while
nothing records, so that profiling off costs one check: ``_dispatch.profiler`` for every op
(the dispatcher's ``apply``/``apply_unary``/``apply_binary``) and every backward node (the
engine), and ``current`` here for the higher layers (optimizer steps, collectives, Work and
Future waits, DataLoader fetches, DDP buckets). The dispatcher hands the op to ``enter``, which
starts the clock and returns True; the dispatcher then calls itself once more, and ``enter``
recognises that call (same op, same first input) and returns False, so the body runs once,
between ``enter`` and ``exit``.

An event is a tuple ``(name, category, thread id, start ns, duration ns, args)`` on
``time.perf_counter_ns``'s clock; ``epoch_offset_ns`` turns it into wall-clock time, and
``clock_offset_ns`` (set at rendezvous, see ``distrib.init_process_group``) aligns ranks.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

from .. import _dispatch
from ._live import live, user_stack

__all__ = ["Recorder", "current", "clock_offset_ns", "install", "now_ns"]

_now = time.perf_counter_ns
_thread_id = threading.get_ident

# The recorder of the running profiler, or None (see Note [Profiler hooks]).
current: Recorder | None = None
# This process's clock minus rank 0's, measured at rendezvous (0 outside a job).
clock_offset_ns = 0


class Recorder:
    """Collects events while a profiler is in its recording phase."""

    def __init__(
        self,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        memory_only: bool = False,
    ) -> None:
        self.device_timer = None  # a _device.DeviceTimer with ProfilerActivity.CUDA
        self.memory_only = memory_only  # _record_memory_history: count outputs, keep no events
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list[tuple] = []
        self.epoch_offset_ns = time.time_ns() - _now()
        self._local = threading.local()

    # ------------------------------------------------------------ ops (the dispatcher)
    def enter(self, op, key, inputs) -> bool:
        """Start timing ``op``; False for the dispatcher's own second call (run the body)."""
        local = self._local
        frame = getattr(local, "frame", None)
        if frame is not None and frame[4] and frame[0] is op and frame[1] is key:
            local.frame = (*frame[:4], False, frame[5])  # the dispatcher's own call: run the body
            return False
        start = _now()
        device_event = None
        if self.device_timer is not None:
            device_event = self.device_timer.begin(inputs[0]._device, start)
        local.frame = (op, key, inputs, start, True, device_event)
        return True

    def exit(self, result):
        """End the op begun by ``enter``, whose output is ``result``; return ``result``."""
        end = _now()
        local = self._local
        op, _, inputs, start, _, device_event = local.frame
        local.frame = None  # hold no tensor past its op
        if device_event is not None:
            self.device_timer.end(op.name, inputs[0]._device, device_event)
        self._op_event(op.name, inputs, result, start, end)
        return result

    def _op_event(self, name, inputs, result, start, end) -> None:
        if self.memory_only:
            if result._base is None:
                live.add(result)
            return
        args = {}
        node = getattr(result, "_grad_fn", None)
        if node is not None:
            args["Sequence number"] = node.seq
        if self.record_shapes:
            args["Input Dims"] = [list(t.shape) if hasattr(t, "shape") else [] for t in inputs]
        if self.profile_memory:
            if result._base is None:  # a view owns no memory
                args["bytes"] = result._data.nbytes
                live.add(result)
        if self.with_stack:
            args["stack"] = user_stack()
        self.events.append((name, "cpu_op", _thread_id(), start, end - start, args))

    # ------------------------------------------------------------ backward nodes (the engine)
    def run_node(self, run: Callable, node, *args) -> None:
        """Run ``run(node, *args)`` (the engine's node step) as a ``backward`` event."""
        if self.memory_only:
            run(node, *args)
            return
        start = _now()
        try:
            run(node, *args)
        finally:
            end = _now()
            self.events.append(
                (node.name(), "backward", _thread_id(), start, end - start, {"Sequence number": node.seq})
            )

    # ------------------------------------------------------------ higher layers
    def add(
        self, name: str, category: str, start: int, end: int, args: dict | None = None, thread: int | None = None
    ) -> None:
        """Add a finished event (times from ``time.perf_counter_ns``)."""
        self.events.append((name, category, _thread_id() if thread is None else thread, start, end - start, args or {}))

    def add_wall(self, name: str, category: str, start: int, end: int, args: dict, thread: str) -> None:
        """Add an event timed with ``time.time_ns`` (e.g. in another process) on row ``thread``."""
        self.add(name, category, start - self.epoch_offset_ns, end - self.epoch_offset_ns, args, thread)

    def wrap(self, fn: Callable, name: str, category: str, args: dict | None = None) -> Callable:
        """``fn`` timed as an event on whichever thread calls it."""

        @functools.wraps(fn)
        def timed(*a, **kw):
            start = _now()
            try:
                return fn(*a, **kw)
            finally:
                self.add(name, category, start, _now(), args)

        return timed


def install(rec: Recorder | None) -> None:
    """Make ``rec`` the recorder of every hook (None: stop recording)."""
    global current
    current = rec
    _dispatch.profiler = rec


def now_ns() -> int:
    """The recorder's clock (``time.perf_counter_ns``)."""
    return _now()
