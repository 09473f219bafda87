"""What each rank runs in the multi-process DDP tests (``test_ddp*.py``).

Every case is ``fn(rank, world) -> JSON-able dict``. Each rank also *simulates* the whole
job on its own, with plain (non-DDP) replicas of the same model fed every rank's share of
the data, so a case can return how far the DDP result is from that reference, and what
must agree across ranks (parameters, gradients) as a ``digest``: results stay small. ``ddp``
runs every case in one process group.
"""

from __future__ import annotations

import hashlib
import traceback

import numpy as np

import distrib as dist
import nn
import nn.functional as F
import tensor
from distrib.algorithms import Join
from distrib.algorithms.ddp_comm_hooks import default_hooks

GLOBAL_BATCH = 12  # divisible by 1, 2, 3 and 4 ranks
STEPS = 4


# ---------------------------------------------------------------- models and data
class TwoBranch(nn.Module):
    """``a`` always runs; ``b`` only when asked; ``never`` is registered but never used."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(5, 4)
        self.b = nn.Linear(5, 4)
        self.never = nn.Linear(5, 4)
        self.head = nn.Linear(4, 3)

    def forward(self, x, use_b=False):
        h = self.a(x).tanh()
        if use_b:
            h = h + self.b(x).tanh()
        return self.head(h)


def mlp(dtype=tensor.float64, seed=0) -> nn.Module:
    tensor.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))
    return model.to(dtype=dtype)


def two_branch() -> TwoBranch:
    tensor.manual_seed(0)
    return TwoBranch().double()


def batch(step: int, dtype=tensor.float64, size: int = GLOBAL_BATCH):
    rng = np.random.default_rng(100 + step)
    x = tensor.from_numpy(rng.standard_normal((size, 5))).to(dtype)
    y = tensor.from_numpy(rng.integers(0, 3, size))
    return x, y


def shard(x, rank: int, world: int):
    n = x.shape[0] // world
    return x[rank * n:(rank + 1) * n]


def digest(tensors) -> str:
    """A fingerprint of the exact values of ``tensors``: what ranks compare instead of sending
    their parameters (equal on two ranks when every bit is)."""
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().numpy().tobytes())
    return h.hexdigest()


def max_diff(a, b) -> float:
    return max(float((p.detach() - q.detach()).abs().max()) for p, q in zip(a, b))


def grads(params) -> list:
    return [None if p.grad is None else p.grad.clone() for p in params]


def grad_diff(actual, expected) -> float:
    worst = 0.0
    for g, e in zip(actual, expected):
        if (g is None) != (e is None):
            return float("inf")
        if g is not None:
            worst = max(worst, float((g - e).abs().max()))
    return worst


def error_of(fn) -> dict:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test checks the type and message
        return {"type": type(exc).__name__, "message": str(exc)}
    return {"type": None, "message": ""}


# ---------------------------------------------------------------- equivalence
EQUIVALENCE = {
    "default": {},
    "tiny_buckets": {"bucket_cap_mb": 0.0001},
    "bucket_view": {"bucket_cap_mb": 0.0001, "gradient_as_bucket_view": True},
    "bucket_view_zero_inplace": {"gradient_as_bucket_view": True},
    "static_graph": {"static_graph": True},
    "find_unused_all_used": {"find_unused_parameters": True, "bucket_cap_mb": 0.0001},
}


def _equivalence(kwargs, set_to_none=True):
    def case(rank, world):
        model = dist.DistributedDataParallel(mlp(), **kwargs)
        reference = mlp()
        opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        ref_opt = nn.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        for step in range(STEPS):
            x, y = batch(step)
            opt.zero_grad(set_to_none=set_to_none)
            F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
            opt.step()
            ref_opt.zero_grad()
            F.cross_entropy(reference(x), y).backward()
            ref_opt.step()
        views = [b.buffer for b in model.reducer.buckets]
        grad_in_bucket = all(
            any(v.data_ptr() <= p.grad.data_ptr() < v.data_ptr() + v.nbytes for v in views)
            for p in model.parameters())
        return {"max_diff": max_diff(model.module.parameters(), reference.parameters()),
                "params": digest(model.parameters()), "grad_in_bucket": grad_in_bucket,
                "buckets": len(model.reducer.buckets)}
    return case


def equivalence_cases() -> dict:
    cases = {f"equivalence_{name}": _equivalence(kw, set_to_none=not name.endswith("zero_inplace"))
             for name, kw in EQUIVALENCE.items()}
    return cases


# ---------------------------------------------------------------- no_sync
def no_sync(rank, world):
    model = dist.DistributedDataParallel(mlp(), bucket_cap_mb=0.0001)
    local, full = mlp(), mlp()
    micro = [batch(step) for step in range(3)]
    with model.no_sync():
        for x, y in micro[:2]:
            F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
    for x, y in micro[:2]:
        F.cross_entropy(local(shard(x, rank, world)), shard(y, rank, world)).backward()
    local_diff = grad_diff(grads(model.parameters()), grads(local.parameters()))
    x, y = micro[2]
    F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
    for x, y in micro:
        F.cross_entropy(full(x), y).backward()
    return {"local_diff": local_diff, "synced_diff": grad_diff(grads(model.parameters()), grads(full.parameters())),
            "grads": digest(grads(model.parameters()))}


# ---------------------------------------------------------------- unused parameters
def unused_error(rank, world):
    model = dist.DistributedDataParallel(two_branch(), bucket_cap_mb=0.0001)
    x, _ = batch(0)
    return error_of(lambda: model(shard(x, rank, world)).sum().backward())


def find_unused(rank, world):
    """Rank 1 (of 2+) also uses branch ``b``; ``never`` is used nowhere."""
    model = dist.DistributedDataParallel(two_branch(), find_unused_parameters=True, bucket_cap_mb=0.0001)
    reference = two_branch()
    results = {}
    for step in range(2):
        x, y = batch(step)
        model.zero_grad()
        F.cross_entropy(model(shard(x, rank, world), use_b=rank == 1), shard(y, rank, world)).backward()
        reference.zero_grad()
        for r in range(world):  # the average of every rank's local gradients
            loss = F.cross_entropy(reference(shard(x, r, world), use_b=r == 1), shard(y, r, world)) / world
            loss.backward()
        results[f"step{step}_diff"] = grad_diff(grads(model.module.parameters()), grads(reference.parameters()))
    results["never_grad_is_none"] = model.module.never.weight.grad is None
    results["b_grad_is_none"] = model.module.b.weight.grad is None
    return results


# ---------------------------------------------------------------- communication hooks
def comm_hooks(rank, world):
    calls = []

    def recording_hook(state, bucket):
        state.append([bucket.index(), bucket.is_last(), len(bucket.parameters())])
        return default_hooks.allreduce_hook(None, bucket)

    model = dist.DistributedDataParallel(mlp(), bucket_cap_mb=0.0001)
    model.register_comm_hook(calls, recording_hook)
    reference = mlp()
    x, y = batch(0)
    F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
    F.cross_entropy(reference(x), y).backward()
    exact = grad_diff(grads(model.parameters()), grads(reference.parameters()))

    fp16 = dist.DistributedDataParallel(mlp(tensor.float32))
    fp16.register_comm_hook(None, default_hooks.fp16_compress_hook)
    reference32 = mlp(tensor.float32)
    x32 = x.float()
    F.cross_entropy(fp16(shard(x32, rank, world)), shard(y, rank, world)).backward()
    F.cross_entropy(reference32(x32), y).backward()
    fp16_diff = grad_diff(grads(fp16.parameters()), grads(reference32.parameters()))

    bad = dist.DistributedDataParallel(mlp())
    bad.register_comm_hook(None, lambda state, bucket: bucket.buffer())
    bad_error = error_of(lambda: bad(shard(x, rank, world)).sum().backward())
    return {"calls": calls, "buckets": len(model.reducer.buckets), "exact_diff": exact, "fp16_diff": fp16_diff,
            "fp16_grad_dtype": fp16.module[0].weight.grad.dtype.name, "bad_hook": bad_error}


def compress_hooks(rank, world):
    """fp16 and bf16 compression against uncompressed float32 DDP (max gradient difference)."""
    x, y = batch(0, tensor.float32)
    reference = mlp(tensor.float32)
    F.cross_entropy(reference(x), y).backward()
    results = {}
    for name in ("fp16_compress_hook", "bf16_compress_hook"):
        model = dist.DistributedDataParallel(mlp(tensor.float32))
        model.register_comm_hook(None, getattr(default_hooks, name))
        F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
        results[name] = {"diff": grad_diff(grads(model.parameters()), grads(reference.parameters())),
                         "grad_dtype": model.module[0].weight.grad.dtype.name,
                         "grad_scale": max(float(g.abs().max()) for g in grads(reference.parameters()))}
    return results


# ---------------------------------------------------------------- construction and buffers
class WithBuffer(nn.Module):
    def __init__(self, rank: int) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.register_buffer("stat", tensor.full((2,), float(rank)))

    def forward(self, x):
        return self.fc(x) + self.stat


def buffers(rank, world):
    tensor.manual_seed(rank)  # every rank starts from different parameters
    synced = dist.DistributedDataParallel(WithBuffer(rank))
    tensor.manual_seed(rank)
    unsynced = dist.DistributedDataParallel(WithBuffer(rank), broadcast_buffers=False)
    after_init = synced.module.stat.tolist()
    with tensor.no_grad():
        synced.module.stat.fill_(rank + 10.0)
        unsynced.module.stat.fill_(rank + 10.0)
    x = tensor.ones(2, 3)
    with tensor.no_grad():
        synced(x), unsynced(x)
    return {"params": digest(synced.parameters()), "after_init": after_init,
            "after_forward": synced.module.stat.tolist(), "unsynced_after_forward": unsynced.module.stat.tolist()}


def shape_mismatch(rank, world):
    tensor.manual_seed(0)
    wrong_shape = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 3 if rank == world - 1 else 2))
    extra_layer = nn.Sequential(*[nn.Linear(4, 4) for _ in range(3 if rank == world - 1 else 2)])
    return {"shape": error_of(lambda: dist.DistributedDataParallel(wrong_shape)),
            "count": error_of(lambda: dist.DistributedDataParallel(extra_layer))}


# ---------------------------------------------------------------- Join (uneven inputs)
def _uneven_steps(rank: int) -> int:
    return 2 + 2 * rank


def _join(divide_by_initial_world_size: bool):
    def case(rank, world):
        model = dist.DistributedDataParallel(mlp(), bucket_cap_mb=0.0001)
        opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        with model.join(divide_by_initial_world_size=divide_by_initial_world_size):
            for step in range(_uneven_steps(rank)):
                x, y = batch(step)
                opt.zero_grad()
                F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
                opt.step()
        reference = mlp()  # the last joiner's run: the sum over the ranks still training
        ref_opt = nn.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        for step in range(_uneven_steps(world - 1)):
            x, y = batch(step)
            active = [r for r in range(world) if step < _uneven_steps(r)]
            ref_opt.zero_grad()
            divisor = world if divide_by_initial_world_size else len(active)
            for r in active:
                (F.cross_entropy(reference(shard(x, r, world)), shard(y, r, world)) / divisor).backward()
            ref_opt.step()
        return {"params": digest(model.parameters()),
                "max_diff": max_diff(model.module.parameters(), reference.parameters())}
    return case


def join_with_buffers(rank, world):
    tensor.manual_seed(0)
    model = dist.DistributedDataParallel(nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Linear(6, 3)))
    opt = nn.optim.SGD(model.parameters(), lr=0.1)
    with Join([model]):
        for step in range(_uneven_steps(rank)):
            x, y = batch(step, tensor.float32)
            opt.zero_grad()
            F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
            opt.step()
    return {"params": digest(model.parameters()), "buffers": digest(model.module.buffers())}


def join_throw(rank, world):
    model = dist.DistributedDataParallel(mlp())

    def train():
        with model.join(throw_on_early_termination=True):
            for step in range(1 + 2 * rank):
                x, y = batch(step)
                F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
    return error_of(train)


CASES = {
    **equivalence_cases(),
    "no_sync": no_sync,
    "unused_error": unused_error,
    "find_unused": find_unused,
    "comm_hooks": comm_hooks,
    "compress_hooks": compress_hooks,
    "buffers": buffers,
    "shape_mismatch": shape_mismatch,
    "join": _join(True),
    "join_divide_by_active": _join(False),
    "join_with_buffers": join_with_buffers,
    "join_throw": join_throw,
}


def ddp(backend: str = "zmq") -> dict:
    """Run every case of ``CASES`` in one process group on ``backend``; ``{case: result or
    {"error": traceback}}``, stopping at the first case that raises."""
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    try:
        for name, case in CASES.items():
            try:
                results[name] = case(rank, world)
            except Exception:  # noqa: BLE001 - reported per case; later cases may still pass
                results[name] = {"error": traceback.format_exc()}
                break  # the group's op sequence may now differ across ranks
    finally:
        dist.destroy_process_group()
    return results
