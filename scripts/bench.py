#!/usr/bin/env python3
"""Benchmarks, side by side with the peer (PyTorch CPU, or raw numpy) in one run.

    .venv/bin/python scripts/bench.py              # every workload
    .venv/bin/python scripts/bench.py --only core  # one group

Each row prints our figure, the peer's, and the ratio ours/peer with the issue's
target: for times lower is better, for rates (samples/s, GB/s) higher is better,
as the target column says. Timings are medians of repeated
runs after a warm-up. Machines are noisy: compare ratios, not absolute times.
Torch rows are skipped when torch is not installed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _bench_coverage  # noqa: E402
import numpy as np  # noqa: E402

import tensor  # noqa: E402

try:
    import torch
except ImportError:  # the peer is optional
    torch = None


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired_times(ours, peer, repeat: int, warmup: int = 3) -> tuple[float, float | None]:
    """Median wall times (s) of ``ours()`` and ``peer()``, run alternately so that load
    changes on a shared machine hit both alike. ``peer`` may be None."""
    for _ in range(warmup):
        ours()
        if peer is not None:
            peer()
    ours_times, peer_times = [], []
    for _ in range(repeat):
        ours_times.append(_timed(ours))
        if peer is not None:
            peer_times.append(_timed(peer))
    return statistics.median(ours_times), (statistics.median(peer_times) if peer_times else None)


def _small_op_chain(lib, steps=100):
    a = lib.randn(10, requires_grad=True)
    b = lib.full((10,), 0.5, requires_grad=True)

    def run():
        x = lib.randn(10)
        for _ in range(steps):
            x = x * b + a
        x.sum().backward()
    return run


def _recorded_chain(lib, steps: int, step: str, backward: bool = False, c_grad: bool = False):
    """A run() of issue 19's chains on a 4-element tensor that requires grad: ``steps`` times
    ``y = y * c`` (step 'tensor'; ``c_grad``: c requires grad too), ``y = y * 1.0001`` ('scalar')
    or ``y = (y * 0.5).exp()`` ('pair'); then backward through it, with ``backward``."""
    x = lib.ones(4, requires_grad=True)
    c = lib.full((4,), 1.0001, requires_grad=c_grad)
    apply = {"tensor": lambda y: y * c, "scalar": lambda y: y * 1.0001,
             "pair": lambda y: (y * 0.5).exp()}[step]

    def run():
        y = x
        for _ in range(steps):
            y = apply(y)
        if backward:
            y.sum().backward()
    return run


def _long_chain_times(lib, steps: int, rounds: int, short: int = 100) -> tuple[float, float, float, float]:
    """Issue 19's long chains: wall time (s) per recorded ``y = y * c`` of a live chain of ``steps``
    and of ``short``, GC on, as (make, make@short, backward, backward@short), medians over rounds.

    Like with like: each round times one long chain and, beside it, ``steps // short`` short chains
    run back to back, as many ops and about as long, so that the machine's speed swings (session
    8's quiet runs moved the 100-op figure 2x within minutes, for torch as well) and preemptions
    hit both alike; the order alternates by round, each gets one warm-up. Timing a 0.3 ms run
    alone instead picks the quiet moments a 0.5 s run cannot. "make" includes dropping the chain,
    as for the 100-op rows; "backward" times backward alone through a fresh chain (made untimed).
    A long chain finds its memory cold in the caches, and without the compiled arena cache (Note
    [Arena cache] in tensor/_accelerator.py; Python's allocator gives emptied arenas back to the
    OS) faults it in afresh each time: part of its cost, as is the memory each live op keeps
    (BENCHMARKS.md, issue 19).
    """
    x = lib.ones(4, requires_grad=True)
    c = lib.full((4,), 1.0001)

    def chain(n):
        y = x
        for _ in range(n):
            y = y * c
        return y

    def make(n, count):
        start = time.perf_counter()
        for _ in range(count):
            chain(n)  # dropped at once
        return time.perf_counter() - start

    def backward(n, count):
        return sum(_timed(chain(n).sum().backward) for _ in range(count))

    blocks = [(steps, 1), (short, steps // short)]
    for n, count in blocks:  # warm-up
        make(n, count), backward(n, count)
    times = {(kind, n): [] for kind in ("make", "backward") for n, _ in blocks}
    for r in range(rounds):
        for kind, fn in (("make", make), ("backward", backward)):
            for n, count in blocks[:: 1 if r % 2 else -1]:
                times[kind, n].append(fn(n, count) / steps)
    return tuple(statistics.median(times[kind, n]) for kind in ("make", "backward") for n in (steps, short))


# Issue 19's chains of 100 recorded ops: (label, step, backward, c requires grad).
EAGER_CHAINS = [
    ("y*c", "tensor", False, False),
    ("y*1.0001", "scalar", False, False),
    ("(y*0.5).exp() per pair", "pair", False, False),
    ("y*c fwd+bwd", "tensor", True, False),
    ("y*c fwd+bwd, c requires grad", "tensor", True, True),
    ("y*1.0001 fwd+bwd", "scalar", True, False),
    ("(y*0.5).exp() fwd+bwd per pair", "pair", True, False),
]


def _eager_rows(repeat: int) -> list:
    """Issue 19: recorded small ops in chains of 100 vs torch, on 1 and 2 threads; the per-op
    cost of long live chains (forward) and of backward through them, against the same library's
    chains of 100 (ours: the target; torch's: for reference)."""
    rows = []
    threads_before = tensor.get_num_threads(), torch.get_num_threads() if torch else None
    for threads in (1, 2):
        tensor.set_num_threads(threads)
        if torch:
            torch.set_num_threads(threads)
        for label, step, backward, c_grad in EAGER_CHAINS:
            ours, peer = paired_times(_recorded_chain(tensor, 100, step, backward, c_grad),
                                      _recorded_chain(torch, 100, step, backward, c_grad) if torch else None, repeat)
            rows.append((f"recorded {label}, {threads} thr (us/op)", ours / 100 * 1e6,
                         peer / 100 * 1e6 if peer else None, "torch", "<= 1.0x"))
    tensor.set_num_threads(threads_before[0])
    if torch:
        torch.set_num_threads(threads_before[1])
    for steps, rounds in ((10_000, 9), (100_000, 5)):  # a round of 100,000: ~2 s per library, quiet machine
        for lib, name, target in ((tensor, "ours", "<= 1.1x"), (torch, "torch", "info")):
            if lib is None:
                continue
            make, make_short, backward, backward_short = _long_chain_times(lib, steps, rounds)
            label = f"{name} y = y * c, live chain of {steps:,}, GC on (us/op)"
            rows.append((label, make * 1e6, make_short * 1e6, "100-op", target))
            label = f"{name} backward of that chain of {steps:,} (us/op)"
            rows.append((label, backward * 1e6, backward_short * 1e6, "100-op", target))
    return rows


def _matmul_vs_fresh_numpy(ours, n: int, repeat: int, rounds: int = 3) -> tuple[float, float]:
    """Median times (s) of ``ours()`` here and of numpy's ``a @ b`` (n x n float32) in fresh
    processes that never import tensor, alternating rounds.

    Importing tensor hands the BLAS threads to our own pool (Note [Intra-op matmul] in
    tensor/_threads.py), so numpy called in this process would run on one thread: the
    peer must be numpy as a user has it, with its BLAS threading untouched.
    """
    code = ("import json, time, numpy as np; r = np.random.default_rng(0); "
            f"a = r.standard_normal(({n}, {n}), dtype=np.float32); "
            f"b = r.standard_normal(({n}, {n}), dtype=np.float32); "
            "[a @ b for _ in range(3)]; t = []\n"
            f"for _ in range({repeat}):\n s = time.perf_counter(); a @ b; t.append(time.perf_counter() - s)\n"
            "print(json.dumps(t))")
    ours_times, peer_times = [], []
    for _ in range(rounds):
        for _ in range(3):
            ours()
        ours_times += [_timed(ours) for _ in range(repeat)]
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True)
        peer_times += json.loads(out.stdout)
    return statistics.median(ours_times), statistics.median(peer_times)


