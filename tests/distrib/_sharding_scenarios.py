"""What each rank runs in the multi-process tests of issue 15 (SyncBatchNorm, ZeRO, FSDP, and
the hierarchical all_reduce under mpiexec).

As in ``_ddp_scenarios``: every case is ``fn(rank, world) -> JSON-able dict``; each rank also
computes the one-process reference (the whole batch, plain modules) itself, and returns its
distance to it and digests of what must agree across ranks, never arrays. ``sharding`` runs
every case in one process group.
"""

from __future__ import annotations

import functools
import os
import traceback
import tracemalloc

import numpy as np

import distrib as dist
import nn
import nn.functional as F
import tensor
from distrib import checkpoint as dcp
from distrib._procs import host_id
from distrib.fsdp import (
    BackwardPrefetch,
    CPUOffload,
    CPUOffloadPolicy,
    FullyShardedDataParallel,
    MixedPrecisionPolicy,
    ModuleWrapPolicy,
    ShardingStrategy,
    StateDictType,
    fully_shard,
    get_full_state_dict,
    size_based_auto_wrap_policy,
)
from distrib.fsdp._fully_shard import _Shards
from distrib.optim import ZeroRedundancyOptimizer
from tests.distrib._ddp_scenarios import STEPS, batch, max_diff, shard
from tests.distrib._ddp_scenarios import digest as _host_digest
from tests.distrib._ddp_scenarios import mlp as _host_mlp
from tests.distrib._hierarchical_worker import _check as _hierarchical_check

# Where the cases put models and batches: "cuda" when ``sharding`` runs on nccl (one device per rank).
DEVICE = "cpu"


def _dev(x):
    """``x`` (a tensor or a module) on this rank's ``DEVICE``."""
    return x.to(DEVICE)


def digest(tensors) -> str:
    return _host_digest(t.detach().cpu() for t in tensors)


def mlp(seed: int = 0) -> nn.Module:
    return _dev(_host_mlp(seed=seed))


# ---------------------------------------------------------------- SyncBatchNorm
def _bn_mlp(seed: int = 0) -> nn.Module:
    tensor.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 3))
    return _dev(model.double())


def syncbn_ddp_equivalence(rank, world):
    """DDP over a converted model gives the parameters and running statistics of one process
    training plain BatchNorm on the whole batch."""
    model = dist.DistributedDataParallel(nn.SyncBatchNorm.convert_sync_batchnorm(_bn_mlp()))
    reference = _bn_mlp()
    opt = nn.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = nn.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(STEPS):
        x, y = map(_dev, batch(step))
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
    x = _dev(tensor.from_numpy(rng.standard_normal((6 * world, 4, 3)) * 3 + 5))
    target = _dev(tensor.from_numpy(rng.standard_normal((6 * world, 4, 3))))
    bn, ref = _dev(nn.SyncBatchNorm(4).double()), _dev(nn.BatchNorm1d(4).double())
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
        "device": str(out.device),
    }


# ---------------------------------------------------------------- ZeroRedundancyOptimizer
ADAM = {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.01}


def _train(model, opt, steps, rank, world, first_step=0):
    for step in range(first_step, first_step + steps):
        x, y = map(_dev, batch(step))
        opt.zero_grad()
        F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
        opt.step()
        if step == 1:  # as an LR scheduler would; the shards must follow
            for group in opt.param_groups:
                group["lr"] = 0.02


def zero_equivalence(rank, world):
    """DDP + ZeRO(Adam) gives the parameters of DDP + Adam (bit for bit) and of one process
    with the whole batch."""
    zero_model, ddp_model, reference = dist.DistributedDataParallel(mlp()), dist.DistributedDataParallel(mlp()), mlp()
    _train(zero_model, ZeroRedundancyOptimizer(zero_model.parameters(), nn.optim.Adam, **ADAM), STEPS, rank, world)
    _train(ddp_model, nn.optim.Adam(ddp_model.parameters(), **ADAM), STEPS, rank, world)
    _train(reference, nn.optim.Adam(reference.parameters(), **ADAM), STEPS, 0, 1)
    return {
        "max_diff": max_diff(zero_model.parameters(), reference.parameters()),
        "same_as_ddp": digest(zero_model.parameters()) == digest(ddp_model.parameters()),
        "params": digest(zero_model.parameters()),
        "device": str(next(zero_model.parameters()).device),
    }


