"""What each rank runs in the multi-process tests. Every function returns a JSON-able result.

``CASES`` is the conformance table: one line per case, ``name -> fn(rank, n)`` returning
``(actual, expected)`` with exact expected values (rank-filled tensors), or None where the
case needs more ranks. ``conformance`` runs them all in one process group, and each rank
checks its own results: the test gets one verdict per case and rank, never the arrays.
"""

from __future__ import annotations

import os
import sys
import traceback

import numpy as np

import distrib as dist
import tensor

R = np.arange  # short for expected ranges


def _t(values, dtype=tensor.float32):
    return tensor.tensor(values, dtype=dtype)


def _rank_filled(rank, shape=(4,), dtype=tensor.float32, offset=0):
    return tensor.full(shape, rank + offset, dtype=dtype)


def _all_reduce(op, dtype, fill, expect, count=5):
    """``count`` elements; 300_001 takes every backend's large-tensor path (the mpi ring from
    256 KiB, zmq's pieces and slots), with segments of unequal length."""
    def case(rank, n):
        t = tensor.full((count,), fill(rank), dtype=dtype)
        dist.all_reduce(t, op=op)
        return t, np.full((count,), expect(n), dtype=dtype.numpy)
    return case


def _large_all_reduce(rank, n):
    t = tensor.arange(1_500_000, dtype=tensor.float32) + rank  # > one shm slot and one TCP piece
    dist.all_reduce(t)
    return t, np.arange(1_500_000, dtype=np.float32) * n + n * (n - 1) / 2


def _avg_all_reduce_of(count):
    """AVG over ``count`` float32 elements: with 2 ranks on TCP, 500k (2 MB) takes the
    whole-tensor exchange in two pieces and 1.1M (4.4 MB) the fused ring, which
    finishes the average piece by piece. All values are exact in float32."""

    def case(rank, n):
        t = tensor.arange(count, dtype=tensor.float32) + rank
        dist.all_reduce(t, op=AVG)
        return t, np.arange(count, dtype=np.float32) + (n - 1) / 2

    return case


def _comm_buffer_all_reduce(op, count):
    """All-reduce a view, 16 elements in, of a buffer from the backend's ``alloc_comm_buffer``
    (zmq+shm: shared memory the peers write into; elsewhere None, and a plain tensor). The
    elements around the view keep this rank's values."""

    def case(rank, n):
        raw = dist.group.WORLD.backend.alloc_comm_buffer(4 * (count + 32))
        buffer = tensor.zeros(count + 32) if raw is None else tensor.from_numpy(raw.view(np.float32))
        buffer.fill_(-1.0 - rank)
        view = buffer[16:16 + count]
        view.copy_(tensor.arange(count, dtype=tensor.float32) + rank)
        dist.all_reduce(view, op=op)
        expected = np.full(count + 32, -1.0 - rank, np.float32)
        values = np.arange(count, dtype=np.float32)
        expected[16:16 + count] = values + (n - 1) / 2 if op is AVG else values * n + n * (n - 1) / 2
        return buffer, expected

    return case


def _noncontiguous_all_reduce(rank, n):
    t = (tensor.arange(12, dtype=tensor.float32).reshape(3, 4) * (rank + 1)).T
    version = t._version
    dist.all_reduce(t)
    assert t._version == version + 1, "all_reduce must bump the version counter"
    return t, (np.arange(12, dtype=np.float32).reshape(3, 4) * (n * (n + 1) / 2)).T


def _zero_d(rank, n):
    t = tensor.tensor(float(rank))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t, np.array(n - 1, dtype=np.float32)


def _empty(rank, n):
    t = tensor.zeros(0, 3)
    dist.all_reduce(t)
    return t, np.zeros((0, 3), np.float32)


def _broadcast(rank, n):
    t = _rank_filled(rank, (2, 3), tensor.int64)
    dist.broadcast(t, src=n - 1)
    return t, np.full((2, 3), n - 1, np.int64)


