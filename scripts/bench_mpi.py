"""The ``mpi`` backend vs raw mpi4py: float32 all_reduce, 2 ranks, 4 KB / 1 MB / 4 MB / 64 MB.

Usage: ``python scripts/bench_mpi.py [--repeat N] [--breakdown]``. ``bench(repeat, paired_times, have_torch)``
returns rows ``(name, ours_ms, peer_ms, "mpi4py", target)`` for ``scripts/bench.py``. The job
runs under the venv's ``mpiexec -n 2`` (the ``mpich`` wheel) as a subprocess with a deadline.
On the same tensor's buffer, each iteration times ``dist.all_reduce(t)`` (the whole Tensor
API path) and raw ``COMM_WORLD.Allreduce`` in place and out of place (into a second
buffer), each after a barrier, in rotating order, so load changes and cache effects hit all
alike. The figures are rank 0's medians; the peer is the faster of the two raw forms (MPICH
picks different algorithms for them; at 4 MB the blocking in-place one is often several
times slower).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"4KB": 4 << 10, "1MB": 1 << 20, "4MB": 4 << 20, "64MB": 64 << 20}
WORLD = 2
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


def _iters(nbytes: int, repeat: int) -> int:
    return max(5, repeat if nbytes >= (16 << 20) else repeat * 10 if nbytes <= (64 << 10) else repeat * 3)


def _medians(comm, fns: dict, iters: int) -> dict:
    """Each function's median time in ms: every iteration runs all of them, each after a barrier,
    in rotating order (no position bias), after 3 warm-up iterations."""
    names = list(fns)
    times = {name: [] for name in names}
    for i in range(iters + 3):
        for k in range(len(names)):
            name = names[(i + k) % len(names)]
            comm.Barrier()
            t0 = time.perf_counter()
            fns[name]()
            if i >= 3:
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(record) * 1e3 for name, record in times.items()}


def _worker(repeat: int, breakdown: bool) -> dict:
    sys.path.insert(0, ROOT)
    import numpy as np  # noqa: PLC0415
    from mpi4py import MPI  # noqa: PLC0415 - the worker process imports what it measures

    import distrib as dist  # noqa: PLC0415
    import tensor  # noqa: PLC0415

    dist.init_process_group("mpi", timeout=300)
    comm = MPI.COMM_WORLD
    results = {}
    for label, nbytes in SIZES.items():
        if breakdown and label != "4KB":
            continue
        t = tensor.ones(nbytes // 4)
        buf = t._data  # the same memory both sides reduce
        other = np.empty_like(buf)
        fns = {"ours": lambda t=t: dist.all_reduce(t),
               "raw in place": lambda buf=buf: comm.Allreduce(MPI.IN_PLACE, buf),
               "raw out of place": lambda buf=buf, other=other: comm.Allreduce(buf, other)}
        if breakdown:  # the layers between the raw call and dist.all_reduce
            backend = dist.group.WORLD.backend_for(t)

            def nonblocking(buf=buf, sub=backend.comm):
                request = sub.Iallreduce(MPI.IN_PLACE, buf, MPI.SUM)
                while not request.Test():
                    pass

            fns["raw, count + datatype given"] = lambda b=buf: comm.Allreduce(MPI.IN_PLACE, (b, b.size, MPI.FLOAT))
            fns["Iallreduce + Test loop"] = nonblocking
            # an explicit group skips the hot path (Note [Hot all_reduce]): the general path
            fns["general path (group given)"] = lambda t=t, g=dist.group.WORLD: dist.all_reduce(t, group=g)
            # two tensors in turn: the hot path's lookup each time (plus 30 ns for the cycle)
            turns = itertools.cycle([t, tensor.ones(nbytes // 4)]).__next__
            fns["ours, two tensors in turn"] = lambda turns=turns: dist.all_reduce(turns())
        ms = _medians(comm, fns, _iters(nbytes, repeat))
        if breakdown:
            results = ms
        else:
            results[label] = (ms["ours"], min(ms["raw in place"], ms["raw out of place"]))
    dist.destroy_process_group()
    return results


def _launch(repeat: int, breakdown: bool = False, deadline: float = 900) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")}
    env.update({"OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT})
    cmd = [MPIEXEC, "-launcher", "fork", "-n", str(WORLD), sys.executable, os.path.abspath(__file__),
           "--worker", str(repeat), *(["--breakdown"] if breakdown else [])]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        proc.terminate()  # mpiexec tears its job down
        out, err = proc.communicate()
        raise RuntimeError(f"the MPI benchmark did not finish within {deadline} s:\n{err[-3000:]}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"the MPI benchmark failed ({proc.returncode}):\n{err[-3000:]}")
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[-1][7:])


def bench(repeat: int = 10, paired_times=None, have_torch: bool = False) -> list[tuple]:
    """Rows ``(name, ours_ms, raw_mpi4py_ms, "mpi4py", target)``.

    ``paired_times`` and ``have_torch`` are part of ``scripts/bench.py``'s interface; the timing
    alternates inside the MPI job instead, and torch is not involved.
    """
    results = _launch(repeat)
    return [(f"mpi backend all_reduce {label} (ms)", ours, raw, "mpi4py", "<= 1.15x")
            for label, (ours, raw) in results.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--breakdown", action="store_true",
                        help="time the layers of a 4 KB all_reduce, from the raw call to dist.all_reduce")
    parser.add_argument("--worker", type=int, metavar="REPEAT")
    args = parser.parse_args()
    if args.worker is not None:
        results = _worker(args.worker, args.breakdown)
        if int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))) == 0:
            print("RESULT " + json.dumps(results), flush=True)
        return
    if args.breakdown:
        for name, ms in sorted(_launch(args.repeat, breakdown=True).items(), key=lambda item: item[1]):
            print(f"4 KB all_reduce, {name:24} {ms * 1e3:7.2f} us")
        return
    print(f"{'case':36} {'ours ms':>9} {'mpi4py ms':>10} {'ratio':>7} {'busbw GB/s':>11}  target")
    for name, ours, raw, _, target in bench(args.repeat):
        label = name.split()[3]
        busbw = 2 * (WORLD - 1) / WORLD * SIZES[label] / (ours / 1e3) / 1e9
        print(f"{name:36} {ours:9.3f} {raw:10.3f} {ours / raw:6.2f}x {busbw:11.2f}  {target}")


if __name__ == "__main__":
    main()