def bench_core(repeat: int):
    """Issues 2 and 19: per-op overhead vs torch; large ops vs raw numpy."""
    rows = _eager_rows(repeat)
    ops_per_run = 200  # 100 x (mul + add)
    ours, peer = paired_times(_small_op_chain(tensor), _small_op_chain(torch) if torch else None, repeat)
    rows.append(("small-op overhead, recorded op + backward (us/op)", ours / ops_per_run * 1e6,
                 peer / ops_per_run * 1e6 if peer else None, "torch", "<= 1.5x"))

    n = 1024
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((n, n), dtype=np.float32)
    b_np = rng.standard_normal((n, n), dtype=np.float32)
    a_t, b_t = tensor.from_numpy(a_np), tensor.from_numpy(b_np)
    ours, peer = _matmul_vs_fresh_numpy(lambda: a_t @ b_t, n, repeat)
    rows.append(("matmul 1024x1024 float32 (ms)", ours * 1e3, peer * 1e3, "numpy", "<= 1.1x"))
    if torch:
        a_th, b_th = torch.from_numpy(a_np), torch.from_numpy(b_np)
        ours, peer = paired_times(lambda: a_t @ b_t, lambda: a_th @ b_th, repeat)
        rows.append(("matmul 1024x1024 float32 (ms)", ours * 1e3, peer * 1e3, "torch", "info"))

    m = 4 * 1024 * 1024
    x_np = rng.standard_normal(m, dtype=np.float32)
    y_np = rng.standard_normal(m, dtype=np.float32)
    x_t, y_t = tensor.from_numpy(x_np), tensor.from_numpy(y_np)
    for name, ours_fn, numpy_fn in [
        ("add", lambda: x_t + y_t, lambda: x_np + y_np),
        ("mul", lambda: x_t * y_t, lambda: x_np * y_np),
        ("exp", lambda: x_t.exp(), lambda: np.exp(x_np)),
        ("sum", lambda: x_t.sum(), lambda: x_np.sum()),
    ]:
        ours, peer = paired_times(ours_fn, numpy_fn, repeat)
        rows.append((f"{name} on 4M float32 (ms)", ours * 1e3, peer * 1e3, "numpy", "<= 1.1x"))
    rows.extend(_bench_coverage.rows(repeat, paired_times))  # issue 16: new ops vs the numpy call they wrap
    return rows


