"""Issue 14 workloads: ``tensor.compile`` beside ``torch.compile`` and plain NumPy.

Used by ``scripts/bench.py --only compile``. The k-means step is PyTorch's own
``torch.compile``-of-NumPy example: 20M float64 2-D points, 8 means. First-call and
warm-cache figures are measured in fresh processes with fresh (or warmed) cache
directories, since both compilers keep caches on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
POINTS, MEANS = 20_000_000, 8


def kmeans(X, means):
    """One k-means assignment step, written against NumPy."""
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((POINTS, 2)), rng.standard_normal((MEANS, 2))


def _first_call_script(framework: str) -> str:
    return f"""
import json, sys, time
sys.path.insert(0, {HERE!r})
import numpy as np
from bench_compile import _data, kmeans
X, means = _data()
if {framework!r} == "ours":
    import tensor
    tensor.set_num_threads(1)
    f = tensor.compile(kmeans)
else:
    import torch
    torch.set_num_threads(1)
    f = torch.compile(kmeans)
start = time.perf_counter(); f(X, means); first = time.perf_counter() - start
f(X, means); both = time.perf_counter() - start
steady = []
for _ in range(3):  # the fastest of three: on a loaded machine one call's noise exceeds the start-up cost
    start = time.perf_counter(); f(X, means); steady.append(time.perf_counter() - start)
print(json.dumps([first, both, min(steady)]))
"""


def _first_call(framework: str, cache_dir: str) -> list:
    """[first call, first two calls, fastest of the next three calls] in seconds, in a fresh process."""
    env = dict(
        os.environ,
        TENSOR_COMPILE_CACHE=cache_dir,
        TORCHINDUCTOR_CACHE_DIR=cache_dir,
        OMP_NUM_THREADS="1",
        OPENBLAS_NUM_THREADS="1",
    )
    out = subprocess.run(
        [sys.executable, "-c", _first_call_script(framework)], env=env, capture_output=True, text=True, timeout=1800
    )
    if out.returncode != 0:  # report it and show n/a, rather than lose the group's other rows
        print(f"first-call run of {framework} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
        return [None, None, None]
    return json.loads(out.stdout.splitlines()[-1])


def _kmeans_rows(repeat, paired_times, have_torch):
    import tensor  # noqa: PLC0415 - loaded by bench.py already

    X, means = _data()
    ours = tensor.compile(kmeans)
    tensor.set_num_threads(1)
    ours(X, means)
    ours(X, means)
    one, numpy_time = paired_times(lambda: ours(X, means), lambda: kmeans(X, means), repeat, warmup=1)
    rows = [
        (
            f"k-means {POINTS // 10**6}M x 2 float64, 1 thread (ms)",
            one * 1e3,
            numpy_time * 1e3,
            "numpy",
            "<= 0.111x (9x faster)",
        )
    ]
    if have_torch:
        import torch  # noqa: PLC0415

        torch.set_num_threads(1)
        peer = torch.compile(kmeans)
        peer(X, means)
        ours_t, torch_t = paired_times(lambda: ours(X, means), lambda: peer(X, means), repeat, warmup=1)
        rows.append((f"k-means {POINTS // 10**6}M, 1 thread (ms)", ours_t * 1e3, torch_t * 1e3, "torch", "<= 1.0x"))
        torch.set_num_threads(os.cpu_count() or 1)

    def on_threads(n):
        def run():
            tensor.set_num_threads(n)
            return ours(X, means)

        return run

    two, one = paired_times(on_threads(2), on_threads(1), repeat, warmup=1)  # alternated: load hits both alike
    rows.append(("k-means, 2 threads vs our 1 thread (ms)", two * 1e3, one * 1e3, "ours x1", "<= 0.556x (1.8x)"))
    tensor.set_num_threads(os.cpu_count() or 1)
    return rows


def _latency_rows(have_torch):
    with tempfile.TemporaryDirectory() as ours_dir, tempfile.TemporaryDirectory() as torch_dir:
        ours_first = _first_call("ours", ours_dir)
        torch_first = _first_call("torch", torch_dir) if have_torch else [None, None, None]
        rows = [
            ("k-means first call, cold caches (s)", ours_first[0], torch_first[0], "torch", "<= 1.0x"),
            ("k-means first two calls, cold caches (s)", ours_first[1], torch_first[1], "torch", "<= 1.0x"),
        ]
        warm = _first_call("ours", ours_dir)
        if warm[0] is not None:
            rows.append(("k-means first call, second process, warm cache (s)", warm[0], warm[2], "steady", "info"))
            rows.append(("  warm first call minus a steady call (s)", warm[0] - warm[2], 1.0, "1 s", "< 1.0x"))
    return [row for row in rows if row[1] is not None]


def bench(repeat, paired_times, have_torch):
    """Rows for bench.py: k-means throughput, thread scaling, first-call and warm-cache latency,
    and the fused MLP / LayerNorm blocks (``bench_compile_blocks``)."""
    start = time.perf_counter()
    rows = _kmeans_rows(max(3, repeat // 6), paired_times, have_torch)
    rows += _latency_rows(have_torch)
    from bench_compile_blocks import block_rows  # noqa: PLC0415 - sibling script module

    rows += block_rows(repeat, paired_times)
    print(f"compile group took {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return rows
