"""Chrome trace JSON (chrome://tracing, ui.perfetto.dev) from recorded events.

Events become "X" (complete) events with ``ts``/``dur`` in µs of wall-clock time aligned to
rank 0's clock; threads get small numbers and "thread_name" metadata; each backward node is
linked to the forward op that made it by a flow ("s" at the op, "f" at the node) whose id is
the node's sequence number, as PyTorch's traces link them.
"""

from __future__ import annotations

import json
import os

__all__ = ["chrome_trace", "write_json"]


def chrome_trace(events: list[tuple], offset_ns: int, pid: int, process_name: str) -> dict:
    """The trace dict of ``events`` (times ``+ offset_ns`` to wall-clock ns), as one process row."""
    threads: dict = {}
    out: list[dict] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process_name}}]
    forward: dict[int, dict] = {}
    backward: list[dict] = []
    for name, category, tid, start, dur, args in sorted(events, key=lambda e: (e[3], -e[4])):
        number = threads.get(tid)
        if number is None:
            number = threads[tid] = len(threads) + 1
            label = tid if isinstance(tid, str) else f"thread {tid}"
            out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": number, "args": {"name": label}})
        event = {
            "ph": "X",
            "name": name,
            "cat": category,
            "pid": pid,
            "tid": number,
            "ts": (start + offset_ns) / 1000,
            "dur": dur / 1000,
            "args": dict(args),
        }
        out.append(event)
        seq = args.get("Sequence number")
        if seq is not None:
            if category == "backward":
                backward.append(event)
            else:
                forward.setdefault(seq, event)
    for bwd in backward:
        fwd = forward.get(bwd["args"]["Sequence number"])
        if fwd is not None:
            flow = {"name": "fwdbwd", "cat": "fwdbwd", "id": bwd["args"]["Sequence number"], "pid": pid}
            out.append({**flow, "ph": "s", "tid": fwd["tid"], "ts": fwd["ts"]})
            out.append({**flow, "ph": "f", "bp": "e", "tid": bwd["tid"], "ts": bwd["ts"]})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def write_json(trace: dict, path: str) -> None:
    """Write ``trace`` to ``path`` atomically (a reader never sees half a file)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(trace, f)
    os.replace(tmp, path)