def _state_diff(state_dict, ref_state_dict) -> float:
    worst = 0.0
    assert state_dict["state"].keys() == ref_state_dict["state"].keys()
    for key, state in state_dict["state"].items():
        for name, value in state.items():
            worst = max(worst, float((value - ref_state_dict["state"][key][name]).abs().max()))
    return worst


def zero_state_dict(rank, world):
    """consolidate_state_dict + state_dict on rank 0 is the whole Adam's state; loading it on
    every rank into a new ZeRO optimizer continues the reference run."""
    model, reference = dist.DistributedDataParallel(mlp()), mlp()
    opt = ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, **ADAM)
    ref_opt = nn.optim.Adam(reference.parameters(), **ADAM)
    _train(model, opt, 2, rank, world)
    _train(reference, ref_opt, 2, 0, 1)
    opt.consolidate_state_dict(to=0)
    result = {}
    if rank == 0:
        full = opt.state_dict()
        result["state_diff"] = _state_diff(full, ref_opt.state_dict())
        result["groups_equal"] = full["param_groups"] == ref_opt.state_dict()["param_groups"]
    else:
        full = None
        try:
            opt.state_dict()
            result["refused"] = False
        except RuntimeError:
            result["refused"] = True
    shared = [full]
    dist.broadcast_object_list(shared, src=0)
    resumed = dist.DistributedDataParallel(mlp(seed=1))  # other initial values, overwritten below
    resumed.module.load_state_dict(model.module.state_dict())
    new_opt = ZeroRedundancyOptimizer(resumed.parameters(), nn.optim.Adam, lr=1.0)
    new_opt.load_state_dict(shared[0])
    _train(resumed, new_opt, 2, rank, world, first_step=2)
    _train(reference, ref_opt, 2, 0, 1, first_step=2)
    result["resumed_diff"] = max_diff(resumed.parameters(), reference.parameters())
    return result


def zero_memory(rank, world):
    """The bytes of optimizer state on this rank, against the whole Adam's."""
    tensor.manual_seed(0)
    layers = [nn.Linear(16, 16) for _ in range(6)] + [nn.Linear(16, 48)]
    model = nn.Sequential(*layers).double()
    opt = ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, lr=0.01)
    full = nn.optim.Adam(model.parameters(), lr=0.01)
    model(tensor.randn(4, 16, dtype=tensor.float64)).sum().backward()
    opt.step()
    full.step()

    def state_bytes(state) -> int:
        return sum(v.nbytes for per_param in state.values() for k, v in per_param.items() if k != "step")

    largest = max(p.numel() for p in model.parameters()) * 2 * 8  # exp_avg + exp_avg_sq, float64
    return {"bytes": state_bytes(opt.state), "full_bytes": state_bytes(full.state), "largest_param_bytes": largest}


# ---------------------------------------------------------------- FSDP
def _blocks_model(seed: int = 0, blocks: int = 2, width: int = 8) -> nn.Module:
    tensor.manual_seed(seed)
    inner = [nn.Sequential(nn.Linear(width, width), nn.Tanh()) for _ in range(blocks)]
    return _dev(nn.Sequential(nn.Linear(5, width), nn.Tanh(), *inner, nn.Linear(width, 3)).double())


def _fully_shard_blocks(model, **kwargs):
    for block in model[2:-1]:
        fully_shard(block, **kwargs)
    return fully_shard(model, **kwargs)


def _fully_shard_prefetching(model):
    """Each unit prefetches the next one's parameters in forward and the previous one's in backward."""
    model = _fully_shard_blocks(model)
    blocks = list(model[2:-1])
    model.set_modules_to_forward_prefetch(blocks[:1])
    model.set_modules_to_backward_prefetch(blocks[-1:])
    for i, block in enumerate(blocks):
        block.set_modules_to_forward_prefetch(blocks[i + 1 : i + 2])
        block.set_modules_to_backward_prefetch(blocks[max(i - 1, 0) : i])
    return model


