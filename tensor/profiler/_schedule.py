"""Profiling schedules (which steps record) and the trace-directory handler."""

from __future__ import annotations

import enum
import os
import socket
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ProfilerAction", "ProfilerActivity", "schedule", "tensorboard_trace_handler"]


class ProfilerActivity(enum.Enum):
    """What to record: host-side events (CPU) and device kernels timed by CUDA events (CUDA)."""

    CPU = "cpu"
    CUDA = "cuda"


class ProfilerAction(enum.Enum):
    """What the profiler does during a step, as a schedule returns it."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0
) -> Callable[[int], ProfilerAction]:
    """A schedule for ``profile(schedule=...)``, as ``torch.profiler.schedule``.

    After ``skip_first`` steps, cycles of ``wait`` idle steps, ``warmup`` steps and ``active``
    recorded steps; the last active step of a cycle saves the trace (``on_trace_ready``).
    ``repeat`` cycles at most (0: until the profiler stops).

    >>> [schedule(wait=1, warmup=1, active=2)(s).name for s in range(4)]
    ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE']

    Raises:
        ValueError: for a negative count or ``active`` < 1.
    """
    for name, value in (("wait", wait), ("warmup", warmup), ("repeat", repeat), ("skip_first", skip_first)):
        if value < 0:
            raise ValueError(f"schedule: {name} must be >= 0, got {value}")
    if active < 1:
        raise ValueError(f"schedule: active must be >= 1, got {active}")
    cycle = wait + warmup + active

    def action(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None) -> Callable[[Any], None]:
    """An ``on_trace_ready`` that writes each trace to ``dir_name/<worker>.<time ns>.pt.trace.json``.

    ``worker_name`` defaults to ``<host>_<pid>``. The files open in TensorBoard's profiler
    plugin, in chrome://tracing and in ui.perfetto.dev.
    """
    name = worker_name or f"{socket.gethostname()}_{os.getpid()}"

    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        prof.export_chrome_trace(os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json"))

    return handler
