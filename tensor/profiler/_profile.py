"""``profile`` and ``record_function``: what users call (as ``torch.profiler``)."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable
from typing import Any

from . import _chrome, _device, _events, _recorder
from ._live import live
from ._schedule import ProfilerAction, ProfilerActivity

__all__ = ["profile", "record_function"]


class profile:  # noqa: N801 - PyTorch's name
    """Record ops, backward nodes, optimizer steps, collectives, DataLoader fetches and DDP
    buckets while active; then ``key_averages().table()`` or ``export_chrome_trace(path)``.

    ``schedule`` (from ``tensor.profiler.schedule``) picks the recorded steps, counted by
    ``step()``; ``on_trace_ready(prof)`` runs after each recorded cycle. ``ProfilerActivity.CUDA``
    adds device time of each op on a GPU, measured with CUDA events.

    >>> with profile(record_shapes=True) as prof:
    ...     _ = tensor.ones(2, 2) @ tensor.ones(2, 2)
    >>> "matmul" in prof.key_averages().table()
    True

    Raises:
        RuntimeError: when another profiler is already recording.
    """

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
    ) -> None:
        self.activities = set(activities) if activities is not None else {ProfilerActivity.CPU}
        for activity in self.activities:
            if not isinstance(activity, ProfilerActivity):
                raise TypeError(f"profile: activities must be ProfilerActivity values, got {activity!r}")
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.step_num = 0
        self._recorder: _recorder.Recorder | None = None
        self._finished: _recorder.Recorder | None = None
        self._step_start = 0
        self._step_first_event = 0
        self._action = ProfilerAction.NONE

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Begin profiling (the first step's action when there is a schedule)."""
        self._action = self.schedule(self.step_num) if self.schedule else ProfilerAction.RECORD
        if self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._begin_recording()

    def stop(self) -> None:
        """End profiling; a recording in progress is finished and handed to ``on_trace_ready``."""
        if self._recorder is not None:
            if len(self._recorder.events) > self._step_first_event:  # something ran since step()
                if self.step_num > 0:
                    self._end_step()
                self._finish()
            else:  # an empty last step: no trace of its own
                self._finish(ready=False)

    def step(self) -> None:
        """Mark the end of a training step: the schedule decides whether the next one records."""
        recording = self._recorder is not None
        if recording:
            self._end_step()
        previous = self._action
        self.step_num += 1
        self._action = self.schedule(self.step_num) if self.schedule else ProfilerAction.RECORD
        if previous is ProfilerAction.RECORD_AND_SAVE and recording:
            self._finish()
        if self._action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            if self._recorder is None:
                self._begin_recording()
            else:
                self._begin_step()

    def _begin_recording(self) -> None:
        if _recorder.current is not None:
            raise RuntimeError(
                "profile: another profiler is already recording in this process; stop it first (profilers do not nest)"
            )
        rec = _recorder.Recorder(self.record_shapes, self.profile_memory, self.with_stack)
        if ProfilerActivity.CUDA in self.activities:
            rec.device_timer = _device.DeviceTimer()
        self._recorder = rec
        _recorder.install(rec)
        self._begin_step()

    def _begin_step(self) -> None:
        self._step_start = _recorder.now_ns()
        self._step_first_event = len(self._recorder.events)
        if self.profile_memory:
            live.reset_peak()

    def _end_step(self) -> None:
        args: dict = {}
        if self.profile_memory:
            args["peak_bytes"] = live.peak
        self._recorder.add(f"ProfilerStep#{self.step_num}", "step", self._step_start, _recorder.now_ns(), args)

    def _finish(self, ready: bool = True) -> None:
        rec, self._recorder = self._recorder, None
        _recorder.install(None)
        if rec.device_timer is not None:
            rec.events.extend(rec.device_timer.collect())
        if not ready and self._finished is not None:
            return
        self._finished = rec
        if ready and self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ------------------------------------------------------------ results
    def _events(self) -> _recorder.Recorder:
        if self._finished is None:
            raise RuntimeError(
                "profile: no recorded trace yet (the profiler is still recording or its schedule has not saved a cycle)"
            )
        return self._finished

    @property
    def events(self) -> list[tuple]:
        """The recorded events: ``(name, category, thread, start ns, duration ns, args)``."""
        return list(self._events().events)

    def key_averages(self, group_by_input_shape: bool = False) -> _events.EventList:
        """The events grouped by name (and input shapes): rows with ``table(sort_by=, row_limit=)``."""
        return _events.average(self._events().events, group_by_input_shape, self.profile_memory)

    def export_chrome_trace(self, path: str, pid: int | None = None, process_name: str | None = None) -> str:
        """Write the trace as Chrome trace JSON (open it in ui.perfetto.dev or chrome://tracing)."""
        rec = self._events()
        pid = os.getpid() if pid is None else pid
        trace = _chrome.chrome_trace(
            rec.events, rec.epoch_offset_ns - _recorder.clock_offset_ns, pid, process_name or f"process {pid}"
        )
        _chrome.write_json(trace, path)
        return path


class record_function(contextlib.ContextDecorator):  # noqa: N801 - PyTorch's name
    """Mark a region as one named event (a context manager or a decorator); free when not profiling.

    >>> with record_function("load_batch"):
    ...     pass
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = {} if args is None else {"args": args}
        self._start = 0

    def __enter__(self) -> record_function:
        self._start = _recorder.now_ns()
        return self

    def __exit__(self, *exc) -> None:
        rec = _recorder.current
        if rec is not None:
            rec.add(self.name, "user_annotation", self._start, _recorder.now_ns(), self.args)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args.get("args")):
                return fn(*args, **kwargs)

        return wrapped
