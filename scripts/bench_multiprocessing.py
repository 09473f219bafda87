#!/usr/bin/env python3
"""Issue 4 benchmarks: tensors through a multiprocessing Queue, and Hogwild scaling.

    .venv/bin/python scripts/bench_multiprocessing.py [--repeat 15]

``bench(repeat)`` returns rows ``(workload, ours, peer, peer name, target)`` for scripts/bench.py:

- a 64 MB float32 tensor already in shared memory, put on a Queue and acknowledged by another
  process (ms; torch.multiprocessing side by side);
- a fresh 64 MB tensor (not yet shared) the same way (ms);
- Hogwild (examples/hogwild.py, longer): samples/s with 2 processes of 1 BLAS thread each,
  against 1 process with 2 threads (the peer), target >= 1.5x.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "examples")]

import distrib.multiprocessing as mp  # noqa: E402
import tensor  # noqa: E402

try:
    import torch
    import torch.multiprocessing as torch_mp
except ImportError:  # the peer is optional
    torch = torch_mp = None

ELEMENTS = 16 * 1024 * 1024  # 64 MB of float32


def echo(requests, replies) -> None:
    """The consumer: receive a tensor, acknowledge it, drop it."""
    while True:
        item = requests.get()
        if item is None:
            return
        replies.put(item.shape[0])
        del item


class _Peer:
    """A consumer process of one library, and the timed put -> acknowledgement round trip."""

    def __init__(self, mp_module) -> None:
        ctx = mp_module.get_context("spawn")
        self.requests, self.replies = ctx.Queue(), ctx.Queue()
        self.process = ctx.Process(target=echo, args=(self.requests, self.replies), daemon=True)
        self.process.start()

    def round_trip(self, item) -> float:
        start = time.perf_counter()
        self.requests.put(item)
        self.replies.get(timeout=60)
        return time.perf_counter() - start

    def close(self) -> None:
        self.requests.put(None)
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()


def _alternate(ours, peer, make_ours, make_peer, repeat: int, warmup: int = 2) -> tuple[list, list]:
    """Round-trip times of fresh items from ``make_*()``, ours and the peer's alternately."""
    ours_times, peer_times = [], []
    for i in range(warmup + repeat):
        item = make_ours()
        t = ours.round_trip(item)
        del item
        ours_times.append(t) if i >= warmup else None
        if peer:
            item = make_peer()
            t = peer.round_trip(item)
            del item
            peer_times.append(t) if i >= warmup else None
    return ours_times, peer_times


def _queue_rows(repeat: int) -> list:
    ours = _Peer(mp)
    peer = _Peer(torch_mp) if torch_mp else None
    try:
        shared_ours = tensor.randn(ELEMENTS).share_memory_()
        shared_peer = torch.randn(ELEMENTS).share_memory_() if peer else None
        shared = _alternate(ours, peer, lambda: shared_ours, lambda: shared_peer, repeat)
        fresh = _alternate(ours, peer, lambda: tensor.randn(ELEMENTS), lambda: torch.randn(ELEMENTS), repeat)
    finally:
        ours.close()
        if peer:
            peer.close()

    def median_ms(times):
        return statistics.median(times) * 1e3 if times else None

    return [
        ("64 MB shared tensor, Queue put -> get in another process (ms)", median_ms(shared[0]),
         median_ms(shared[1]), "torch", "<= 1.0x"),
        ("64 MB fresh tensor, Queue put -> get in another process (ms)", median_ms(fresh[0]),
         median_ms(fresh[1]), "torch", "<= 1.0x"),
    ]


def _hogwild_rows(repeat: int) -> list:
    import hogwild  # noqa: PLC0415 - examples/ is put on sys.path above

    threads = os.cpu_count() or 1
    speeds = {1: [], 2: []}
    for _ in range(max(1, min(repeat, 3))):
        for procs in (2, 1):
            args = hogwild.parse_args(["--num-processes", str(procs), "--epochs", "40", "--threads", str(threads)])
            with open(os.devnull, "w") as quiet:
                speeds[procs].append(hogwild.run(args, out=quiet)[1])
    # A rate: higher is better, so the peer column is the 1-process figure and the ratio must be >= 1.5.
    return [(f"Hogwild samples/s, 2 processes vs 1 ({threads} threads in total)",
             statistics.median(speeds[2]), statistics.median(speeds[1]), "1 proc", ">= 1.5x")]


def bench(repeat: int, *_unused) -> list:
    """All rows of this file (extra arguments, as scripts/bench.py passes to groups, are ignored)."""
    return _queue_rows(repeat) + _hogwild_rows(repeat)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15, help="timed round trips per workload (default 15)")
    args = parser.parse_args(argv)
    if torch is not None:
        torch.set_num_threads(os.cpu_count() or 1)
    for name, ours, peer, peer_name, target in bench(args.repeat):
        ratio = f"{ours / peer:.2f}x" if peer else "n/a"
        peer_text = f"{peer:.3f}" if peer is not None else "n/a"
        print(f"{name:<72} ours {ours:10.3f}  {peer_name} {peer_text:>10}  ratio {ratio:>6}  target {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
