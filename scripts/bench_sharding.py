#!/usr/bin/env python3
"""Issue 15 benchmark: ZeRO-1 and FSDP train steps, 2 ranks, zmq, against our DDP and torch on gloo.

    .venv/bin/python scripts/bench_sharding.py [--repeat 30]

The workload is bench_ddp's: an MLP 784-512-512-10 (float32), cross-entropy, batch 128 on each
rank, in DistributedDataParallel, here with Adam. Rows (times in ms, medians from rank 0):

* our DDP + ZeRO-1(Adam) step vs our DDP + Adam step: what sharding the optimizer costs,
  target <= 1.1x;
* our DDP + ZeRO-1(Adam) step vs torch's DDP + ZeroRedundancyOptimizer(Adam) on gloo;
* our FSDP FULL_SHARD step (``fully_shard`` on each Linear, then the root; Adam) vs torch's FSDP2
  (``torch.distributed.fsdp.fully_shard``, the same units) on gloo, target <= 1.0x;
* that step (implicit prefetching) vs the same with prefetching off (empty explicit lists).

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
import types

from _bench_ranks import run_ranks
from bench_ddp import BATCH, SIZES, _data, _timed_steps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORLD, ROUNDS = 2, 4


def _mlp(lib):
    return lib.nn.Sequential(
        lib.nn.Linear(SIZES[0], SIZES[1]),
        lib.nn.ReLU(),
        lib.nn.Linear(SIZES[1], SIZES[2]),
        lib.nn.ReLU(),
        lib.nn.Linear(SIZES[2], SIZES[3]),
    )


def _step_times(model, opt, x, y, F, steps: int) -> list[float]:
    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return _timed_steps(step, steps)


def _worker_ours(rank: int, world: int, port: int, steps: int, impl: str) -> list[float]:
    sys.path.insert(0, ROOT)
    import distrib as dist  # noqa: PLC0415 - the worker process imports what it measures
    import nn  # noqa: PLC0415
    import nn.functional as F  # noqa: PLC0415
    import tensor  # noqa: PLC0415
    from distrib.fsdp import fully_shard  # noqa: PLC0415
    from distrib.optim import ZeroRedundancyOptimizer  # noqa: PLC0415

    tensor.manual_seed(0)
    model = _mlp(types.SimpleNamespace(nn=nn))
    dist.init_process_group("zmq", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=120)
    if impl.startswith("fsdp"):
        units = [fully_shard(layer) for layer in model[::2]]
        model = fully_shard(model)
        if impl == "fsdp-noprefetch":  # explicit empty lists replace the implicit choice
            for unit in [*units, model]:
                unit.set_modules_to_forward_prefetch([])
                unit.set_modules_to_backward_prefetch([])
    else:
        model = dist.DistributedDataParallel(model)
    if impl == "zero":
        opt = ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, lr=1e-3)
    else:
        opt = nn.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _data(tensor, rank)
    times = _step_times(model, opt, x, y, F, steps)
    dist.destroy_process_group()
    return times


def _worker_torch(rank: int, world: int, port: int, steps: int, impl: str) -> list[float]:
    import torch  # noqa: PLC0415 - the peer, measured in its own process
    import torch.distributed as tdist  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415
    from torch.distributed.device_mesh import init_device_mesh  # noqa: PLC0415
    from torch.distributed.fsdp import fully_shard  # noqa: PLC0415
    from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: PLC0415

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = _mlp(torch)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    if impl == "torch-fsdp":
        mesh = init_device_mesh("cpu", (world,))
        for layer in model[::2]:
            fully_shard(layer, mesh=mesh)
        model = fully_shard(model, mesh=mesh)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        model = torch.nn.parallel.DistributedDataParallel(model)
        opt = ZeroRedundancyOptimizer(model.parameters(), torch.optim.Adam, lr=1e-3)
    x, y = _data(torch, rank)
    times = _step_times(model, opt, x, y, F, steps)
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
    impls = ["zero", "ddp", "fsdp", "fsdp-noprefetch"] + (["torch-zero", "torch-fsdp"] if have_torch else [])
    times: dict[str, list[float]] = {impl: [] for impl in impls}
    for _ in range(ROUNDS):
        for impl in list(impls):
            try:
                times[impl] += _job(impl, steps)
            except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                if not impl.startswith("torch"):
                    raise
                print(f"torch gloo peer {impl} unavailable: {exc}", file=sys.stderr)
                impls.remove(impl)
    ms = lambda impl: statistics.median(times[impl]) * 1e3 if times.get(impl) else None  # noqa: E731
    zero, fsdp = f"ZeRO-1 Adam MLP step b{BATCH}x{WORLD} ranks", f"FSDP FULL_SHARD Adam MLP step b{BATCH}x{WORLD}"
    return [
        (f"{zero} (peer: our DDP + Adam)", ms("zero"), ms("ddp"), "ours", "<= 1.1x"),
        (f"{zero}, zmq (peer: gloo ZeRO-1)", ms("zero"), ms("torch-zero"), "torch", "(none)"),
        (f"{fsdp}, zmq (peer: gloo FSDP2)", ms("fsdp"), ms("torch-fsdp"), "torch", "<= 1.0x"),
        (f"{fsdp} (peer: our DDP + Adam)", ms("fsdp"), ms("ddp"), "ours", "(none)"),
        (f"{fsdp}, prefetch (peer: no prefetch)", ms("fsdp"), ms("fsdp-noprefetch"), "ours", "(none)"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed steps per job and round (default 30)")
    parser.add_argument("--worker", nargs=5, metavar=("IMPL", "RANK", "WORLD", "PORT", "STEPS"))
    args = parser.parse_args()
    if args.worker:
        impl, rank, world, port, steps = args.worker
        args = (int(rank), int(world), int(port), int(steps))
        times = _worker_torch(*args, impl) if impl.startswith("torch") else _worker_ours(*args, impl)
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