def fsdp_mixed_precision(rank, world):
    """float64 shards computing in float32 (reduced in float64): within float32's 1e-5 of one
    float64 process; the shards, gradients and Adam state stay float64, the outputs are float32."""
    policy = MixedPrecisionPolicy(param_dtype=tensor.float32, reduce_dtype=tensor.float64)
    model = _fully_shard_blocks(_blocks_model(), mp_policy=policy)
    reference = _blocks_model()
    opt = nn.optim.Adam(model.parameters(), **ADAM)
    _train(model, opt, STEPS, rank, world)
    _train(reference, nn.optim.Adam(reference.parameters(), **ADAM), STEPS, 0, 1)
    x, _ = batch(0)
    return {
        "max_diff": max_diff(get_full_state_dict(model).values(), reference.state_dict().values()),
        "output_dtype": model(x).dtype.name,
        "state_dtypes": sorted(
            {t.dtype.name for p in model.parameters() for t in (p, p.grad, opt.state[p]["exp_avg"])}
        ),
    }


def _hybrid_groups(world: int) -> tuple:
    """(shard group, replicate group) of this rank: pairs of ranks shard (on an even world),
    single ranks otherwise; the ranks with the same place in their shard group replicate."""
    size = 2 if world % 2 == 0 else 1
    blocks = [list(range(start, start + size)) for start in range(0, world, size)]
    shard_groups = [dist.new_group(block) for block in blocks]
    replicate_groups = [dist.new_group([block[i] for block in blocks]) for i in range(size)]
    rank = dist.get_rank()
    return shard_groups[rank // size], replicate_groups[rank % size]


def _mesh_of_pairs(world: int) -> dist.DeviceMesh:
    """A 2-d (replicate, shard) mesh: pairs of ranks shard on an even world, as ``_hybrid_groups``."""
    size = 2 if world % 2 == 0 else 1
    return dist.init_device_mesh(DEVICE, (world // size, size), mesh_dim_names=("replicate", "shard"))


FSDP_VARIANTS = {
    "fully_shard_prefetch": _fully_shard_prefetching,
    "fully_shard": _fully_shard_blocks,
    "fully_shard_device_mesh": lambda m: _fully_shard_blocks(
        m, mesh=dist.init_device_mesh(DEVICE, (dist.get_world_size(),))),
    "fully_shard_hsdp_mesh": lambda m: _fully_shard_blocks(m, mesh=_mesh_of_pairs(dist.get_world_size())),
    "fully_shard_keep_after_forward": functools.partial(_fully_shard_blocks, reshard_after_forward=False),
    "fully_shard_offload": functools.partial(_fully_shard_blocks, offload_policy=CPUOffloadPolicy()),
    "full_shard": lambda m: FullyShardedDataParallel(m, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential})),
    "shard_grad_op": lambda m: FullyShardedDataParallel(
        m,
        sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
        auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=50),
    ),
    "full_shard_offload_post_prefetch": lambda m: FullyShardedDataParallel(
        m,
        auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}),
        cpu_offload=CPUOffload(offload_params=True),
        backward_prefetch=BackwardPrefetch.BACKWARD_POST,
        forward_prefetch=True,
    ),
    "no_shard": lambda m: FullyShardedDataParallel(m, sharding_strategy=ShardingStrategy.NO_SHARD),
    "no_shard_offload": lambda m: FullyShardedDataParallel(
        m, sharding_strategy=ShardingStrategy.NO_SHARD, cpu_offload=CPUOffload(offload_params=True)
    ),
    "hybrid_shard_by_host": lambda m: FullyShardedDataParallel(
        m, sharding_strategy=ShardingStrategy.HYBRID_SHARD, auto_wrap_policy=ModuleWrapPolicy({nn.Sequential})
    ),
    "hybrid_shard_groups": lambda m: FullyShardedDataParallel(
        m,
        process_group=_hybrid_groups(dist.get_world_size()),
        sharding_strategy=ShardingStrategy.HYBRID_SHARD,
        auto_wrap_policy=ModuleWrapPolicy({nn.Sequential}),
    ),
}


