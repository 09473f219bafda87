"""Merging the ranks' traces into one job-wide timeline (``distrib-launch --timeline out.json``).

Each rank writes ``out.json.rank<N>.json`` at exit (``distrib/_timeline.py``), already on rank
0's clock (Note [Timeline clocks] there), as process ``N``. The merge concatenates them, one
process row per rank sorted by rank, keeps flow ids apart between ranks, and removes the parts.
"""

from __future__ import annotations

import glob
import json
import os
import re

__all__ = ["merge", "merge_ranks"]

_FLOW_STRIDE = 1 << 32  # a rank's flow ids (backward-node sequence numbers) stay below this


def merge(parts: dict[int, dict]) -> dict:
    """One trace of the per-rank traces ``{rank: trace}``."""
    events: list[dict] = []
    for rank in sorted(parts):
        events.append({"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
        for event in parts[rank]["traceEvents"]:
            event = {**event, "pid": rank}
            if event["ph"] in ("s", "f"):
                event["id"] = rank * _FLOW_STRIDE + event["id"]
            events.append(event)
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"ranks": sorted(parts)}}


def merge_ranks(path: str) -> list[int]:
    """Merge the rank files of ``path`` into ``path`` and delete them; the ranks found."""
    parts = {}
    pattern = re.compile(re.escape(path) + r"\.rank(\d+)\.json$")
    for name in glob.glob(glob.escape(path) + ".rank*.json"):
        match = pattern.match(name)
        if match:
            with open(name) as f:
                parts[int(match.group(1))] = json.load(f)
    if not parts:
        return []
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(merge(parts), f)
    os.replace(tmp, path)
    for rank in parts:
        os.remove(f"{path}.rank{rank}.json")
    return sorted(parts)
