"""A schema check of Chrome trace JSON (what chrome://tracing and ui.perfetto.dev load).

Perfetto's Python trace processor downloads its binary at run time, which this machine cannot,
so the tests check the format's rules themselves: the fields each phase needs, their types,
flows with both ends, and events that nest properly on each thread.
"""

from __future__ import annotations

import json

_NUMBER = (int, float)


def load_trace(path: str) -> list[dict]:
    """The events of the trace at ``path``, after checking the schema; raises AssertionError."""
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), "no traceEvents list"
    events = trace["traceEvents"]
    flows: dict = {}
    for e in events:
        assert e.get("ph") in ("X", "M", "s", "f", "i"), f"unknown phase in {e}"
        assert isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), f"pid/tid not ints: {e}"
        assert isinstance(e.get("name"), str) and e["name"], f"no name: {e}"
        if e["ph"] == "X":
            assert isinstance(e.get("ts"), _NUMBER) and isinstance(e.get("dur"), _NUMBER), f"ts/dur: {e}"
            assert e["dur"] >= 0, f"negative duration: {e}"
            assert isinstance(e.get("cat"), str) and isinstance(e.get("args"), dict), f"cat/args: {e}"
        elif e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index"), f"metadata: {e}"
            assert isinstance(e.get("args"), dict), f"metadata args: {e}"
        elif e["ph"] in ("s", "f"):
            assert isinstance(e.get("id"), int) and isinstance(e.get("ts"), _NUMBER), f"flow: {e}"
            flows.setdefault((e["cat"], e["id"]), []).append(e["ph"])
    for key, ends in flows.items():
        assert sorted(ends) == ["f", "s"], f"flow {key} has ends {ends}"
    _check_nesting([e for e in events if e["ph"] == "X"])
    return events


def _check_nesting(events: list[dict]) -> None:
    """Events on one thread either nest or follow each other (a flame graph can draw them)."""
    rows: dict = {}
    for e in events:
        rows.setdefault((e["pid"], e["tid"]), []).append(e)
    slack = 1e-3  # µs: rounding of ts and dur
    for row in rows.values():
        row.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for e in row:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + slack:
                stack.pop()
            if stack:
                outer = stack[-1]
                assert e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + slack, (
                    f"{e['name']} overlaps {outer['name']} without nesting in it"
                )
            stack.append(e)


def complete(events: list[dict], category: str | None = None, name: str | None = None) -> list[dict]:
    """The "X" events of ``category`` and/or ``name``."""
    return [
        e
        for e in events
        if e["ph"] == "X" and (category is None or e["cat"] == category) and (name is None or e["name"] == name)
    ]


def inside(inner: dict, outer: dict) -> bool:
    """Whether ``inner`` lies within ``outer`` on the same thread."""
    return (
        (inner["pid"], inner["tid"]) == (outer["pid"], outer["tid"])
        and outer["ts"] <= inner["ts"]
        and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    )