def _full_state(model):
    if isinstance(model, FullyShardedDataParallel):
        return model.state_dict()
    return get_full_state_dict(model)


def _fsdp_equivalence(wrap):
    def case(rank, world):
        model, reference = wrap(_blocks_model()), _blocks_model()
        waited = []  # one entry per all_gather that a unit had to wait for (not prefetched)
        real_gather = _Shards.gather
        _Shards.gather = lambda self, *args: waited.append(1) or real_gather(self, *args)
        try:
            _train(model, nn.optim.Adam(model.parameters(), **ADAM), STEPS, rank, world)
            _train(reference, nn.optim.Adam(reference.parameters(), **ADAM), STEPS, 0, 1)
            with tensor.no_grad():
                x = _dev(batch(0)[0])
                out = model(x)
                eval_diff = float((out - reference(x)).abs().max())
        finally:
            _Shards.gather = real_gather
        state = _full_state(model)
        return {
            "max_diff": max_diff(state.values(), reference.state_dict().values()),
            "keys_equal": list(state) == list(reference.state_dict()),
            "eval_diff": eval_diff,
            "params": digest(state.values()),
            "waited_gathers": len(waited),
            "device": str(next(model.parameters()).device),
            "grad_devices": sorted({str(p.grad.device) for p in model.parameters()}),
            "output_device": str(out.device),
        }

    return case


class _LoggedWork:
    """A collective's work that logs ``("wait", unit)`` when waited for."""

    def __init__(self, work, name: str, events: list) -> None:
        self.work, self.name, self.events = work, name, events

    def wait(self):
        self.events.append(("wait", self.name))
        return self.work.wait()


def fsdp_prefetch_trace(rank, world):
    """The ordered events of the second training step of ``fully_shard`` units with no explicit
    prefetching (the first forward records the order): each all_gather a unit starts
    asynchronously ("issue"), waits for ("wait") or runs and waits for at once ("gather"); each
    block's compute starting and ending in forward ("forward", "forward done"); each unit's
    reduce_scatter, which ends its backward. No timing: only the order."""
    model = _fully_shard_blocks(_blocks_model(blocks=3))
    blocks = list(model[2:-1])
    names = {id(model._fsdp_state.shards): "root"}
    names.update({id(b._fsdp_state.shards): f"b{i}" for i, b in enumerate(blocks)})
    events = []
    for i, block in enumerate(blocks):
        block[0].register_forward_pre_hook(lambda m, args, i=i: events.append(("forward", f"b{i}")))
        block[0].register_forward_hook(lambda m, args, out, i=i: events.append(("forward done", f"b{i}")))
    real_start, real_scatter = _Shards.start_gather, _Shards.reduce_scatter

    def start_gather(self, shards, group, async_op=True):
        work, out, local = real_start(self, shards, group, async_op)
        events.append(("issue" if async_op else "gather", names[id(self)]))
        return (_LoggedWork(work, names[id(self)], events) if async_op else work), out, local

    def reduce_scatter(self, *args):
        events.append(("reduce_scatter", names[id(self)]))
        return real_scatter(self, *args)

    _Shards.start_gather, _Shards.reduce_scatter = start_gather, reduce_scatter
    try:
        opt = nn.optim.Adam(model.parameters(), **ADAM)
        _train(model, opt, 1, rank, world)
        events.clear()
        _train(model, opt, 1, rank, world, first_step=1)
    finally:
        _Shards.start_gather, _Shards.reduce_scatter = real_start, real_scatter
    return {"events": events, "blocks": len(blocks)}


def fsdp_no_sync(rank, world):
    """Two micro-batches accumulated without sync, then one with: the parameters of one process
    accumulating the three whole batches."""
    model, reference = FSDP_VARIANTS["full_shard"](_blocks_model()), _blocks_model()
    opt, ref_opt = nn.optim.SGD(model.parameters(), lr=0.1), nn.optim.SGD(reference.parameters(), lr=0.1)
    micro = [batch(step) for step in range(3)]
    with model.no_sync():
        for x, y in micro[:2]:
            F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
    x, y = micro[2]
    F.cross_entropy(model(shard(x, rank, world)), shard(y, rank, world)).backward()
    opt.step()
    for x, y in micro:
        F.cross_entropy(reference(x), y).backward()
    ref_opt.step()
    return {"max_diff": max_diff(model.state_dict().values(), reference.state_dict().values())}


