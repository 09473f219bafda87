#!/usr/bin/env python3
"""Issue 15 benchmark: a ZeRO-1 train step (ZeroRedundancyOptimizer over Adam), 2 ranks, zmq.

    .venv/bin/python scripts/bench_sharding.py [--repeat 30]

The workload is bench_ddp's: an MLP 784-512-512-10 (float32), cross-entropy, batch 128 on each
rank, in DistributedDataParallel, here with Adam. Rows (times in ms, medians from rank 0):

* our DDP + ZeRO-1(Adam) step vs our DDP + Adam step: what sharding the optimizer costs,
  target <= 1.1x;
* our DDP + ZeRO-1(Adam) step vs torch's DDP + ZeroRedundancyOptimizer(Adam) on gloo.

The jobs alternate for ``ROUNDS`` rounds of subprocess ranks with a deadline; the per-step
times of all rounds are pooled. torch is only the peer being measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from _bench_ranks import run_ranks
from bench_ddp import BATCH, SIZES, _data, _timed_steps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORLD, ROUNDS = 2, 4


def _worker_ours(rank: int, world: int, port: int, steps: int, zero: bool) -> list[float]:
    sys.path.insert(0, ROOT)
    import distrib as dist  # noqa: PLC0415 - the worker process imports what it measures
    import nn  # noqa: PLC0415
    import nn.functional as F  # noqa: PLC0415
    import tensor  # noqa: PLC0415
    from distrib.optim import ZeroRedundancyOptimizer  # noqa: PLC0415

    tensor.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(SIZES[0], SIZES[1]),
        nn.ReLU(),
        nn.Linear(SIZES[1], SIZES[2]),
        nn.ReLU(),
        nn.Linear(SIZES[2], SIZES[3]),
    )
    dist.init_process_group("zmq", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=120)
    model = dist.DistributedDataParallel(model)
    if zero:
        opt = ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, lr=1e-3)
    else:
        opt = nn.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _data(tensor, rank)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    times = _timed_steps(step, steps)
    dist.destroy_process_group()
    return times


def _worker_torch(rank: int, world: int, port: int, steps: int) -> list[float]:
    import torch  # noqa: PLC0415 - the peer, measured in its own process
    import torch.distributed as tdist  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415
    from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: PLC0415

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(SIZES[0], SIZES[1]),
        torch.nn.ReLU(),
        torch.nn.Linear(SIZES[1], SIZES[2]),
        torch.nn.ReLU(),
        torch.nn.Linear(SIZES[2], SIZES[3]),
    )
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    model = torch.nn.parallel.DistributedDataParallel(model)
    opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=1e-3)
    x, y = _data(torch, rank)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    times = _timed_steps(step, steps)
    tdist.barrier()
    return times  # no destroy_process_group: gloo's teardown can abort at exit; the result is printed first


def _job(impl: str, steps: int, deadline: float = 300) -> list[float]:
    """Per-step times (s) of rank 0 of one job of WORLD subprocesses."""
    return run_ranks(
        os.path.abspath(__file__),
        WORLD,
        lambda rank, port: ("--worker", impl, rank, WORLD, port, steps),
        {"PYTHONPATH": ROOT},
        deadline,
    )


def bench(repeat: int = 30, paired_times=None, have_torch: bool = True) -> list[tuple]:
    """Rows ``(workload, ours_ms, peer_ms, peer_name, target)``; ``paired_times`` is unused (the
    workloads run in subprocesses, alternating by round instead)."""
    steps = max(5, repeat)
    zero, ddp, torch_zero = [], [], []
    for _ in range(ROUNDS):
        zero += _job("zero", steps)
        ddp += _job("ddp", steps)
        if have_torch:
            try:
                torch_zero += _job("torch", steps)
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                print(f"torch gloo peer unavailable: {exc}", file=sys.stderr)
                have_torch = False
    ms = lambda times: statistics.median(times) * 1e3 if times else None  # noqa: E731
    name = f"ZeRO-1 Adam MLP step b{BATCH}x{WORLD} ranks"
    return [
        (f"{name} (peer: our DDP + Adam)", ms(zero), ms(ddp), "ours", "<= 1.1x"),
        (f"{name}, zmq (peer: gloo ZeRO-1)", ms(zero), ms(torch_zero), "torch", "(none)"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed steps per job and round (default 30)")
    parser.add_argument("--worker", nargs=5, metavar=("IMPL", "RANK", "WORLD", "PORT", "STEPS"))
    args = parser.parse_args()
    if args.worker:
        impl, rank, world, port, steps = args.worker
        args = (int(rank), int(world), int(port), int(steps))
        times = _worker_torch(*args) if impl == "torch" else _worker_ours(*args, zero=impl == "zero")
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
