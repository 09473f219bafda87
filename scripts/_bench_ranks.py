"""Running a benchmark's ranks as local subprocesses, for ``bench_collectives`` and ``bench_ddp``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(script: str, world: int, argv, env_extra: dict, deadline: float):
    """Start ``world`` ranks of ``python script *argv(rank, port)`` on a fresh port, with
    ``OMP_NUM_THREADS=1`` (as the launchers set it) plus ``env_extra``; return the JSON that
    rank 0 prints last.

    Raises:
        RuntimeError: with the rank's stderr, when a rank prints nothing.
        subprocess.TimeoutExpired: past ``deadline`` seconds; every rank is killed.
    """
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", **env_extra}
    procs = [subprocess.Popen([sys.executable, script, *map(str, argv(rank, port))], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
             for rank in range(world)]
    outputs = []
    end = time.monotonic() + deadline
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(1.0, end - time.monotonic()))
            if not out.strip():
                raise RuntimeError(f"rank worker failed ({p.returncode}):\n{err[-3000:]}")
            outputs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return json.loads(outputs[0].strip().splitlines()[-1])
