"""Collective benchmarks: our zmq backend (shared memory and TCP) vs torch's gloo, 2 ranks, one run.

Usage: ``python scripts/bench_collectives.py [--repeat N] [--rounds R]``. ``bench(repeat)``
returns rows ``(name, ours, peer, peer_name, target)`` in milliseconds for
``scripts/bench.py``; bus bandwidth (``2(n-1)/n * bytes / time``) is printed for all_reduce.
Every worker is a subprocess on 127.0.0.1 with a deadline; torch is used only as the peer
being measured.

The machine is shared and its load drifts by 2x within seconds, so one launch of each
implementation after the other compares different machines. Instead the three launches
(zmq+shm, zmq tcp, gloo) are interleaved for ``rounds`` rounds, each case's time is the
median over rounds of the per-launch medians, and the printed ratio is the median of the
per-round ratios (gloo time / ours, measured seconds apart).
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
SIZES = {"4KB": 4 << 10, "1MB": 1 << 20, "4MB": 4 << 20, "64MB": 64 << 20}
GLOO_TARGETS = {"4KB": 0.49, "1MB": 1.27, "4MB": 3.7, "64MB": 47.7}  # BENCHMARKS baseline, ms
WORLD = 2


def _cases():
    cases = [("all_reduce", k, v) for k, v in SIZES.items()]
    cases += [("all_gather", "4MB", 4 << 20), ("broadcast", "4MB", 4 << 20), ("reduce_scatter", "4MB", 4 << 20)]
    return cases


def _iters(nbytes: int, repeat: int) -> int:
    return max(3, repeat if nbytes >= (16 << 20) else repeat * 4)


def _worker_ours(rank, port, repeat):
    sys.path.insert(0, ROOT)
    import distrib as dist  # noqa: PLC0415 - the worker process imports what it measures
    import tensor  # noqa: PLC0415

    dist.init_process_group("zmq", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
                            timeout=120)
    results = {}
    for op, label, nbytes in _cases():
        n = nbytes // 4
        x = tensor.ones(n)
        outs = [tensor.zeros(n) for _ in range(WORLD)]
        big = tensor.ones(n)
        small = tensor.zeros(n // WORLD)
        run = {
            "all_reduce": lambda x=x: dist.all_reduce(x),
            "all_gather": lambda x=x, outs=outs: dist.all_gather(outs, x),
            "broadcast": lambda x=x: dist.broadcast(x, src=0),
            "reduce_scatter": lambda small=small, big=big: dist.reduce_scatter_tensor(small, big),
        }[op]
        times = []
        for _ in range(_iters(nbytes, repeat) + 2):
            dist.barrier()
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        results[f"{op} {label}"] = statistics.median(times[2:]) * 1e3
    dist.destroy_process_group()
    return results


def _worker_torch(rank, port, repeat):
    import torch  # noqa: PLC0415 - the peer, measured in its own process
    import torch.distributed as tdist  # noqa: PLC0415

    torch.set_num_threads(1)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    results = {}
    for op, label, nbytes in _cases():
        n = nbytes // 4
        x = torch.ones(n)
        outs = [torch.zeros(n) for _ in range(WORLD)]
        big, small = torch.ones(n), torch.zeros(n // WORLD)
        run = {
            "all_reduce": lambda x=x: tdist.all_reduce(x),
            "all_gather": lambda x=x, outs=outs: tdist.all_gather(outs, x),
            "broadcast": lambda x=x: tdist.broadcast(x, src=0),
            # gloo has no reduce_scatter: all_reduce then keep our block is what users do
            "reduce_scatter": lambda big=big, small=small, n=n: (tdist.all_reduce(big),
                                                                 small.copy_(big[: n // WORLD])),
        }[op]
        times = []
        for _ in range(_iters(nbytes, repeat) + 2):
            tdist.barrier()
            t0 = time.perf_counter()
            run()
            times.append(time.perf_counter() - t0)
        results[f"{op} {label}"] = statistics.median(times[2:]) * 1e3
    tdist.destroy_process_group()
    return results


def _launch(impl: str, repeat: int, env_extra: dict, deadline: float = 600) -> dict:
    return run_ranks(__file__, WORLD, lambda rank, port: ("--worker", impl, rank, port, repeat), env_extra, deadline)


def _rounds(repeat: int, rounds: int) -> tuple[list[dict], list[dict], list[dict]]:
    shm, tcp, gloo = [], [], []
    for _ in range(rounds):
        shm.append(_launch("ours", repeat, {"DISTRIB_ZMQ_SHM": "1"}))
        tcp.append(_launch("ours", repeat, {"DISTRIB_ZMQ_SHM": "0"}))
        try:
            gloo.append(_launch("torch", repeat, {}))
        except (RuntimeError, json.JSONDecodeError, subprocess.TimeoutExpired) as exc:
            print(f"gloo peer unavailable: {exc}", file=sys.stderr)
    return shm, tcp, gloo


def _median(runs: list[dict], key: str) -> float:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else float("nan")


def _ratio(ours: list[dict], peer: list[dict], key: str) -> float:
    """Median over rounds of peer/ours, each ratio from launches seconds apart."""
    values = [p[key] / o[key] for o, p in zip(ours, peer) if key in p and key in o]
    return statistics.median(values) if values else float("nan")


def _rows(shm, tcp, gloo) -> list[tuple]:
    rows = []
    for key in shm[0]:
        peer = _median(gloo, key)
        rows.append((f"{key} zmq+shm", _median(shm, key), peer, "torch gloo",
                     "<= 20 ms" if key == "all_reduce 64MB" else "< gloo", _ratio(shm, gloo, key)))
        rows.append((f"{key} zmq tcp", _median(tcp, key), peer, "torch gloo", "< gloo", _ratio(tcp, gloo, key)))
    return rows


def bench(repeat: int = 10, *_unused, rounds: int = 3) -> list[tuple]:
    """Rows ``(name, ours_ms, peer_ms, peer_name, target)``."""
    return [row[:5] for row in _rows(*_rounds(repeat, rounds))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="interleaved launches of each implementation")
    parser.add_argument("--worker", nargs=4, metavar=("IMPL", "RANK", "PORT", "REPEAT"))
    args = parser.parse_args()
    if args.worker:
        impl, rank, port, repeat = args.worker
        fn = _worker_ours if impl == "ours" else _worker_torch
        print(json.dumps(fn(int(rank), int(port), int(repeat))), flush=True)
        return
    rows = _rows(*_rounds(args.repeat, args.rounds))
    print(f"{'case':32} {'ours ms':>9} {'gloo ms':>9} {'ratio':>7} {'busbw GB/s':>11}  target")
    for name, ours, peer, _, target, ratio in rows:
        op, label = name.split()[:2]
        busbw = 2 * (WORLD - 1) / WORLD * SIZES[label] / (ours / 1e3) / 1e9 if op == "all_reduce" else float("nan")
        print(f"{name:32} {ours:9.3f} {peer:9.3f} {ratio:7.2f} {busbw:11.2f}  {target}")
    print(f"(times: medians over {args.rounds} interleaved rounds; ratio: median of the per-round gloo/ours)")


if __name__ == "__main__":
    main()
