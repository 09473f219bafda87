"""Two hosts of two ranks each, as two network namespaces: the job of ``test_hierarchical.py``
and ``scripts/bench_hierarchical.py``.

``run_2x2(mode, env)`` starts four ranks of this module (ranks 0, 1 in namespace 0 with
``DISTRIB_HOST_ID=ns0``, ranks 2, 3 in namespace 1), each bound to its namespace's address,
and returns their JSON verdicts by rank. Mode ``check`` all_reduces several sizes, dtypes and
ops and compares every result bitwise with numpy reducing in the hierarchical order; mode
``bench`` times all_reduce of a few sizes; in mode ``fail`` rank 3 exits and the others report
how their all_reduce failed. Needs root (``tests.launch.conftest.netns_skip_reason``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np

HOSTS = 2
PER_HOST = 2
WORLD = HOSTS * PER_HOST
# (dtype, elements, op): small ones (flat, up to 64 KiB), a few pieces of a leader message, several shm slots.
CASES = [
    ("float64", 1, "SUM"),
    ("float64", 1000, "SUM"),
    ("float64", 300_000, "SUM"),
    ("float32", 70_000, "AVG"),
    ("int64", 20_000, "MAX"),
    ("bool", 17, "SUM"),
    ("int32", 50_000, "AVG"),
    ("bool", 100_000, "SUM"),
]
BENCH_SIZES = {"4KB": 4 << 10, "1MB": 1 << 20, "16MB": 16 << 20}


def contribution(rank: int, dtype: str, n: int) -> np.ndarray:
    """Rank ``rank``'s input of a case: random values that make float sums order-sensitive."""
    rng = np.random.default_rng(1000 + rank)
    if dtype == "bool":
        return rng.random(n) < 0.3
    if dtype.startswith("int"):
        return rng.integers(-1000, 1000, n).astype(dtype)
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n)).astype(dtype)


def hierarchical(dtype: str, n: int) -> bool:
    """Whether the zmq backend reduces ``n`` elements of ``dtype`` hierarchically (above 64 KiB)."""
    return n * np.dtype(dtype).itemsize > 64 << 10


def expected(dtype: str, n: int, op: str) -> np.ndarray:
    """The result: hierarchically, each host's ranks reduced in rank order, then the hosts in
    order; below the size threshold, the flat direct exchange's rank order."""
    xs = [contribution(r, dtype, n) for r in range(WORLD)]
    if dtype == "bool":
        return np.logical_or.reduce(xs)
    if op == "MAX":
        return np.maximum.reduce(xs)
    total = (xs[0] + xs[1]) + (xs[2] + xs[3]) if hierarchical(dtype, n) else ((xs[0] + xs[1]) + xs[2]) + xs[3]
    if op == "AVG":
        if total.dtype.kind == "f":
            return total / np.array(WORLD, total.dtype)
        return (np.sign(total) * (np.abs(total) // WORLD)).astype(total.dtype)
    return total


def _check(dist, tensor) -> dict:
    from distrib.init_api import world  # noqa: PLC0415 - the worker's own import

    failures = []
    for dtype, n, op in CASES:
        t = tensor.from_numpy(contribution(dist.get_rank(), dtype, n))
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        got, want = t.numpy(), expected(dtype, n, op)
        if got.dtype != want.dtype or got.tobytes() != want.tobytes():
            failures.append(f"{dtype}[{n}] {op}: max abs diff {np.max(np.abs(got.astype(float) - want))}")
    hierarchy = world.default_pg.backend.hierarchy
    return {"failures": failures, "calls": None if hierarchy is None else hierarchy.calls}


def _bench(dist, tensor, repeat: int) -> dict:
    times = {}
    for label, nbytes in BENCH_SIZES.items():
        t = tensor.ones(nbytes // 4)
        dist.all_reduce(t)  # warm-up
        samples = []
        for _ in range(max(3, repeat if nbytes >= (16 << 20) else 4 * repeat)):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t)
            samples.append(time.perf_counter() - start)
        times[label] = float(np.median(samples)) * 1e3
    return {"ms": times}


def _fail(dist, tensor) -> None:
    """Rank 3 exits after init; the others' 1 MB all_reduce must fail (they print the error)."""
    rank = dist.get_rank()
    if rank == WORLD - 1:
        verdict = {"exited": True}
    else:
        try:
            dist.all_reduce(tensor.ones(1 << 18))
            verdict = {"error": None}
        except dist.DistBackendError as exc:
            verdict = {"error": str(exc)}
    print(json.dumps({"rank": rank, **verdict}), flush=True)
    os._exit(0)  # no destroy_process_group: its barrier would wait for the dead rank


def main() -> None:
    mode, rank, addr, port, repeat = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    import distrib as dist  # noqa: PLC0415 - after the environment is set
    import tensor  # noqa: PLC0415

    timeout = 5 if mode == "fail" else 60
    dist.init_process_group("zmq", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=WORLD, timeout=timeout)
    if mode == "fail":
        _fail(dist, tensor)
    try:
        verdict = _check(dist, tensor) if mode == "check" else _bench(dist, tensor, repeat)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    print(json.dumps({"rank": rank, **verdict}), flush=True)


def run_2x2(net, mode: str, env: dict, repeat: int = 5, timeout: float = 120.0) -> list[dict]:
    """Run the 2x2 job in ``net`` (a ``tests.launch.conftest.NetnsPair``); the ranks' verdicts.

    Raises:
        RuntimeError: a rank failed or did not finish within ``timeout`` seconds (all are killed).
    """
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    port = 29000 + os.getpid() % 1000
    procs = []
    for rank in range(WORLD):
        host = rank // PER_HOST
        penv = {
            **env,
            "DISTRIB_HOST_ID": f"ns{host}",
            "DISTRIB_ZMQ_HOST": net.ADDRS[host],
            "PYTHONPATH": root,
            "OMP_NUM_THREADS": "1",
        }
        argv = [
            *net.prefix(host),
            sys.executable,
            "-m",
            "tests.distrib._hierarchical_worker",
            mode,
            str(rank),
            net.ADDRS[0],
            str(port),
            str(repeat),
        ]
        procs.append(
            subprocess.Popen(argv, cwd=root, env=penv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    deadline = time.monotonic() + timeout
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            if p.returncode != 0:
                raise RuntimeError(f"rank exited with {p.returncode}: {err[-3000:]}")
            outs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outs


if __name__ == "__main__":
    main()
