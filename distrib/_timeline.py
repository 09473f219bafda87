"""The rank side of a job-wide timeline (``distrib-launch --timeline out.json`` or
``DISTRIB_TIMELINE=out.json``): profile the whole run, write ``out.json.rank<N>.json`` (the
trace, which the launcher merges) and ``out.json.rank<N>.txt`` (the ``key_averages`` table) at exit.

Note [Timeline clocks]: the ranks' traces are merged on rank 0's clock. Right after the
process group is made, ``ROUNDS`` barriers run; after each, every rank reads its wall clock
and rank 0 publishes its own reading in the store. A rank's offset is the median of its
differences from rank 0's: what a barrier's exit skew adds is below a millisecond here (two
ranks on one host: 0.1-0.3 ms), while hosts' clocks may differ by far more.
"""

from __future__ import annotations

import atexit
import os
import statistics
import time

from tensor.profiler import _recorder, profile

from . import collectives
from .store import PrefixStore

__all__ = ["start_if_requested", "rank_path"]

ENV = "DISTRIB_TIMELINE"
ROUNDS = 5


def rank_path(path: str, rank: int) -> str:
    """Where rank ``rank`` writes its part of the timeline ``path``."""
    return f"{path}.rank{rank}.json"


def start_if_requested(store, rank: int, world_size: int) -> None:
    """When ``DISTRIB_TIMELINE`` is set: align this rank's clock to rank 0's and profile the
    process until it exits (see Note [Timeline clocks])."""
    path = os.environ.get(ENV)
    if not path or _recorder.current is not None:
        return
    _recorder.clock_offset_ns = _clock_offset(PrefixStore("timeline", store), rank)
    prof = profile()
    prof.start()
    atexit.register(_write, prof, path, rank, world_size)


def _clock_offset(store, rank: int) -> int:
    """This rank's wall clock minus rank 0's, ns (0 on rank 0)."""
    diffs = []
    for i in range(ROUNDS):
        collectives.barrier()
        now = time.time_ns()
        if rank == 0:
            store.set(f"clock{i}", str(now))
        else:
            diffs.append(now - int(store.get(f"clock{i}")))
    return int(statistics.median(diffs)) if diffs else 0


def _write(prof: profile, path: str, rank: int, world_size: int) -> None:
    """Write this rank's trace (merged by the launcher) and its table, ``<path>.rank<N>.txt``."""
    prof.stop()
    prof.export_chrome_trace(rank_path(path, rank), pid=rank, process_name=f"rank {rank} of {world_size}")
    with open(f"{path}.rank{rank}.txt", "w") as f:
        f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40) + "\n")