def fsdp_state_dict(rank, world):
    """A FULL state dict loads into a model sharded from other values and training goes on as
    the reference's; a SHARDED one round-trips on the same ranks."""
    model, reference = FSDP_VARIANTS["full_shard"](_blocks_model()), _blocks_model()
    _train(model, nn.optim.SGD(model.parameters(), lr=0.1), 2, rank, world)
    _train(reference, nn.optim.SGD(reference.parameters(), lr=0.1), 2, 0, 1)
    full = model.state_dict()
    resumed = FSDP_VARIANTS["full_shard"](_blocks_model(seed=1))
    resumed.load_state_dict(full)
    with FullyShardedDataParallel.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        sharded = model.state_dict()
    again = FSDP_VARIANTS["full_shard"](_blocks_model(seed=2))
    with FullyShardedDataParallel.state_dict_type(again, StateDictType.SHARDED_STATE_DICT):
        again.load_state_dict(sharded)
    _train(resumed, nn.optim.SGD(resumed.parameters(), lr=0.1), 2, rank, world, first_step=2)
    _train(reference, nn.optim.SGD(reference.parameters(), lr=0.1), 2, 0, 1, first_step=2)
    return {
        "resumed_diff": max_diff(resumed.state_dict().values(), reference.state_dict().values()),
        "sharded_diff": max_diff(again.state_dict().values(), full.values()),
        "sharded_is_flat": all(v.ndim == 1 for v in sharded.values()),
    }


def fsdp_memory(rank, world):
    """The peak of traced memory over a FULL_SHARD step (forward, backward, Adam step) with a
    tiny batch, against 1/N of parameters + gradients + Adam state, plus the largest unit's
    parameters and gradients, plus the parameters of the unit being prefetched. The peak also
    counts ~0.2 MB of Python objects (modules, graph nodes) that do not grow with the model:
    width 192 makes the tensors (19 MB) dominate."""
    tracemalloc.start()
    try:
        model = _fully_shard_blocks(_blocks_model(blocks=16, width=192))
        opt = nn.optim.Adam(model.parameters(), lr=1e-3)
        x, y = batch(0, size=2 * world)
        inputs, targets = shard(x, rank, world), shard(y, rank, world)
        for _ in range(2):  # the first step makes Adam's state
            tracemalloc.reset_peak()
            opt.zero_grad()
            F.cross_entropy(model(inputs), targets).backward()
            opt.step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    full_numel = sum(n for m in model.modules() if hasattr(m, "_fsdp_state") for n in m._fsdp_state.shards.numels)
    unit = max(sum(m._fsdp_state.shards.numels) for m in model.modules() if hasattr(m, "_fsdp_state"))
    return {
        "peak": peak,
        "all_bytes": 4 * full_numel * 8,
        "largest_unit_bytes": 2 * unit * 8,
        "prefetched_unit_bytes": unit * 8,
    }


# ---------------------------------------------------------------- distrib.checkpoint
def _dcp_setup(seed: int, **adam):
    """$DCP_KIND "fsdp": the blocks model sharded, Adam; "zero": it in DDP, ZeRO-1 over Adam."""
    if os.environ["DCP_KIND"] == "fsdp":
        model = _fully_shard_blocks(_blocks_model(seed=seed))
        return model, nn.optim.Adam(model.parameters(), **adam)
    model = dist.DistributedDataParallel(_blocks_model(seed=seed))
    return model, ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, **adam)


def _dcp_full_state(model):
    return model.module.state_dict() if isinstance(model, dist.DistributedDataParallel) else get_full_state_dict(model)


def dcp_save(rank, world):
    """Two steps, then a sharded save to $DCP_DIR."""
    model, opt = _dcp_setup(0, **ADAM)
    _train(model, opt, 2, rank, world)
    model_sd, optim_sd = dcp.get_state_dict(model, opt)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=os.environ["DCP_DIR"])
    return {"saved": True}


