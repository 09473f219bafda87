"""What each rank runs in the ``nccl`` backend's GPU tests (one GPU per rank, env:// rendezvous)."""

from __future__ import annotations

import time

import numpy as np

import distrib as dist
import tensor
from tests.distrib._scenarios import run_cases
from tests.helpers import wait_until


def nccl_conformance():
    """A table of collectives on CUDA tensors; each case's verdict (``_scenarios.run_cases``)."""
    return _cuda_conformance("nccl")


def zmq_cuda_conformance():
    """``nccl_conformance`` on the zmq backend: the ranks may share a GPU (NCCL refuses that)."""
    return _cuda_conformance("zmq")


def _cuda_conformance(backend: str) -> dict:
    rank, n = _cuda_group(backend)

    def full(shape, value, dtype=tensor.float32):
        return tensor.full(shape, value, dtype=dtype, device="cuda")

    def all_reduce(op, dtype, fill, expect):
        def case():
            t = full((5,), fill(rank), dtype)
            dist.all_reduce(t, op=op)
            return t, np.full((5,), expect, dtype=dtype.numpy)
        return case

    def broadcast():
        t = full((2, 3), rank, tensor.int64)
        dist.broadcast(t, src=n - 1)
        return t, np.full((2, 3), n - 1, np.int64)

    def all_gather_into_tensor():
        out = tensor.zeros(n * 3, dtype=tensor.int32, device="cuda")
        dist.all_gather_into_tensor(out, tensor.arange(3, dtype=tensor.int32, device="cuda") + 10 * rank)
        return out, np.concatenate([np.arange(3) + 10 * r for r in range(n)]).astype(np.int32)

    def reduce_scatter_tensor():
        out = tensor.zeros(2, device="cuda")
        dist.reduce_scatter_tensor(out, full((2 * n,), float(rank + 1)))
        return out, np.full(2, n * (n + 1) / 2, np.float32)

    def reduce():
        t = full((3,), rank + 1.0)
        dist.reduce(t, dst=0)
        return t, np.full(3, n * (n + 1) / 2 if rank == 0 else rank + 1, np.float32)

    def all_to_all_single():
        inp = tensor.cat([full((1,), 10.0 * rank + j) for j in range(n)])
        out = tensor.zeros(n, device="cuda")
        dist.all_to_all_single(out, inp)
        return out, np.array([10.0 * j + rank for j in range(n)], np.float32)

    def batch_isend_irecv():
        right, left = (rank + 1) % n, (rank - 1) % n
        got = tensor.zeros(1000, device="cuda")
        ops = [dist.P2POp(dist.irecv, got, left), dist.P2POp(dist.isend, full((1000,), float(rank)), right)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        return got, np.full(1000, float(left), np.float32)

    def bitwise_refused():
        try:
            dist.all_reduce(full((2,), 1, tensor.int32), op=dist.ReduceOp.BAND)
        except ValueError as exc:
            ok = "NCCL has no bitwise reductions" in str(exc)
            return tensor.tensor([float(ok)]), np.ones(1, np.float32)
        return tensor.tensor([0.0]), np.ones(1, np.float32)

    S = dist.ReduceOp
    cases = {
        "all_reduce_sum_f32": all_reduce(S.SUM, tensor.float32, lambda r: r + 1, n * (n + 1) / 2),
        "all_reduce_avg_f32": all_reduce(S.AVG, tensor.float32, lambda r: r, (n - 1) / 2),
        "all_reduce_max_i64": all_reduce(S.MAX, tensor.int64, lambda r: 5 - r, 5),
        "all_reduce_prod_bool": all_reduce(S.PRODUCT, tensor.bool, lambda r: r != 1, n == 1),
        "all_reduce_sum_f16": all_reduce(S.SUM, tensor.float16, lambda r: r, n * (n - 1) / 2),
        "broadcast": broadcast, "all_gather_into_tensor": all_gather_into_tensor,
        "reduce_scatter_tensor": reduce_scatter_tensor, "reduce": reduce,
        "all_to_all_single": all_to_all_single, "bitwise_refused": bitwise_refused,
    }
    if n > 1:
        cases["batch_isend_irecv"] = batch_isend_irecv
    if backend != "nccl":
        del cases["bitwise_refused"]
    out = run_cases(cases)
    dist.barrier()
    dist.destroy_process_group()
    return out


# ---- issue 13: the nccl backend off the caller's thread, and object collectives (CUDA stand-in) ----
def _flag(ok: bool):
    return tensor.tensor([float(ok)]), np.ones(1, np.float32)


def _cuda_group(backend: str = "nccl"):
    """Join the default group on ``backend``, on device ``rank % device_count`` (on one GPU
    every rank shares it); ``(rank, world size)``."""
    dist.init_process_group(backend, timeout=60)
    tensor.cuda.set_device(dist.get_rank() % tensor.cuda.device_count())
    return dist.get_rank(), dist.get_world_size()


def _finish(out: dict) -> dict:
    dist.barrier()
    dist.destroy_process_group()
    return out


def nccl_off_the_callers_thread():
    """Async ops, which the group's worker thread runs (it must use this rank's device), and a
    group whose first op is async (its communicator is made on that thread); each case's verdict."""
    rank, n = _cuda_group()

    def async_first_op_of_a_group():
        group = dist.new_group(backend="nccl")
        t = tensor.full((4,), float(rank), device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.AVG, group=group, async_op=True).wait()
        return t, np.full(4, (n - 1) / 2, np.float32)

    def async_ops_in_a_row():
        ts = [tensor.full((3,), float(rank + k), device="cuda") for k in range(3)]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        b = tensor.full((2,), float(rank), device="cuda")
        works.append(dist.broadcast(b, src=0, async_op=True))
        # the worker thread must run them: a thread that waits would run them itself
        assert wait_until(lambda: all(w.is_completed() for w in works), 30), "the async ops did not complete"
        for work in works:
            work.wait()
        got = tensor.cat([*ts, b])
        want = [np.full(3, sum(r + k for r in range(n)), np.float32) for k in range(3)]
        return got, np.concatenate([*want, np.zeros(2, np.float32)])

    return _finish(run_cases({"async_first_op_of_a_group": async_first_op_of_a_group,
                              "async_ops_in_a_row": async_ops_in_a_row}))


def nccl_objects_and_ddp():
    """Object collectives and a DDP step (its constructor gathers objects) on nccl; each case's verdict."""
    return _objects_and_ddp("nccl")


def zmq_cuda_objects_and_ddp():
    """``nccl_objects_and_ddp`` on the zmq backend: the ranks may share a GPU."""
    return _objects_and_ddp("zmq")


def nccl_two_ranks_on_one_gpu():
    """Two nccl ranks on one GPU: NCCL refuses the communicator; the error, on each rank."""
    _cuda_group("nccl")
    try:
        dist.all_reduce(tensor.ones(2, device="cuda"))
    except dist.DistBackendError as exc:
        return {"error": str(exc)}
    finally:
        dist.destroy_process_group()
    return {"error": None}


def _objects_and_ddp(backend: str) -> dict:
    import nn
    from distrib.parallel import DistributedDataParallel

    rank, n = _cuda_group(backend)

    def objects():
        gathered = [None] * n
        dist.all_gather_object(gathered, {"rank": rank})
        sent = [f"from {rank}", rank] if rank == 0 else [None, None]
        dist.broadcast_object_list(sent, src=0)
        return _flag(gathered == [{"rank": r} for r in range(n)] and sent == ["from 0", 0])

    def ddp_step():
        tensor.manual_seed(0)
        model = DistributedDataParallel(nn.Linear(3, 2).cuda(), device_ids=[tensor.cuda.current_device()])
        model(tensor.full((4, 3), float(rank + 1), device="cuda")).sum().backward()
        return model.module.weight.grad, np.full((2, 3), 4 * (n + 1) / 2, np.float32)

    return _finish(run_cases({"objects": objects, "ddp_step": ddp_step}))


def cuda_tensors_on_zmq_off_the_callers_thread():
    """CUDA tensors on a host backend (staged through host memory) in async ops, which the group's
    worker thread runs: the staging copies must run on each tensor's device."""
    dist.init_process_group("zmq", timeout=60)
    rank, n = dist.get_rank(), dist.get_world_size()
    tensor.cuda.set_device(rank % tensor.cuda.device_count())

    def staged_async():
        t = tensor.full((4,), float(rank + 1), device="cuda")
        odd = tensor.full((3, 2), float(rank), device="cuda").T  # non-contiguous: copied first
        works = (dist.all_reduce(t, async_op=True), dist.all_reduce(odd, async_op=True))
        # the worker thread must run them: a thread that waits would run them itself
        assert wait_until(lambda: all(w.is_completed() for w in works), 30), "the async ops did not complete"
        for work in works:
            work.wait()
        got = tensor.cat([t, odd.reshape(-1)])
        return got, np.concatenate([np.full(4, n * (n + 1) / 2), np.full(6, n * (n - 1) / 2)]).astype(np.float32)

    out = run_cases({"staged_async": staged_async})
    dist.destroy_process_group()
    return out


def _peer_fails(hangs: bool, timeout: float = 2.0) -> dict:
    """Rank 1 joins one op, then leaves (its process exits) or hangs (sleeps past the timeout).
    On rank 0 the next all_reduce only enqueues (Note [NCCL streams]); waiting for it with a
    short timeout raises, the barrier after it waits on the host and must fail with a
    DistBackendError naming the all_reduce instead of waiting forever, and so must a later
    op's ``wait(timeout)``. Returns, on rank 0, the three errors and how long the barrier's took."""
    dist.init_process_group("nccl", timeout=timeout)
    rank = dist.get_rank()
    tensor.cuda.set_device(rank % tensor.cuda.device_count())
    dist.all_reduce(tensor.ones(2, device="cuda"))
    if rank == 1:
        if hangs:
            time.sleep(3 * timeout)
        return {}
    out = {"error": None, "wait_error": None, "short_wait": None}
    start = time.monotonic()
    work = dist.all_reduce(tensor.ones(1000, device="cuda"), async_op=True)
    try:
        work.wait(timeout=0.5)  # shorter than the op's timeout: the op goes on
    except dist.DistBackendError as exc:
        out["short_wait"] = str(exc)
    try:
        dist.barrier()
    except dist.DistBackendError as exc:
        out.update(error=str(exc), seconds=time.monotonic() - start)
    try:
        dist.all_reduce(tensor.ones(3, device="cuda"), async_op=True).wait(timeout=30)
    except dist.DistBackendError as exc:
        out["wait_error"] = str(exc)
    return out


def nccl_peer_leaves():
    """See ``_peer_fails``: rank 1's process exits."""
    return _peer_fails(hangs=False)


def nccl_peer_hangs():
    """See ``_peer_fails``: rank 1 sleeps through the op's 2 s timeout."""
    return _peer_fails(hangs=True)


# ---- issue 13: NCCL on the group's own stream (Note [NCCL streams]; stand-in only: it traces) ----
def _on_comm_stream(trace: list, op: str) -> dict:
    """What the trace says about the first NCCL ``op``: its stream, whether that stream first
    waited for an event recorded on another stream (the producer's), and which stream."""
    at = next(i for i, e in enumerate(trace) if e[:2] == ("nccl", op))
    comm = trace[at][2]
    recorded = {e[1]: e[2] for e in trace[:at] if e[0] == "record"}
    handed = [recorded[e[2]] for e in trace[:at] if e[0] == "wait" and e[1] == comm and e[2] in recorded]
    return {"comm": comm, "producer": handed[-1] if handed else None, "at": at}


def _waits_after(trace: list, at: int, comm: int) -> list:
    """The streams that, after entry ``at``, waited for an event recorded on ``comm``."""
    on_comm = {e[1] for e in trace[at:] if e[0] == "record" and e[2] == comm}
    return [e[1] for e in trace[at:] if e[0] == "wait" and e[2] in on_comm]


def nccl_streams():
    """An async all_reduce issued on a stream of the caller's, then waited; a synchronous one on
    the default stream; the values; and the host synchronisations each made (stand-in counts)."""
    from cupy import _state

    rank, n = _cuda_group()
    dist.barrier()  # the communicator exists: what follows is the ops alone
    out = {}
    producer = tensor.cuda.Stream()
    trace = _state.start_trace()
    syncs = _state.synchronizations()
    with producer:
        t = tensor.full((64,), float(rank + 1), device="cuda")
        work = dist.all_reduce(t, async_op=True)
        issued = _state.synchronizations() - syncs
        work.wait()
        out["async_syncs"] = [issued, _state.synchronizations() - syncs]
    out["async"] = _on_comm_stream(trace, "allReduce")
    out["async"]["user_stream"] = producer._stream.ptr
    out["async"]["waited_by"] = _waits_after(trace, out["async"]["at"], out["async"]["comm"])
    _state.stop_trace(trace)

    trace = _state.start_trace()
    syncs = _state.synchronizations()
    u = tensor.full((8,), float(rank), device="cuda")
    dist.all_reduce(u, op=dist.ReduceOp.AVG)
    out["sync_syncs"] = _state.synchronizations() - syncs
    out["sync"] = _on_comm_stream(trace, "allReduce")
    out["sync"]["current"] = tensor.cuda.current_stream()._stream.ptr
    out["sync"]["waited_by"] = _waits_after(trace, out["sync"]["at"], out["sync"]["comm"])
    _state.stop_trace(trace)
    out["values"] = [t.cpu().tolist()[0], u.cpu().tolist()[0]]
    out["expected"] = [n * (n + 1) / 2, (n - 1) / 2]
    dist.barrier()
    dist.destroy_process_group()
    return out


def nccl_ddp_overlap():
    """A DDP backward on nccl with one bucket per layer: how many bucket all-reduces were queued
    when the last gradient (the first layer's) became ready, how many in all, on which stream,
    and the host synchronisations of forward + backward (stand-in counts)."""
    from cupy import _state

    import nn
    from distrib.parallel import DistributedDataParallel

    rank, n = _cuda_group()
    tensor.manual_seed(0)
    layers = nn.Sequential(*[nn.Linear(32, 32) for _ in range(4)]).cuda()
    trace = []
    seen_at_last_grad = []
    first = layers[0].weight  # registered first, so its gradient is among the last made
    # registered before DDP's own hooks, so it fires before DDP launches this parameter's bucket
    first.register_post_accumulate_grad_hook(
        lambda p: seen_at_last_grad.append(sum(e[:2] == ("nccl", "allReduce") for e in trace)))
    model = DistributedDataParallel(layers, device_ids=[tensor.cuda.current_device()], bucket_cap_mb=0.004)
    x = tensor.full((8, 32), float(rank + 1), device="cuda")
    model(x).sum().backward()  # a first step: buckets rebuilt, caches warm
    for p in model.parameters():
        p.grad = None
    seen_at_last_grad.clear()
    trace = _state.start_trace()
    syncs = _state.synchronizations()
    model(x).sum().backward()
    out = {"syncs": _state.synchronizations() - syncs,
           "launched_before_last_grad": seen_at_last_grad,
           "launches": [e[2] for e in trace if e[:2] == ("nccl", "allReduce")],
           "current": tensor.cuda.current_stream()._stream.ptr, "buckets": len(model.reducer.buckets)}
    _state.stop_trace(trace)
    # the layers are affine, so the mean of the ranks' gradients is the gradient at the mean input
    tensor.manual_seed(0)
    ref = nn.Sequential(*[nn.Linear(32, 32) for _ in range(4)]).cuda()
    ref(tensor.full((8, 32), (n + 1) / 2, device="cuda")).sum().backward()
    out["grad_error"] = float(np.abs(model.module[0].weight.grad.cpu().numpy()
                                     - ref[0].weight.grad.cpu().numpy()).max())
    dist.barrier()
    dist.destroy_process_group()
    return out
