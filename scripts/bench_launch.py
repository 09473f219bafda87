#!/usr/bin/env python3
"""Issue 7 benchmark: launcher start-up to the first line of user code, 2 workers.

    .venv/bin/python scripts/bench_launch.py [--repeat 5]

``bench(repeat)`` returns rows ``(workload, ours, peer, peer name, target)`` for scripts/bench.py.
Each run starts the launcher's console script (``distrib-launch`` / ``torchrun``) with
``--nproc 2`` on a script whose first line reads ``time.perf_counter()`` (CLOCK_MONOTONIC,
shared by all processes) and writes it to a file; the figure is the later of the two
workers minus the moment before the launcher was started. Ours and torchrun's alternate
in one run; the median is reported. The total wall time until the launcher exits is an
extra, informational row.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)

FIRST_LINE = """t = __import__("time").perf_counter()
import os
with open(os.path.join(os.environ["BENCH_OUT"], os.environ["RANK"]), "w") as f:
    f.write(repr(t))
"""


def _launcher(name: str) -> list[str] | None:
    exe = os.path.join(BIN, name)
    if os.path.exists(exe):
        return [exe]
    found = shutil.which(name)
    return [found] if found else None


def _one_run(command: list[str], script: str, out_dir: str) -> tuple[float, float]:
    """(seconds to the later worker's first line, seconds until the launcher exited)."""
    for name in os.listdir(out_dir):
        os.unlink(os.path.join(out_dir, name))
    env = dict(os.environ, BENCH_OUT=out_dir)
    start = time.perf_counter()
    subprocess.run([*command, "--nproc-per-node", "2", script], env=env, check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    total = time.perf_counter() - start
    firsts = []
    for rank in ("0", "1"):
        with open(os.path.join(out_dir, rank)) as f:
            firsts.append(float(f.read()))
    return max(firsts) - start, total


def bench(repeat: int, *_unused) -> list:
    """Rows of this file (extra arguments, as scripts/bench.py passes to groups, are ignored)."""
    ours_cmd, peer_cmd = _launcher("distrib-launch"), _launcher("torchrun")
    if ours_cmd is None:
        ours_cmd = [sys.executable, "-m", "launch"]
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        script = os.path.join(tmp, "first_line.py")
        with open(script, "w") as f:
            f.write(FIRST_LINE)
        out_dir = os.path.join(tmp, "out")
        os.mkdir(out_dir)
        ours, peer = [], []
        _one_run(ours_cmd, script, out_dir)  # warm the page cache for both
        if peer_cmd:
            _one_run(peer_cmd, script, out_dir)
        for _ in range(repeat):
            ours.append(_one_run(ours_cmd, script, out_dir))
            if peer_cmd:
                peer.append(_one_run(peer_cmd, script, out_dir))

    def median(runs, i):
        return statistics.median(r[i] for r in runs) * 1e3 if runs else None

    return [("launcher start-up to first line of user code, 2 workers (ms)", median(ours, 0), median(peer, 0),
             "torchrun", "<= 1.0x"),
            ("launcher start to exit, 2 workers, empty script (ms)", median(ours, 1), median(peer, 1),
             "torchrun", "info")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    for name, ours, peer, peer_name, target in bench(args.repeat):
        ratio = f"{ours / peer:.3f}" if peer else "n/a"
        peer_text = f"{peer:10.1f}" if peer is not None else "n/a"
        print(f"{name:<64} ours {ours:8.1f}  {peer_name} {peer_text:>10}  ratio {ratio:>6}  target {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
