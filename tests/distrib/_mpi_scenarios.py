"""What each rank runs in the ``mpi`` backend's tests (under mpiexec). Results are JSON-able.

Every scenario calls ``init_process_group("mpi")`` with no rendezvous arguments: rank, size
and the store's address come from MPI, as under a plain ``mpirun``.
"""

from __future__ import annotations

import os
import threading

import numpy as np

import distrib as dist
import tensor


def _error(exc) -> dict:
    return {"type": type(exc).__name__, "message": str(exc), "is_runtime_error": isinstance(exc, RuntimeError)}


def _park(seconds: float = 60) -> None:
    """Stand still (not in any distrib op) until the job is torn down, at most ``seconds``."""
    threading.Event().wait(seconds)


def skip_collective(timeout="2", skipper="1", count="1000"):
    """Rank ``skipper`` never calls the second collective (an all_reduce of ``count`` floats);
    the others must fail, naming it."""
    dist.init_process_group("mpi", timeout=float(timeout))
    rank = dist.get_rank()
    dist.all_reduce(tensor.ones(2))
    if rank == int(skipper):
        _park()
        return {}
    try:
        dist.all_reduce(tensor.ones(int(count)))
        return {"error": None}
    except dist.DistError as exc:
        first = _error(exc)
    try:  # the communicator is unusable now: later ops refuse at once instead of hanging
        dist.barrier()
        later = None
    except dist.DistError as exc:
        later = _error(exc)
    return {"error": first, "later": later}


def dead_rank(timeout="60", count="100000"):
    """Rank 1 exits before the second collective (an all_reduce of ``count`` floats); rank 0
    must name it long before ``timeout``."""
    dist.init_process_group("mpi", timeout=float(timeout))
    dist.all_reduce(tensor.ones(2))
    if dist.get_rank() == 1:
        os._exit(3)
    try:
        dist.all_reduce(tensor.ones(int(count)))
        return {"error": None}
    except dist.DistError as exc:
        return {"error": _error(exc)}


def uncaught(timeout="60"):
    """Rank 1 raises and does not catch; rank 0 waits in a collective that would take ``timeout``."""
    dist.init_process_group("mpi", timeout=float(timeout))
    dist.barrier()
    if dist.get_rank() == 1:
        raise ValueError("boom from rank 1")
    dist.all_reduce(tensor.ones(10))
    return {"finished": True}


def recv_timeout():
    """Rank 0 waits 1 s for a message that never comes; the cancelled receive leaves MPI clean,
    so both ranks then pass a barrier and the job exits normally."""
    dist.init_process_group("mpi", timeout=30)
    rank = dist.get_rank()
    out = {"error": None}
    if rank == 0:
        work = dist.irecv(tensor.zeros(3), src=1, tag=5)
        try:
            work.wait(timeout=1)
        except dist.DistError as exc:
            out["error"] = _error(exc)
        out["completed"] = work.is_completed()
    dist.barrier()
    t = tensor.full((2,), float(rank))
    dist.all_reduce(t)
    out["sum"] = t.tolist()
    dist.destroy_process_group()
    return out


def p2p_size_mismatch():
    """Rank 1 sends fewer elements than rank 0 receives: a clear error, not garbage."""
    dist.init_process_group("mpi", timeout=30)
    out = {"error": None}
    if dist.get_rank() == 1:
        dist.send(tensor.ones(3), dst=0)
    else:
        try:
            dist.recv(tensor.zeros(5), src=1)
        except dist.DistError as exc:
            out["error"] = _error(exc)
    dist.barrier()
    dist.destroy_process_group()
    return out