def dcp_resume(rank, world):
    """A model sharded from other values loads $DCP_DIR (saved on any number of ranks), trains
    two more steps, and ends with the parameters of an uninterrupted one-process run."""
    model, opt = _dcp_setup(1, lr=1.0)
    model_sd, optim_sd = dcp.get_state_dict(model, opt)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=os.environ["DCP_DIR"])
    dcp.set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    _train(model, opt, 2, rank, world, first_step=2)
    reference = _blocks_model()
    _train(reference, nn.optim.Adam(reference.parameters(), **ADAM), 4, 0, 1)
    return {
        "max_diff": max_diff(_dcp_full_state(model).values(), reference.state_dict().values()),
        "lr": opt.param_groups[0]["lr"],
    }


# ---------------------------------------------------------------- hierarchical all_reduce
def hierarchical_mpi_hosts() -> dict:
    """Under ``mpiexec`` with two (fake) hosts of two ranks, zmq with env:// through mpi4py and no
    DISTRIB_HOST_ID: this rank's host id (from MPI's nodes) and the hierarchical all_reduce's
    verdict (``_hierarchical_worker._check``)."""
    dist.init_process_group("zmq")
    try:
        verdict = _hierarchical_check(dist, tensor)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return {"host": host_id(), **verdict}


def device_mesh_layout(rank, world):
    """This rank's view of a 1-d mesh of the world and of a 2x2 (replicate, shard) mesh (4 ranks),
    and the sums of an all_reduce over each of its groups."""
    flat = dist.init_device_mesh(DEVICE, (world,))
    out = {"flat": [flat.size(), flat.get_local_rank(), dist.get_process_group_ranks(flat.get_group())]}
    if world != 4:
        return out
    mesh = dist.init_device_mesh(DEVICE, (2, 2), mesh_dim_names=("replicate", "shard"))
    sums = {}
    for name in ("replicate", "shard"):
        t = _dev(tensor.tensor([float(rank)]))
        dist.all_reduce(t, group=mesh.get_group(name))
        sums[name] = t.item()
    shard = mesh["shard"]
    out["grid"] = {
        "coordinate": mesh.get_coordinate(),
        "groups": [dist.get_process_group_ranks(g) for g in mesh.get_all_groups()],
        "sums": sums,
        "sub_mesh": [shard.mesh.tolist(), shard.get_local_rank(), shard.get_group() is mesh.get_group("shard")],
        "repr": repr(mesh),
    }
    return out


CASES = {
    "device_mesh_layout": device_mesh_layout,
    "syncbn_ddp_equivalence": syncbn_ddp_equivalence,
    "syncbn_input_grad": syncbn_input_grad,
    "zero_equivalence": zero_equivalence,
    "zero_state_dict": zero_state_dict,
    "zero_memory": zero_memory,
    **{f"fsdp_equivalence_{name}": _fsdp_equivalence(wrap) for name, wrap in FSDP_VARIANTS.items()},
    "fsdp_prefetch_trace": fsdp_prefetch_trace,
    "fsdp_no_sync": fsdp_no_sync,
    "fsdp_mixed_precision": fsdp_mixed_precision,
    "fsdp_state_dict": fsdp_state_dict,
    "fsdp_memory": fsdp_memory,
    "dcp_save": dcp_save,
    "dcp_resume": dcp_resume,
}


def sharding_nccl() -> dict:
    """``sharding`` on nccl, each rank on its own CUDA device, the cases' tensors there."""
    return sharding("nccl")


def sharding(backend: str = "zmq") -> dict:
    """Run the cases of ``CASES`` whose names start with ``$SHARDING_CASES`` (all by default) in
    one process group on ``backend``; ``{case: result or {"error": traceback}}``, stopping at the
    first case that raises. On nccl each rank uses device ``rank`` and the cases run on cuda."""
    global DEVICE
    dist.init_process_group(backend)
    if backend == "nccl":
        tensor.cuda.set_device(dist.get_rank() % tensor.cuda.device_count())
        DEVICE = "cuda"
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