def _large_broadcast(rank, n):
    t = tensor.arange(1_200_000, dtype=tensor.float64) * (rank == 0)
    dist.broadcast(t, src=0)
    return t, np.arange(1_200_000, dtype=np.float64)


def _reduce(rank, n):
    t = _rank_filled(rank, (3,), offset=1)
    dist.reduce(t, dst=0)
    return t, np.full((3,), n * (n + 1) / 2 if rank == 0 else rank + 1, np.float32)


def _all_gather(rank, n):
    outs = [tensor.zeros(2, 2) for _ in range(n)]
    dist.all_gather(outs, _rank_filled(rank, (2, 2)))
    return tensor.stack(outs), np.stack([np.full((2, 2), r, np.float32) for r in range(n)])


def _all_gather_into_tensor(rank, n):
    out = tensor.zeros(n * 3, dtype=tensor.int32)
    dist.all_gather_into_tensor(out, tensor.arange(3, dtype=tensor.int32) + 10 * rank)
    return out, np.concatenate([R(3) + 10 * r for r in range(n)]).astype(np.int32)


def _large_all_gather(rank, n):
    out = tensor.zeros(n * 400_000)
    dist.all_gather_into_tensor(out, tensor.full((400_000,), float(rank)))
    return out, np.repeat(np.arange(n, dtype=np.float32), 400_000)


def _gather(rank, n):
    outs = [tensor.zeros(3) for _ in range(n)] if rank == n - 1 else None
    dist.gather(_rank_filled(rank, (3,)), outs, dst=n - 1)
    if rank != n - 1:
        return tensor.zeros(1), np.zeros(1, np.float32)
    return tensor.stack(outs), np.stack([np.full(3, r, np.float32) for r in range(n)])


def _scatter(rank, n):
    out = tensor.zeros(2)
    pieces = [tensor.full((2,), 100.0 + r) for r in range(n)] if rank == 0 else None
    dist.scatter(out, pieces, src=0)
    return out, np.full(2, 100.0 + rank, np.float32)


def _reduce_scatter(rank, n):
    out = tensor.zeros(3)
    dist.reduce_scatter(out, [tensor.full((3,), 10.0 * rank + j) for j in range(n)])
    return out, np.full(3, sum(10.0 * r + rank for r in range(n)), np.float32)


def _reduce_scatter_tensor_avg(rank, n):
    out = tensor.zeros(2, 2)
    dist.reduce_scatter_tensor(out, tensor.full((2 * n, 2), float(rank)), op=dist.ReduceOp.AVG)
    return out, np.full((2, 2), (n - 1) / 2, np.float32)


def _large_reduce_scatter(rank, n):
    out = tensor.zeros(300_000)
    dist.reduce_scatter_tensor(out, tensor.ones(300_000 * n) * (rank + 1))
    return out, np.full(300_000, n * (n + 1) / 2, np.float32)


def _all_to_all(rank, n):
    outs = [tensor.zeros(2, dtype=tensor.int64) for _ in range(n)]
    dist.all_to_all(outs, [tensor.full((2,), 10 * rank + j, dtype=tensor.int64) for j in range(n)])
    return tensor.stack(outs), np.stack([np.full(2, 10 * j + rank) for j in range(n)])


def _all_to_all_single_uneven(rank, n):
    # rank r sends j+1 rows to rank j; receives r+1 rows from everyone
    inp = tensor.cat([tensor.full((j + 1,), 10.0 * rank + j) for j in range(n)])
    out = tensor.zeros((rank + 1) * n)
    dist.all_to_all_single(out, inp, output_split_sizes=[rank + 1] * n, input_split_sizes=list(range(1, n + 1)))
    return out, np.concatenate([np.full(rank + 1, 10.0 * j + rank, np.float32) for j in range(n)])


def _send_recv_ring(rank, n):
    if n < 2:
        return None
    right, left = (rank + 1) % n, (rank - 1) % n
    out = tensor.zeros(3, dtype=tensor.int64)
    send = dist.isend(tensor.full((3,), rank, dtype=tensor.int64), right)
    src = dist.recv(out, src=left)
    send.wait()
    assert src == left, f"recv returned source {src}, expected {left}"
    return out, np.full(3, left, np.int64)


