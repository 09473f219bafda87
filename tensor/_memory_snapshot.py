"""Memory snapshots: live tensors by size and the stack that made them, per device.

Nothing is tracked until ``_record_memory_history(True)`` (or a profiler with
``profile_memory=True``) runs: the dispatcher's profiler hook (Note [Profiler hooks] in
``tensor/profiler/_recorder.py``) then reports each op's output, which is counted until it is
freed. Tensors made before recording started, and those of creation ops (``zeros``,
``from_numpy``...), are not in the CPU view; the CUDA totals come from the pool (the seam).
"""

from __future__ import annotations

import json

from . import cuda
from .profiler import _recorder
from .profiler._live import live

__all__ = ["memory_snapshot", "_record_memory_history", "_snapshot", "_dump_snapshot"]


def _record_memory_history(enabled: str | bool | None = "all", *, stacks: str = "python") -> None:
    """Start (``"all"``/True) or stop (None/False) recording each op output with its stack.

    Raises:
        RuntimeError: when a profiler is recording (it records memory itself with
            ``profile_memory=True``).
    """
    if enabled not in ("all", "state", True, None, False):
        raise ValueError(f"_record_memory_history: enabled must be 'all', 'state', True or None, got {enabled!r}")
    if enabled in (None, False):
        if _recorder.current is not None and _recorder.current.memory_only:
            _recorder.install(None)
        live.with_stacks = False
        return
    if _recorder.current is not None and not _recorder.current.memory_only:
        raise RuntimeError("_record_memory_history: a profiler is recording; use profile(profile_memory=True)")
    live.with_stacks = stacks == "python"
    _recorder.install(_recorder.Recorder(profile_memory=True, memory_only=True))


def memory_snapshot() -> dict:
    """The recorded live tensors (largest first, with their stacks) and each GPU pool's totals.

    ``{"blocks": [{"device", "size", "shape", "dtype", "frames"}], "allocated": {device: bytes},
    "peak": bytes, "cuda": {index: {"allocated", "reserved", "peak"}}}``
    """
    pools = {}
    if cuda.is_available():
        for index in range(cuda.device_count()):
            pools[index] = {
                "allocated": cuda.memory_allocated(index),
                "reserved": cuda.memory_reserved(index),
                "peak": cuda.max_memory_allocated(index),
            }
    blocks = sorted(live.blocks.values(), key=lambda b: b["size"], reverse=True)
    return {"blocks": blocks, "allocated": dict(live.used), "peak": live.peak, "cuda": pools}


_snapshot = memory_snapshot


def _dump_snapshot(filename: str = "dump_snapshot.json") -> None:
    """Write ``memory_snapshot()`` to ``filename`` as JSON."""
    with open(filename, "w") as f:
        json.dump(memory_snapshot(), f)
