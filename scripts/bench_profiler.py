"""Issue 17: what tensor.profiler costs on the small-op benchmark (a chain of 100 ``x * b + a``
with backward, as in ``bench.py``'s core group).

* profiler off: this tree against a copy of it with the profiler hooks cut out of the
  dispatcher and the engine (the only hot-path code the profiler adds), each timed in fresh
  processes, alternating rounds; with ``DISTRIB_BENCH_CALLGRIND=1`` also by instruction counts
  under ``valgrind --tool=callgrind`` (repeatable on a loaded machine): 2n runs minus n runs, the
  GC off, a fixed hash seed.
* profiler off, in this process: forward small ops with the dispatcher's functions as they are
  and recompiled without the hook, alternating (``in_process_ab``).
* profiler on: the chain under ``profile()`` against the chain without it, in this process.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import tensor
from tensor import _dispatch
from tensor.profiler import profile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS_PER_RUN = 200  # 100 x (mul + add), per op as in bench.py (backward included in the time)
# The hook lines: the dispatcher's ``if profiler is not None ...: return profiler.exit(...)`` pairs
# and the engine's if/else around _run_node.
_DISPATCH_HOOK = re.compile(r"\n    if profiler is not None and profiler\.enter\(.*\n        return profiler\.exit\(.*")
_ENGINE_HOOK = re.compile(
    r"\n            if _dispatch\.profiler is None:\n                (_run_node\(.*\))\n"
    r"            else:.*\n                _dispatch\.profiler\.run_node\(.*"
)

CHAIN = """
import gc, time, statistics, sys
import tensor
if len(sys.argv) > 2:  # under callgrind: no collections, whose timing differs between the trees
    gc.disable()
a = tensor.randn(10, requires_grad=True)
b = tensor.full((10,), 0.5, requires_grad=True)
def run():
    x = tensor.randn(10)
    for _ in range(100):
        x = x * b + a
    x.sum().backward()
runs = int(sys.argv[1])
for _ in range(min(runs, 20)):
    run()
times = []
for _ in range(runs):
    t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
