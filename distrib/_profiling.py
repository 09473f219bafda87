"""What the profiler records of a collective: its group, sequence number and bytes.

Called only while ``tensor.profiler`` records (Note [Profiler hooks] in
``tensor/profiler/_recorder.py``); nothing here runs otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from tensor.profiler import _recorder

__all__ = ["timed_transfer"]


def _nbytes(obj) -> int:
    """Bytes of the tensors or arrays in ``obj`` (nested lists too)."""
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(x) for x in obj)
    data = getattr(obj, "_data", obj)
    return int(getattr(data, "nbytes", 0))


def timed_transfer(fn: Callable, pg, name: str, seq: int, payload, async_op: bool = False) -> Callable:
    """``fn`` (the op's transfer) timed as a ``collective`` event with the bytes of ``payload``;
    an async op also gets a zero-length ``<name> enqueue`` event now, in the caller's thread."""
    rec = _recorder.current
    args = {"group": pg.group_name, "group_size": pg.size(), "seq": seq, "bytes": _nbytes(payload)}
    if async_op:
        now = _recorder.now_ns()
        rec.add(f"{name} enqueue", "collective", now, now, args)
    return rec.wrap(fn, name, "collective", args)