def big_objects():
    """Object collectives whose pickles span many chunks (run with a small DISTRIB_MPI_MAX_COUNT)."""
    dist.init_process_group("mpi", timeout=60)
    rank, n = dist.get_rank(), dist.get_world_size()
    payload = np.arange(300_000, dtype=np.int64) * (rank + 1)  # 2.4 MB pickles
    box = [payload if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    everyone = [None] * n
    dist.all_gather_object(everyone, {"rank": rank, "data": payload})
    got = None
    if rank == 1:
        dist.send_object_list([payload], dst=0)
    elif rank == 0:
        recv_box = [None]
        src = dist.recv_object_list(recv_box)
        got = {"src": src, "ok": bool(np.array_equal(recv_box[0], np.arange(300_000) * 2))}
    dist.destroy_process_group()
    base = np.arange(300_000, dtype=np.int64)
    return {
        "broadcast": bool(np.array_equal(box[0], base)),
        "all_gather": [bool(e["rank"] == r and np.array_equal(e["data"], base * (r + 1)))
                       for r, e in enumerate(everyone)],
        "p2p": got,
    }


def user_defined_ops():
    """Reductions through the fallback for dtypes the MPI library lacks (forced here for float16)."""
    from distrib.backends import mpi_backend

    dist.init_process_group("mpi", timeout=30)
    rank, n = dist.get_rank(), dist.get_world_size()
    backend = dist.group.WORLD.backend
    backend.types.native[np.dtype(np.float16)] = False  # as if MPI had no float16
    out = {}
    for name, op in [("sum", dist.ReduceOp.SUM), ("max", dist.ReduceOp.MAX), ("avg", dist.ReduceOp.AVG)]:
        t = tensor.arange(6, dtype=tensor.float16) + rank
        dist.all_reduce(t, op=op)
        out[name] = t.tolist()
    rs = tensor.zeros(2, dtype=tensor.float16)
    dist.reduce_scatter_tensor(rs, tensor.arange(2 * n, dtype=tensor.float16) * (rank + 1))
    out["reduce_scatter"] = rs.tolist()
    out["used_user_ops"] = sorted(op for _, op in backend.types.user_ops)
    assert isinstance(backend, mpi_backend.MpiBackend)
    dist.destroy_process_group()
    return out


def subgroups():
    """Overlapping groups on 3 ranks, group-rank translation and point to point within a group."""
    dist.init_process_group("mpi", timeout=30)
    rank = dist.get_rank()
    low, high = dist.new_group([0, 1]), dist.new_group([1, 2])
    out = {"backend": dist.get_backend(), "low": None, "high": None}
    for name, group, members in [("low", low, [0, 1]), ("high", high, [1, 2])]:
        if rank not in members:
            out[name] = {"member": False, "rank": dist.get_rank(group)}
            continue
        t = tensor.full((3,), 10.0 ** rank)
        dist.all_reduce(t, group=group)
        g = tensor.full((1,), float(rank))
        gathered = [tensor.zeros(1) for _ in members]
        dist.all_gather(gathered, g, group=group)
        other = members[1] if rank == members[0] else members[0]
        if rank == members[0]:
            dist.send(tensor.full((2,), float(rank)), dst=other, group=group)
            src, got = None, None
        else:
            box = tensor.zeros(2)
            src = dist.recv(box, src=None, group=group)  # any source: returns a global rank
            got = box.tolist()
        out[name] = {"member": True, "rank": dist.get_rank(group), "sum": t.tolist(),
                     "gathered": [x.item() for x in gathered], "src": src, "got": got}
    dist.barrier()
    dist.destroy_process_group()
    return out


def outside_mpi_job():
    """Started as separate processes (env:// rendezvous), not by one mpiexec: a clear error."""
    try:
        dist.init_process_group("mpi", timeout=10)
    except dist.DistError as exc:
        return {"error": _error(exc)}
    dist.destroy_process_group()
    return {"error": None}


def hot_all_reduce():
    """Small synchronous all_reduces on the blocking hot path (Note [Blocking all_reduce]): exact
    values for each dtype and op, which calls took the path, and order with async ops."""
    dist.init_process_group("mpi", timeout=30)
    rank, n = dist.get_rank(), dist.get_world_size()
    pg = dist.group.WORLD
    hot = pg.backend.hot
    wrong, paths = [], {}
    cases = [(tensor.float32, dist.ReduceOp.SUM), (tensor.float64, dist.ReduceOp.MAX),
             (tensor.int32, dist.ReduceOp.PRODUCT), (tensor.int64, dist.ReduceOp.MIN),
             (tensor.uint8, dist.ReduceOp.BXOR), (tensor.float32, dist.ReduceOp.AVG)]
    values = list(range(1, n + 1))  # rank r contributes r + 1
    expected = {"SUM": sum(values), "MAX": max(values), "PRODUCT": int(np.prod(values)), "MIN": min(values),
                "BXOR": int(np.bitwise_xor.reduce(values)), "AVG": sum(values) / n}
    for dtype, op in cases:
        key = f"{dtype}/{op.name}"
        paths[key] = []
        for _ in range(3):
            t = tensor.full((1000,), rank + 1, dtype=dtype)
            version = t._version
            dist.all_reduce(t, op=op)
            paths[key].append(hot.finished == pg.seq)  # this op ran on the hot path
            if t.tolist() != [expected[op.name]] * 1000 or t._version != version + 1:
                wrong.append(key)
    scalars = []  # a loss or a metric: a 0-d tensor (float32 SUM is covered by now)
    for _ in range(2):
        loss = tensor.tensor(float(rank + 1))
        dist.all_reduce(loss)
        scalars.append([loss.item(), hot.finished == pg.seq])
    # an async op still queued or running goes first: the hot path declines meanwhile
    a, b = tensor.full((1000,), 1.0), tensor.full((1000,), 2.0)
    work = dist.all_reduce(a, async_op=True)
    dist.all_reduce(b)
    work.wait()
    ordered = a.tolist() == [float(n)] * 1000 and b.tolist() == [2.0 * n] * 1000
    view = tensor.full((4, 250), rank + 1.0).t()  # not contiguous: the general path stages it
    dist.all_reduce(view)
    strided = view.tolist() == [[float(sum(values))] * 4] * 250 and hot.finished != pg.seq
    dist.destroy_process_group()
    return {"wrong": wrong, "paths": paths, "scalars": scalars, "ordered": ordered, "strided": strided}