print(statistics.median(times) if times else 0.0)
"""


def _chain():
    a = tensor.randn(10, requires_grad=True)
    b = tensor.full((10,), 0.5, requires_grad=True)

    def run():
        x = tensor.randn(10)
        for _ in range(100):
            x = x * b + a
        x.sum().backward()

    return run


def tree_copies() -> tuple[str, str]:
    """Two temporary copies of the packages, the second with the profiler hooks cut out: the same
    snapshot on both sides, whatever changes in the checkout meanwhile. The caller deletes them."""
    trees = tempfile.mkdtemp(prefix="bench-profiler-hooked-"), tempfile.mkdtemp(prefix="bench-profiler-bare-")
    for tree in trees:
        for package in ("tensor", "autograd", "nn", "distrib"):
            shutil.copytree(
                os.path.join(ROOT, package), os.path.join(tree, package), ignore=shutil.ignore_patterns("__pycache__")
            )
    for rel, pattern, repl in (
        ("tensor/_dispatch.py", _DISPATCH_HOOK, ""),
        ("autograd/engine.py", _ENGINE_HOOK, r"\n            \1"),
    ):
        path = os.path.join(trees[1], rel)
        with open(path) as f:
            text = f.read()
        text, n = pattern.subn(repl, text)
        if n == 0:
            raise RuntimeError(f"bench_profiler: no profiler hook found in {rel}; update the patterns")
        with open(path, "w") as f:
            f.write(text)
    return trees


def _run_chain(tree: str, runs: int, prefix=(), extra=()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": tree, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    cmd = [*prefix, sys.executable, "-c", CHAIN, str(runs), *extra]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"bench_profiler: the chain failed in {tree} (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return out


def wall_clock(tree_a: str, tree_b: str, rounds: int, runs: int = 200) -> tuple[float, float]:
    """Median per-run seconds of the chain in fresh processes of each tree, alternating."""
    a, b = [], []
    for _ in range(rounds):
        a.append(float(_run_chain(tree_a, runs).stdout))
        b.append(float(_run_chain(tree_b, runs).stdout))
    return statistics.median(a), statistics.median(b)


def instructions(tree: str, runs: int) -> int:
    """Instructions of ``runs`` runs of the chain: a process running it ``2 runs`` times minus one
    running it ``runs`` times (start, import and warm-up cancel), the GC off."""

    def count(n: int) -> int:
        out = _run_chain(tree, n, ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"), ("nogc",))
        return int(re.search(r"Collected : (\d+)", out.stderr).group(1))

    return count(2 * runs) - count(runs)


def in_process_ab(blocks: int = 40, reps: int = 50) -> tuple[float, float]:
    """Median over alternating blocks of the best time (ns per op) of 100 ``x * b + a`` without
    grad, with the dispatcher's functions as they are and compiled without the hook lines, in
    this process: the same memory and caches on both sides, the minimum filtering out load."""
    with open(_dispatch.__file__) as f:
        bare_source, n = _DISPATCH_HOOK.subn("", f.read())
    if n == 0:
        raise RuntimeError("bench_profiler: no profiler hook found in tensor/_dispatch.py; update the pattern")
    namespace = {"__name__": "tensor._dispatch_without_hook", "__package__": "tensor"}
    exec(compile(bare_source, "tensor/_dispatch.py without the hook", "exec"), namespace)
    names = ("apply", "apply_unary", "apply_binary")
    hooked = {name: getattr(_dispatch, name) for name in names}
    bare = {name: namespace[name] for name in names}
    a, b = tensor.randn(10), tensor.full((10,), 0.5)

    def best(functions) -> int:
        for name, fn in functions.items():
            setattr(_dispatch, name, fn)
        times = []
        for _ in range(reps):
            start = time.perf_counter_ns()
            x = a
            for _ in range(100):
                x = x * b + a
            times.append(time.perf_counter_ns() - start)
        return min(times)

    try:
        pairs = [(best(hooked), best(bare)) for _ in range(blocks)]
    finally:
        for name, fn in hooked.items():
            setattr(_dispatch, name, fn)
    return (statistics.median(p[0] for p in pairs) / OPS_PER_RUN, statistics.median(p[1] for p in pairs) / OPS_PER_RUN)


def bench(repeat: int, paired_times, have_torch: bool) -> list:
    rows = []
    hooked, bare = tree_copies()
    try:
        with_hook, without = wall_clock(hooked, bare, rounds=max(3, repeat // 2))
        rows.append(
            (
                "small-op chain, profiler off (us/op)",
                with_hook / OPS_PER_RUN * 1e6,
                without / OPS_PER_RUN * 1e6,
                "no hook",
                "<= 1.03x",
            )
        )
        if os.environ.get("DISTRIB_BENCH_CALLGRIND") == "1" and shutil.which("valgrind"):
            runs = 20
            ours, base = instructions(hooked, runs), instructions(bare, runs)
            rows.append(
                (
                    "small-op chain, profiler off (k instructions/op)",
                    ours / runs / OPS_PER_RUN / 1e3,
                    base / runs / OPS_PER_RUN / 1e3,
                    "no hook",
                    "<= 1.03x",
                )
            )
    finally:
        shutil.rmtree(hooked, ignore_errors=True)
        shutil.rmtree(bare, ignore_errors=True)
    with_hook, without = in_process_ab()
    rows.append(("forward small ops, profiler off, in process (ns/op)", with_hook, without, "no hook", "<= 1.03x"))
    run = _chain()
    prof = profile()

    def profiled():
        prof.start()
        try:
            run()
        finally:
            prof.stop()

    on, off = paired_times(profiled, run, repeat)
    rows.append(
        ("small-op chain, profiler on (us/op)", on / OPS_PER_RUN * 1e6, off / OPS_PER_RUN * 1e6, "off", "<= 2.0x")
    )
    return rows


if __name__ == "__main__":
    print(json.dumps(bench(5, None, False)))