# Each other group lives in scripts/bench_<group>.py and exposes
# bench(repeat, paired_times, have_torch) -> rows.
WORKLOAD_MODULES = ("nn", "nn_compile", "multiprocessing", "dataloader", "collectives", "mpi", "launch", "ddp",
                    "compile", "compile_blocks", "compile_dynamic", "serialization", "gpu", "profiler", "sharding",
                    "amp", "hierarchical", "linalg")


def _module_group(name: str):
    def run(repeat: int):
        module = importlib.import_module(f"bench_{name}")
        return module.bench(repeat, paired_times, torch is not None)
    run.__doc__ = f"The workloads of scripts/bench_{name}.py."
    return run


GROUPS = {"core": bench_core}
GROUPS.update({
    name: _module_group(name) for name in WORKLOAD_MODULES
    if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"bench_{name}.py"))
})


def bench_rnn(repeat: int) -> list:
    """Issue 19's LSTM/GRU rows alone (the same rows as in the nn group), and info rows for
    the one-layer LSTM's threading, in a minute or two."""
    import bench_nn  # noqa: PLC0415 - as the module groups, loaded when run

    steps = max(2 * repeat, 10)
    return bench_nn.recurrent_rows(None, 3, steps, torch is not None) + bench_nn.lstm_threading_rows(3, steps)


GROUPS["rnn"] = bench_rnn


def print_table(rows) -> None:
    """Print rows of (workload, ours, peer, peer name, target) with the ratio ours/peer."""
    header = f"{'workload':<52} {'ours':>10} {'peer':>10} {'peer is':>8} {'ratio':>7}  target"
    print(header)
    print("-" * len(header))
    for name, ours, peer, peer_name, target in rows:
        peer_text = f"{peer:10.3f}" if peer is not None else f"{'n/a':>10}"
        ratio = f"{ours / peer:6.2f}x" if peer else f"{'n/a':>7}"
        print(f"{name:<52} {ours:10.3f} {peer_text} {peer_name:>8} {ratio}  {target}")


def main(argv=None) -> int:
    """Run the selected benchmark groups and print one table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(GROUPS), action="append",
                        help="run only this group (repeatable)")
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per workload (default 30)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    from tensor import _threads  # noqa: PLC0415 - a private helper, for the header only

    print(f"numpy BLAS: {_threads.describe()}", file=sys.stderr)
    compiled = tensor._accelerated()  # issue 19's rows depend on it (Note [Compiled dispatch and graph])
    print(f"compiled accelerator: {', '.join(compiled) if compiled else 'none (pure Python)'}", file=sys.stderr)
    if torch is None:
        print("note: torch is not installed; torch columns show n/a", file=sys.stderr)
    else:
        torch.set_num_threads(os.cpu_count() or 1)
    rows = []
    for group in args.only or sorted(GROUPS):
        print(f"running {group} ...", file=sys.stderr, flush=True)
        rows.extend(GROUPS[group](args.repeat))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
