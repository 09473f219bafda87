"""What each rank runs in the multi-process tests of issue 15 (SyncBatchNorm, ZeRO, FSDP).

As in ``_ddp_scenarios``: every case is ``fn(rank, world) -> JSON-able dict``; each rank also
computes the one-process reference (the whole batch, plain modules) itself, and returns its
distance to it and digests of what must agree across ranks, never arrays. ``sharding`` runs
every case in one process group.
"""

from __future__ import annotations

import os
import traceback

import numpy as np

import distrib as dist
import nn
import nn.functional as F
import tensor
from tests.distrib._ddp_scenarios import STEPS, batch, digest, max_diff, shard


# ---------------------------------------------------------------- SyncBatchNorm
def _bn_mlp(seed: int = 0) -> nn.Module:
    tensor.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 3))
    return model.double()


def syncbn_ddp_equivalence(rank, world):
    """DDP over a converted model gives the parameters and running statistics of one process
    training plain BatchNorm on the whole batch."""
    model = dist.DistributedDataParallel(nn.SyncBatchNorm.convert_sync_batchnorm(_bn_mlp()))
    reference = _bn_mlp()
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = nn.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        x, y = batch(step)
        opt.zero_grad()
        F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
        opt.step()
        ref_opt.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        ref_opt.step()
    state, ref_state = model.module.state_dict(), reference.state_dict()
    return {
        "max_diff": max_diff(state.values(), ref_state.values()),
        "is_sync": type(model.module[1]).__name__,
        "params": digest(state.values()),
    }


def syncbn_input_grad(rank, world):
    """On (N, C, L) inputs: the output, the input gradient and the running statistics are those
    of the whole batch; the weight gradients summed over ranks are the whole batch's."""
    rng = np.random.default_rng(3)
    x = tensor.from_numpy(rng.standard_normal((6 * world, 4, 3)) * 3 + 5)
    target = tensor.from_numpy(rng.standard_normal((6 * world, 4, 3)))
    bn, ref = nn.SyncBatchNorm(4).double(), nn.BatchNorm1d(4).double()
    local = shard(x, rank, world).requires_grad_(True)
    full = x.detach().requires_grad_(True)
    out = bn(local)
    (out * shard(target, rank, world)).sum().backward()
    ref_out = ref(full)
    (ref_out * target).sum().backward()
    weight_grad = bn.weight.grad.clone()
    dist.all_reduce(weight_grad)
    return {
        "out_diff": float((out - shard(ref_out, rank, world)).abs().max()),
        "input_grad_diff": float((local.grad - shard(full.grad, rank, world)).abs().max()),
        "weight_grad_diff": float((weight_grad - ref.weight.grad).abs().max()),
        "stats_diff": max_diff([bn.running_mean, bn.running_var], [ref.running_mean, ref.running_var]),
    }


CASES = {
    "syncbn_ddp_equivalence": syncbn_ddp_equivalence,
    "syncbn_input_grad": syncbn_input_grad,
}


def sharding(backend: str = "zmq") -> dict:
    """Run the cases of ``CASES`` whose names start with ``$SHARDING_CASES`` (all by default) in
    one process group on ``backend``; ``{case: result or {"error": traceback}}``, stopping at the
    first case that raises."""
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    prefix = os.environ.get("SHARDING_CASES", "")
    results = {}
    try:
        for name, case in CASES.items():
            if not name.startswith(prefix):
                continue
            try:
                results[name] = case(rank, world)
            except Exception:  # noqa: BLE001 - reported per case; later cases may still pass
                results[name] = {"error": traceback.format_exc()}
                break  # the group's op sequence may now differ across ranks
    finally:
        dist.destroy_process_group()
    return results
