#!/usr/bin/env python3
"""Issue 7 benchmark: a DistributedDataParallel train step, 2 ranks, zmq, vs torch DDP with gloo.

    .venv/bin/python scripts/bench_ddp.py [--repeat 30]

The workload: an MLP 784-512-512-10 (float32), cross-entropy, SGD with momentum, batch 128 on
each rank. Rows (times in ms, medians from rank 0):

* our DDP step (2 ranks) vs torch's DDP with gloo (2 ranks), target <= 1.0x;
* our DDP step (2 ranks) vs our single-process step at the same per-rank batch: the cost of
  communication that backward did not hide, target <= 1.3x; once with the defaults and once
  with ``gradient_as_bucket_view=True`` (PyTorch's option that saves the copy of the averaged
  gradients out of the buckets).

Every job runs as subprocesses on 127.0.0.1 (``OMP_NUM_THREADS=1`` each, as the launchers
set it) with a deadline; the jobs alternate for ``ROUNDS`` rounds and the per-step times of
all rounds are pooled. torch is only the peer being measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _bench_ranks import run_ranks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORLD, BATCH, WARMUP, ROUNDS = 2, 128, 20, 4
SIZES = (784, 512, 512, 10)


def _data(lib, rank: int):
    gen = lib.Generator().manual_seed(1234 + rank)
    x = lib.randn(BATCH, SIZES[0], generator=gen)
    y = lib.randint(0, SIZES[-1], (BATCH,), generator=gen)
    return x, y


def _timed_steps(step, steps: int) -> list[float]:
    for _ in range(WARMUP):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def _worker_ours(rank: int, world: int, port: int, steps: int, bucket_view: bool = False) -> list[float]:
    sys.path.insert(0, ROOT)
    import distrib as dist  # noqa: PLC0415 - the worker process imports what it measures
    import nn  # noqa: PLC0415
    import nn.functional as F  # noqa: PLC0415
    import tensor  # noqa: PLC0415

    tensor.manual_seed(0)
    model = nn.Sequential(nn.Linear(SIZES[0], SIZES[1]), nn.ReLU(), nn.Linear(SIZES[1], SIZES[2]), nn.ReLU(),
                          nn.Linear(SIZES[2], SIZES[3]))
    if world > 1:
        dist.init_process_group("zmq", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=120)
        model = dist.DistributedDataParallel(model, gradient_as_bucket_view=bucket_view)
    opt = nn.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = _data(tensor, rank)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    times = _timed_steps(step, steps)
    if world > 1:
        dist.destroy_process_group()
    return times


def _worker_torch(rank: int, world: int, port: int, steps: int) -> list[float]:
    import torch  # noqa: PLC0415 - the peer, measured in its own process
    import torch.distributed as tdist  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(SIZES[0], SIZES[1]), torch.nn.ReLU(),
                                torch.nn.Linear(SIZES[1], SIZES[2]), torch.nn.ReLU(),
                                torch.nn.Linear(SIZES[2], SIZES[3]))
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = _data(torch, rank)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    times = _timed_steps(step, steps)
    tdist.barrier()
    return times  # no destroy_process_group: gloo's teardown can abort at exit; the result is printed first


def _job(impl: str, world: int, steps: int, deadline: float = 300) -> list[float]:
    """Per-step times (s) of rank 0 of one job of ``world`` subprocesses."""
    return run_ranks(os.path.abspath(__file__), world,
                     lambda rank, port: ("--worker", impl, rank, world, port, steps), {"PYTHONPATH": ROOT}, deadline)


def bench(repeat: int = 30, paired_times=None, have_torch: bool = True) -> list[tuple]:
    """Rows ``(workload, ours_ms, peer_ms, peer_name, target)``; ``paired_times`` is unused (the
    workloads run in subprocesses, alternating by round instead)."""
    steps = max(5, repeat)
    ddp, ddp_view, single, gloo = [], [], [], []
    for _ in range(ROUNDS):
        ddp += _job("ours", WORLD, steps)
        ddp_view += _job("ours-bucket-view", WORLD, steps)
        single += _job("ours", 1, steps)
        if have_torch:
            try:
                gloo += _job("torch", WORLD, steps)
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                print(f"torch gloo peer unavailable: {exc}", file=sys.stderr)
                have_torch = False
    ms = lambda times: statistics.median(times) * 1e3 if times else None  # noqa: E731
    name = f"DDP MLP step b{BATCH}x{WORLD} ranks"
    return [
        (f"{name}, zmq (peer: gloo DDP)", ms(ddp), ms(gloo), "torch", "<= 1.0x"),
        (f"{name} (peer: 1 process, overlap)", ms(ddp), ms(single), "ours", "<= 1.3x"),
        (f"{name}, gradient_as_bucket_view (peer: 1 process)", ms(ddp_view), ms(single), "ours", "<= 1.3x"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed steps per job and round (default 30)")
    parser.add_argument("--worker", nargs=5, metavar=("IMPL", "RANK", "WORLD", "PORT", "STEPS"))
    args = parser.parse_args()
    if args.worker:
        impl, rank, world, port, steps = args.worker
        args = (int(rank), int(world), int(port), int(steps))
        if impl == "torch":
            times = _worker_torch(*args)
        else:
            times = _worker_ours(*args, bucket_view=impl == "ours-bucket-view")
        print(json.dumps(times), flush=True)
        return
    try:
        import torch  # noqa: F401, PLC0415 - only to know whether the peer can run
        have_torch = True
    except ImportError:
        have_torch = False
    for workload, ours, peer, peer_name, target in bench(args.repeat, None, have_torch):
        ratio = f"{ours / peer:5.2f}x" if peer else "  n/a"
        peer_text = f"{peer:8.3f}" if peer is not None else "     n/a"
        print(f"{workload:<52} {ours:8.3f} ms  {peer_name:>6} {peer_text} ms  {ratio}  target {target}")


if __name__ == "__main__":
    main()