def _recv_any_source(rank, n):
    if n < 2:
        return None
    if rank == 0:
        got = []
        for _ in range(n - 1):
            t = tensor.zeros(1)
            src = dist.recv(t)
            got.append((src, float(t.item())))
        return _t(sorted(got)), np.array([(r, 2.0 * r) for r in range(1, n)], np.float32)
    dist.send(tensor.full((1,), 2.0 * rank), dst=0)
    return _t([0.0]), np.zeros(1, np.float32)


def _batch_isend_irecv(rank, n):
    if n < 2:
        return None
    right, left = (rank + 1) % n, (rank - 1) % n
    big = tensor.zeros(200_000)
    ops = [dist.P2POp(dist.irecv, big, left, tag=7),
           dist.P2POp(dist.isend, tensor.arange(200_000, dtype=tensor.float32) * rank, right, tag=7)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return big, np.arange(200_000, dtype=np.float32) * left


def _async_all_reduce(rank, n):
    t = tensor.ones(100_000) * rank
    work = dist.all_reduce(t, async_op=True)
    value = work.get_future().wait()
    work.wait(timeout=30)
    assert work.is_completed() and work.exception() is None
    assert value[0] is t
    return t, np.full(100_000, n * (n - 1) / 2, np.float32)


def _async_ordering(rank, n):
    a, b = tensor.full((3,), float(rank)), tensor.full((3,), 1.0)
    w1 = dist.all_reduce(a, async_op=True)
    w2 = dist.broadcast(b * (rank + 1), src=0, async_op=True)
    dist.all_reduce(b)  # a sync op after async ones runs after them
    w1.wait(), w2.wait()
    return tensor.cat([a, b]), np.concatenate([np.full(3, n * (n - 1) / 2), np.full(3, float(n))]).astype(np.float32)


def _objects(rank, n):
    objs = [{"rank": rank}, "x" * rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(objs, src=0)
    everyone = [None] * n
    dist.all_gather_object(everyone, ("r", rank))
    gathered = [None] * n if rank == 0 else None
    dist.gather_object(rank * 3, gathered, dst=0)
    out = [None]
    dist.scatter_object_list(out, [f"s{r}" for r in range(n)] if rank == 0 else None, src=0)
    ok = (objs == [{"rank": 0}, ""] and everyone == [("r", r) for r in range(n)]
          and (rank != 0 or gathered == [3 * r for r in range(n)]) and out == [f"s{rank}"])
    return _t([float(ok)]), np.ones(1, np.float32)


def _send_recv_objects(rank, n):
    if n < 2:
        return None
    if rank == 0:
        dist.send_object_list([{"a": [1, 2]}, None], dst=1)
        return _t([1.0]), np.ones(1, np.float32)
    if rank == 1:
        box = [None, None]
        src = dist.recv_object_list(box, src=0)
        return _t([float(box == [{"a": [1, 2]}, None] and src == 0)]), np.ones(1, np.float32)
    return _t([1.0]), np.ones(1, np.float32)


def _subgroup(rank, n):
    members = [0, n - 1] if n > 1 else [0]
    group = dist.new_group(members)
    if rank not in members:
        assert group is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(group) == -1
        return _t([0.0]), np.zeros(1, np.float32)
    t = tensor.full((2,), float(rank))
    dist.all_reduce(t, group=group)
    dist.broadcast(t, src=members[-1], group=group)  # src is a global rank
    assert dist.get_global_rank(group, dist.get_group_rank(group, rank)) == rank
    assert dist.get_world_size(group) == len(members)
    return t, np.full(2, float(sum(members)), np.float32)


def _barrier(rank, n):
    dist.barrier()
    work = dist.barrier(async_op=True)
    work.wait()
    return _t([1.0]), np.ones(1, np.float32)


SUM, PROD, MIN, MAX, AVG = (dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX,
                            dist.ReduceOp.AVG)
BAND, BOR, BXOR = dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR

CASES = {
    "all_reduce_sum_f32": _all_reduce(SUM, tensor.float32, lambda r: r + 1, lambda n: n * (n + 1) / 2),
    "all_reduce_sum_f64": _all_reduce(SUM, tensor.float64, lambda r: r + 0.5, lambda n: n * n / 2),
    "all_reduce_sum_f16": _all_reduce(SUM, tensor.float16, lambda r: r, lambda n: n * (n - 1) / 2),
    "all_reduce_sum_i8": _all_reduce(SUM, tensor.int8, lambda r: r - 1, lambda n: n * (n - 1) / 2 - n),
    "all_reduce_sum_u8": _all_reduce(SUM, tensor.uint8, lambda r: 7, lambda n: 7 * n),
    "all_reduce_prod_i32": _all_reduce(PROD, tensor.int32, lambda r: r + 2, lambda n: np.prod(np.arange(2, n + 2))),
    "all_reduce_min_f32": _all_reduce(MIN, tensor.float32, lambda r: 5 - r, lambda n: 6 - n),
    "all_reduce_max_i64": _all_reduce(MAX, tensor.int64, lambda r: 5 - r, lambda n: 5),
    "all_reduce_avg_f32": _all_reduce(AVG, tensor.float32, lambda r: r, lambda n: (n - 1) / 2),
    "all_reduce_band_i64": _all_reduce(BAND, tensor.int64, lambda r: 0b111 ^ (1 << r),
                                       lambda n: 0b111 & ~((1 << n) - 1)),
    "all_reduce_bor_i32": _all_reduce(BOR, tensor.int32, lambda r: 1 << r, lambda n: (1 << n) - 1),
    "all_reduce_bxor_u8": _all_reduce(BXOR, tensor.uint8, lambda r: 3, lambda n: 3 if n % 2 else 0),
    "all_reduce_sum_bool": _all_reduce(SUM, tensor.bool, lambda r: r == 1, lambda n: n > 1),
    "all_reduce_prod_bool": _all_reduce(PROD, tensor.bool, lambda r: r != 1, lambda n: n == 1),
    "all_reduce_large": _large_all_reduce,
    "all_reduce_large_prod_i32": _all_reduce(PROD, tensor.int32, lambda r: r + 2,
                                             lambda n: np.prod(np.arange(2, n + 2)), count=300_001),
    "all_reduce_large_min_f16": _all_reduce(MIN, tensor.float16, lambda r: 5 - r, lambda n: 6 - n, count=300_001),
    "all_reduce_large_bxor_u8": _all_reduce(BXOR, tensor.uint8, lambda r: 3, lambda n: 3 if n % 2 else 0,
                                            count=300_001),
    "all_reduce_large_sum_bool": _all_reduce(SUM, tensor.bool, lambda r: r == 1, lambda n: n > 1, count=300_001),
    "all_reduce_avg_pieces": _avg_all_reduce_of(500_000),
    "all_reduce_avg_ring": _avg_all_reduce_of(1_100_000),
    "all_reduce_noncontiguous": _noncontiguous_all_reduce,
    "all_reduce_comm_buffer_sum": _comm_buffer_all_reduce(SUM, 1001),
    "all_reduce_comm_buffer_avg_large": _comm_buffer_all_reduce(AVG, 1_500_001),
    "all_reduce_0d": _zero_d,
    "all_reduce_empty": _empty,
    "broadcast": _broadcast,
    "broadcast_large": _large_broadcast,
    "reduce": _reduce,
    "all_gather": _all_gather,
    "all_gather_into_tensor": _all_gather_into_tensor,
    "all_gather_large": _large_all_gather,
    "gather": _gather,
    "scatter": _scatter,
    "reduce_scatter": _reduce_scatter,
    "reduce_scatter_tensor_avg": _reduce_scatter_tensor_avg,
    "reduce_scatter_large": _large_reduce_scatter,
    "all_to_all": _all_to_all,
    "all_to_all_single_uneven": _all_to_all_single_uneven,
    "send_recv_ring": _send_recv_ring,
    "recv_any_source": _recv_any_source,
    "batch_isend_irecv": _batch_isend_irecv,
    "async_all_reduce": _async_all_reduce,
    "async_ordering": _async_ordering,
    "objects": _objects,
    "send_recv_objects": _send_recv_objects,
    "subgroup": _subgroup,
    "barrier": _barrier,
}


def verdict(actual, expected: np.ndarray) -> str:
    """``"ok"`` when the tensor ``actual`` has exactly ``expected``'s shape, dtype and values;
    otherwise what differs. Ranks check their own results and send back only this."""
    got = actual.cpu().numpy()
    if got.shape != expected.shape:
        return f"shape {got.shape} != expected {expected.shape}"
    if got.dtype != expected.dtype:
        return f"dtype {got.dtype} != expected {expected.dtype}"
    try:
        np.testing.assert_array_equal(got, expected)
    except AssertionError as exc:
        return str(exc).strip()
    return "ok"


def run_cases(cases: dict, *args) -> dict:
    """Run each ``fn(*args) -> (actual, expected) | None`` of ``cases`` in order; returns
    ``{name: "ok" | "skipped" | what went wrong}``. Stops at the first case that raises: the
    ranks may now be out of step, and the cases after it would hang."""
    out = {}
    for name, case in cases.items():
        try:
            got = case(*args)
        except Exception:  # noqa: BLE001 - reported per case to the test
            out[name] = "raised:\n" + traceback.format_exc()
            break
        out[name] = "skipped" if got is None else verdict(*got)
    return out


def conformance(backend="zmq"):
    """Run every case of ``CASES`` in one group; returns each case's verdict (see ``run_cases``)."""
    dist.init_process_group(backend, timeout=30)
    out = run_cases(CASES, dist.get_rank(), dist.get_world_size())
    dist.destroy_process_group()
    return out


# ---------------------------------------------------------------- failure scenarios
def _error(exc) -> dict:
    return {"type": type(exc).__name__, "message": str(exc),
            "is_runtime_error": isinstance(exc, RuntimeError)}


def skip_collective(op="all_reduce", timeout="2"):
    """Rank 1 never calls the collective: it blocks reading stdin until the test kills it."""
    dist.init_process_group("zmq", timeout=float(timeout))
    dist.all_reduce(tensor.ones(2))  # one op that everyone joins
    if dist.get_rank() == 1:
        print("READY", flush=True)
        sys.stdin.read()
        return {}
    try:
        if op == "all_reduce":
            dist.all_reduce(tensor.ones(1000))
        elif op == "broadcast":  # rank 0 waits for the data of rank 1, which never sends it
            dist.broadcast(tensor.ones(10), src=1)
        elif op == "async":
            dist.all_reduce(tensor.ones(10), async_op=True).wait()
        return {"error": None}
    except dist.DistError as exc:
        return {"error": _error(exc)}


def dead_rank(timeout="20"):
    """Rank 1 exits right before the second collective; rank 0 must fail fast, naming it."""
    dist.init_process_group("zmq", timeout=float(timeout))
    dist.all_reduce(tensor.ones(2))
    store = dist.group.WORLD.store
    if dist.get_rank() == 1:
        store.get("rank0_done")  # rank 0 has everything it needs from the first op
        os._exit(3)
    store.set("rank0_done", "1")
    try:
        dist.all_reduce(tensor.ones(100_000))
        return {"error": None}
    except dist.DistError as exc:
        return {"error": _error(exc)}


def debug_mismatch(kind="shape", backend="zmq"):
    """Under DISTRIB_DEBUG=DETAIL, ranks call disagreeing collectives; each must raise."""
    dist.init_process_group(backend, timeout=10)
    rank = dist.get_rank()
    dist.all_reduce(tensor.ones(3))  # agreeing calls pass
    try:
        if kind == "shape":
            dist.all_reduce(tensor.ones(3 + rank))
        elif kind == "dtype":
            dist.all_reduce(tensor.ones(3, dtype=tensor.float64 if rank else tensor.float32))
        elif kind == "op":
            if rank == 0:
                dist.all_reduce(tensor.ones(3))
            else:
                dist.broadcast(tensor.ones(3), src=0)
        elif kind == "skip":
            if rank == 0:
                dist.all_reduce(tensor.ones(3))
            else:
                dist.barrier()
                return {"error": None}
        return {"error": None}
    except dist.DistError as exc:
        return {"error": _error(exc)}
    finally:
        if kind != "skip":
            dist.destroy_process_group()


def secure_objects():
    """With DISTRIB_AUTH_KEY set: rank 0 prints its transport endpoint, then receives an object
    from rank 1 once the test says go; an unauthenticated sender must not get through."""
    dist.init_process_group("zmq", timeout=20)
    rank = dist.get_rank()
    backend = dist.group.WORLD.backend
    if rank == 0:
        print("ENDPOINT " + backend.transport.endpoint, flush=True)
        box = [None]
        src = dist.recv_object_list(box)
        return {"received": repr(box[0]), "src": src}
    sys.stdin.readline()  # the test says go after its attack
    dist.send_object_list(["legit"], dst=0)
    return {}


def comm_buffer_mismatch():
    """Rank 0 reduces a tensor in a shared comm buffer, rank 1 a plain one: both must raise."""
    dist.init_process_group("zmq", timeout=10)
    rank = dist.get_rank()
    raw = dist.group.WORLD.backend.alloc_comm_buffer(4 * 100)
    t = tensor.from_numpy(raw.view(np.float32)) if rank == 0 else tensor.zeros(100)
    try:
        dist.all_reduce(t)
        return {"error": None}
    except dist.DistError as exc:
        return {"error": _error(exc)}


def shm_check():
    """Report whether the group uses shared memory, then leave cleanly."""
    dist.init_process_group("zmq", timeout=20)
    uses = dist.group.WORLD.backend.shm is not None
    dist.all_reduce(tensor.ones(10))
    dist.destroy_process_group()
    return {"shm": uses}


def check_conformance_case(results: list, case: str) -> None:
    """Assert every rank's verdict on one conformance case (``results``: a dict per rank, from
    ``run_cases``)."""
    size = len(results)
    for rank, result in enumerate(results):
        outcome = result.get(case)
        assert outcome is not None, f"rank {rank} did not reach {case}: it stopped at {list(result)[-1:]}"
        if outcome == "skipped":
            assert size == 1, f"{case} skipped on {size} ranks"
            continue
        assert outcome == "ok", f"rank {rank} of {size}: {outcome}"


def group_edge_cases():
    """Groups and sizes on 2 ranks: a local-sync group on rank 0 only, rank queries on a group
    this rank is not in, a "gloo" subgroup, bfloat16 AVG, and tensors of different sizes."""
    dist.init_process_group("gloo", timeout=20)
    rank = dist.get_rank()
    out = {"backend": dist.get_backend()}
    if rank == 0:
        dist.new_group([0], use_local_synchronization=True)
    both = dist.new_group([0, 1], backend="gloo")
    t = tensor.ones(1)
    dist.all_reduce(t, group=both)
    out["after_local_group"] = t.tolist()
    out["gloo_group_backend"] = dist.get_backend(both)
    g0, g1 = dist.new_group([0]), dist.new_group([1])
    other = g1 if rank == 0 else g0
    out["other_ranks"] = dist.get_process_group_ranks(other)
    out["other_global_rank_0"] = dist.get_global_rank(other, 0)
    out["other_group_rank"] = dist.get_group_rank(other, 1 - rank)
    b = (tensor.tensor([1.0, 2.0, -3.0]) + rank).to(tensor.bfloat16)
    dist.all_reduce(b, op=dist.ReduceOp.AVG)
    out["bf16_avg"] = b.float().tolist()
    try:
        dist.all_reduce(tensor.ones(2 + rank))
        out["size_mismatch"] = None
    except dist.DistError as exc:
        out["size_mismatch"] = _error(exc)
    dist.destroy_process_group()
    return out
