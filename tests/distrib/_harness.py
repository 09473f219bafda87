"""Run test scenarios as one subprocess per rank, with a deadline, and collect their results.

A scenario is a function in ``_scenarios.py``; each rank runs it under ``env://`` rendezvous
on 127.0.0.1 and prints one ``RESULT <json>`` line. Every process is killed and reaped
before ``run_ranks`` returns, whatever happens.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from tests.helpers import child_pythonpath

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_worker.py")

TRANSPORTS = {"zmq-shm": {"DISTRIB_ZMQ_SHM": "1"}, "zmq-tcp": {"DISTRIB_ZMQ_SHM": "0"}}


@dataclass
class RankResult:
    rank: int
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def result(self):
        for line in reversed(self.stdout.splitlines()):
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        raise AssertionError(f"rank {self.rank} printed no RESULT (exit {self.returncode}):\n{self.stderr[-4000:]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ranks(scenario: str, size: int, env: dict | None = None, args=(), stdin: bool = False):
    port = free_port()
    procs = []
    for rank in range(size):
        penv = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                "WORLD_SIZE": str(size), "PYTHONPATH": child_pythonpath(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
        procs.append(subprocess.Popen(
            [sys.executable, WORKER, scenario, *map(str, args)], env=penv, text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        ))
    return procs


def finish_ranks(procs, timeout: float = 60, kill_after: tuple[int, ...] = ()) -> list[RankResult]:
    """Wait for every rank; the ranks in ``kill_after`` are killed once the others have exited.
    Anything still running at the deadline is killed."""
    deadline = time.monotonic() + timeout
    results = {}
    order = [r for r in range(len(procs)) if r not in kill_after] + list(kill_after)
    try:
        for rank in order:
            p = procs[rank]
            if rank in kill_after:
                p.kill()
            try:
                out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                err += f"\n[harness] rank {rank} killed at the {timeout} s deadline"
            results[rank] = RankResult(rank, p.returncode, out, err)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [results[r] for r in range(len(procs))]


def run_ranks(scenario: str, size: int, env: dict | None = None, args=(), timeout: float = 60):
    return finish_ranks(start_ranks(scenario, size, env, args), timeout)


def rank_results(scenario: str, size: int, env: dict | None = None, timeout: float = 60) -> list:
    """Every rank's result of ``scenario``, after asserting that each rank exited 0 and that
    the ranks left no /dev/shm segment behind."""
    before = shm_entries()
    results = run_ranks(scenario, size, env, timeout=timeout)
    for r in results:
        assert r.returncode == 0, f"rank {r.rank} exited with {r.returncode}:\n{r.stderr[-4000:]}"
    assert not leaked_shm(before), f"the ranks left /dev/shm segments behind: {leaked_shm(before)}"
    return [r.result for r in results]


def case_results(per_rank: list[dict], name: str) -> list[dict]:
    """Every rank's result of case ``name`` from ``rank_results`` (failing with the rank's
    traceback if it raised, or naming the rank that never reached it)."""
    results = []
    for rank, cases in enumerate(per_rank):
        entry = cases.get(name)
        assert entry is not None, f"rank {rank} did not reach {name} (an earlier case failed: {cases})"
        assert "error" not in entry, f"rank {rank}:\n{entry['error']}"
        results.append(entry)
    return results


def shm_entries() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if name.startswith("distrib-")}


def mapped_shm() -> set[str]:
    """The /dev/shm files that some process maps."""
    names = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/maps") as f:
                names.update(line.split("/dev/shm/", 1)[1].split()[0] for line in f if "/dev/shm/" in line)
        except OSError:
            pass
    return names


def leaked_shm(before: set[str]) -> set[str]:
    """The distrib segments made since ``before`` (a ``shm_entries()``) that nothing maps: those the
    finished job left behind. A segment some live process maps belongs to another job running
    beside this one (another test suite), whose ranks exchange segments as these did."""
    return shm_entries() - before - mapped_shm()
