"""Issue 5 workload: DataLoader throughput and per-batch latency, ours vs torch, in one run.

20,000 samples of 784 float32 plus an int label; ``__getitem__`` returns one sample (a view of
an in-memory tensor and a Python int); batch 64; shuffle; default settings otherwise. An epoch
is timed after a first, untimed one (worker start-up is part of every epoch, as it is for a
non-persistent loader). Throughput is samples per second over the epoch; latency is the median
time ``next()`` takes in the steady state.

    .venv/bin/python scripts/bench_dataloader.py          # prints the rows
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N, FEATURES, BATCH = 20_000, 784, 64


def make_loader(framework: str, num_workers: int, **options):
    """A shuffling DataLoader over the workload's dataset, in ``framework`` ('ours' or 'torch')."""
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((N, FEATURES), dtype=np.float32)
    y_host = rng.integers(0, 10, N)
    if framework == "ours":
        import tensor as lib  # noqa: PLC0415 - each framework is loaded only when benchmarked
        from distrib.data import DataLoader, Dataset  # noqa: PLC0415
    else:
        import torch as lib  # noqa: PLC0415
        from torch.utils.data import DataLoader, Dataset  # noqa: PLC0415

    class Samples(Dataset):
        def __init__(self) -> None:
            self.x = lib.from_numpy(x_host)
            self.y = y_host

        def __len__(self) -> int:
            return N

        def __getitem__(self, i):
            return self.x[i], int(self.y[i])

    return DataLoader(Samples(), batch_size=BATCH, shuffle=True, num_workers=num_workers, **options)


def epoch_stats(loader, epochs: int = 2) -> tuple[float, float]:
    """(samples/s of the last epoch, median per-batch latency in ms of the steady state)."""
    rate, latencies = 0.0, []
    for _ in range(epochs):
        latencies = []
        seen = 0
        start = time.perf_counter()
        it = iter(loader)
        while True:
            t0 = time.perf_counter()
            try:
                x, y = next(it)
            except StopIteration:
                break
            latencies.append(time.perf_counter() - t0)
            seen += len(y)
        rate = seen / (time.perf_counter() - start)
        del it
    steady = latencies[len(latencies) // 10:] or latencies
    return rate, statistics.median(steady) * 1e3


def _median_pair(fn_ours, fn_peer, repeat: int):
    ours, peer = [], []
    for _ in range(repeat):
        ours.append(fn_ours())
        if fn_peer is not None:
            peer.append(fn_peer())
    pick = lambda rows: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))  # noqa: E731
    return pick(ours), (pick(peer) if peer else None)


def bench(repeat: int, *_unused) -> list:
    """Rows ``(name, ours, peer, peer_name, target)`` for scripts/bench.py."""
    sys.path.insert(0, os.path.join(HERE, ".."))
    try:
        import torch  # noqa: PLC0415 - the peer is optional
    except ImportError:
        torch = None
    repeat = max(1, min(repeat, 3))
    rows = []
    for workers, target in ((0, ">= 1.0x"), (2, ">= 2x")):
        ours_loader = make_loader("ours", workers)
        peer_loader = make_loader("torch", workers) if torch is not None else None
        (ours_rate, ours_lat), peer = _median_pair(
            functools.partial(epoch_stats, ours_loader),
            functools.partial(epoch_stats, peer_loader) if peer_loader else None, repeat)
        peer_rate, peer_lat = peer if peer else (None, None)
        rows.append((f"DataLoader {workers} workers, samples/s (higher is better)", ours_rate, peer_rate,
                     "torch", target))
        rows.append((f"DataLoader {workers} workers, per-batch latency (ms)", ours_lat, peer_lat, "torch", "info"))
    return rows


if __name__ == "__main__":
    for name, ours, peer, peer_name, target in bench(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        ratio = f"{ours / peer:.2f}x" if peer else "-"
        peer_text = f"{peer:12.3f}" if peer is not None else f"{'-':>12}"
        print(f"{name:58s} ours {ours:12.3f}  {peer_name} {peer_text}  ratio {ratio:>7}  target {target}")
