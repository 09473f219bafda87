"""FSDP over 2 and 3 ranks (zmq) and 2 (mpi, nccl): ``fully_shard`` and ``FullyShardedDataParallel``
(FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, CPU offload) give the parameters of one process with
the whole batch (float64, 1e-12); implicit and explicit prefetching, in the order of collective
events; gradient accumulation without sync; FULL and SHARDED state dicts; the memory held per
rank; one-process checks of the API."""

from __future__ import annotations

import pytest

import nn
import tensor
from distrib.fsdp import (
    CPUOffloadPolicy,
    FSDPModule,
    ModuleWrapPolicy,
    fully_shard,
    size_based_auto_wrap_policy,
)
from distrib.fsdp._fully_shard import _Shards
from distrib.fsdp.fully_sharded_data_parallel import _auto_wrap
from tests.distrib import _sharding_scenarios as scenarios
from tests.distrib._harness import case_results
from tests.distrib._sharding_harness import (
    CONFIG_IDS,
    CONFIGS,
    TIGHT,
    assert_same_on_every_rank,
    run_config,
    run_nccl,
)
from tests.helpers import assert_close

# ~13 s per configuration (process start, 8 cases): the 3-rank and mpi runs are marked slow.
FSDP_CONFIGS = [pytest.param(c, marks=[pytest.mark.slow] if c != ("zmq-shm", 2) else []) for c in CONFIGS]


@pytest.fixture(scope="module", params=FSDP_CONFIGS, ids=CONFIG_IDS)
def fsdp_results(request) -> list[dict]:
    return run_config("fsdp", *request.param)


@pytest.mark.parametrize("variant", list(scenarios.FSDP_VARIANTS))
def test_matches_one_process_with_the_whole_batch(fsdp_results, variant):
    results = case_results(fsdp_results, f"fsdp_equivalence_{variant}")
    for rank, r in enumerate(results):
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
        assert r["eval_diff"] < TIGHT, f"rank {rank}: a no_grad forward differs by {r['eval_diff']}"
        assert r["keys_equal"], f"rank {rank}: the full state dict's keys are not the unsharded model's"
        if "offload" in variant:
            assert r["device"] == "cpu" and r["grad_devices"] == ["cpu"], r
    assert_same_on_every_rank(results, "params")


def test_prefetching_units_do_not_wait_for_their_gathers(fsdp_results):
    waited = {
        variant: case_results(fsdp_results, f"fsdp_equivalence_{variant}")[0]["waited_gathers"]
        for variant in ("fully_shard_prefetch", "fully_shard", "full_shard")
    }
    # Explicit prefetching: per step only the root waits (its forward, its backward), plus the
    # no_grad forward's root. Implicit: the same, except in the first forward (it records the
    # order), where the 2 blocks wait too. The wrapper without forward_prefetch: the blocks wait
    # in every forward (2 per step and in no_grad), never in backward (BACKWARD_PRE).
    steps = scenarios.STEPS
    assert waited == {"fully_shard_prefetch": 2 * steps + 1, "fully_shard": 2 * steps + 3, "full_shard": 4 * steps + 3}


def _position(events: list, event: tuple, after: int = -1) -> int:
    """The index of the first ``event`` in ``events`` past ``after``."""
    event = list(event)
    return next(i for i, e in enumerate(events) if i > after and e == event)


def test_implicit_prefetch_issues_the_next_gather_while_a_unit_computes(fsdp_results):
    events = case_results(fsdp_results, "fsdp_prefetch_trace")[0]["events"]
    blocks = [f"b{i}" for i in range(3)]
    assert ["gather", "b0"] not in events and ["gather", "b1"] not in events  # none waited for at once
    for current, following in zip(blocks, blocks[1:]):  # forward: b0, b1, b2
        done = _position(events, ("forward done", current))
        issued = _position(events, ("issue", following))
        assert _position(events, ("forward", current)) < done
        assert issued < done < _position(events, ("wait", following), issued), events
    backward = _position(events, ("forward done", blocks[-1]))
    for current, following in zip(blocks[::-1], blocks[-2::-1]):  # backward: b2, b1, b0
        issued = _position(events, ("issue", following), backward)
        assert _position(events, ("wait", current), backward) < issued, events
        assert issued < _position(events, ("reduce_scatter", current)), events


def test_no_sync_accumulates_then_reduces_the_sum(fsdp_results):
    for rank, r in enumerate(case_results(fsdp_results, "fsdp_no_sync")):
        assert r["max_diff"] < TIGHT, f"rank {rank}: {r['max_diff']}"


def test_mixed_precision_computes_in_param_dtype_and_keeps_float64_state(fsdp_results):
    for rank, r in enumerate(case_results(fsdp_results, "fsdp_mixed_precision")):
        assert r["max_diff"] < 1e-5, f"rank {rank}: {r['max_diff']}"
        assert r["max_diff"] > 0  # it did compute in float32
        assert r["output_dtype"] == "float32" and r["state_dtypes"] == ["float64"]


def test_full_and_sharded_state_dicts_round_trip_and_resume(fsdp_results):
    for rank, r in enumerate(case_results(fsdp_results, "fsdp_state_dict")):
        assert r["resumed_diff"] < TIGHT, f"rank {rank}: the resumed run differs by {r['resumed_diff']}"
        assert r["sharded_diff"] == 0.0 and r["sharded_is_flat"]


def test_full_shard_holds_one_nth_plus_the_largest_unit(fsdp_results):
    results = case_results(fsdp_results, "fsdp_memory")
    world = len(results)
    for rank, r in enumerate(results):
        # With prefetching one more unit's parameters are gathered while a unit computes, as
        # PyTorch's accounting of BACKWARD_PRE says (current and next parameters, current gradients),
        # and that all_gather's input (this rank's shard of them) lives until the gather is waited
        # for: whether it still does at the peak depends on timing (peaks on 3 ranks fall ~97 KB,
        # one such shard, apart from run to run, already at 443fdd4).
        prefetch = r["prefetched_unit_bytes"] * (1 + 1 / world)
        bound = 1.1 * (r["all_bytes"] / world + r["largest_unit_bytes"] + prefetch)
        assert r["peak"] <= bound, f"rank {rank}: peak {r['peak']} bytes > {bound:.0f} ({r})"


def test_fully_shard_makes_an_fsdp_module_and_refuses_twice(world_of_one):
    model = fully_shard(nn.Linear(3, 2))
    assert isinstance(model, FSDPModule) and isinstance(model, nn.Linear)
    assert [p.shape for p in model.parameters()] == [(6,), (2,)]
    with pytest.raises(ValueError, match="already sharded"):
        fully_shard(model)
    with pytest.raises(TypeError, match="offload_policy"):
        fully_shard(nn.Linear(3, 2), offload_policy=object())


def test_a_root_without_parameters_of_its_own_prefetches_every_unit(world_of_one, monkeypatch):
    # The usual model: the root holds only units. It schedules them, so that they prefetch
    # each other (without it every gather would be waited for as it is issued).
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
    fully_shard(model[0])
    fully_shard(model[2])
    fully_shard(model)
    issued = []  # async_op of each all_gather, in order
    real_start = _Shards.start_gather

    def start_gather(self, shards, group, async_op=True):
        issued.append(async_op)
        return real_start(self, shards, group, async_op)

    monkeypatch.setattr(_Shards, "start_gather", start_gather)
    x = tensor.randn(5, 4, dtype=tensor.float64)
    steps = []
    for _ in range(2):
        issued.clear()
        model(x).sum().backward()
        steps.append(list(issued))
    # The first forward records the order (both units gather as they start); the second
    # prefetches root -> unit 0 -> unit 2. Backward starts at unit 2 (gathered then, as in FSDP2,
    # whose root keeps its parameters but not the last unit's), which prefetches unit 0.
    assert steps == [[False, False, False, True], [True, True, False, True]]


def test_auto_wrap_policies_pick_submodules(world_of_one):
    model = scenarios._blocks_model(blocks=3)
    picked = []
    _auto_wrap(model, ModuleWrapPolicy({nn.Sequential}), picked.append)
    assert picked == [model[2], model[3], model[4]]
    picked.clear()
    _auto_wrap(model, lambda **kw: size_based_auto_wrap_policy(**kw, min_num_params=50), picked.append)
    # Children first: each Linear(8, 8) (72 parameters) is a unit, which leaves its Sequential 0;
    # Linear(5, 8) (48) and Linear(8, 3) (27) stay with the root.
    assert picked == [model[2][0], model[3][0], model[4][0]]


@pytest.mark.parametrize("offload", [False, True], ids=["on_device", "cpu_offload"])
def test_one_rank_on_each_device_gives_the_unsharded_gradients(world_of_one, device, offload):
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device=device, dtype=tensor.float64)
    reference = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device=device, dtype=tensor.float64)
    reference.load_state_dict(model.state_dict())
    policy = CPUOffloadPolicy() if offload else None
    fully_shard(model[0], offload_policy=policy)
    fully_shard(model, offload_policy=policy)
    x = tensor.randn(5, 4, dtype=tensor.float64, device=device)
    out = model(x)
    out.sum().backward()
    reference(x).sum().backward()
    assert out.device == x.device  # the module computes on its device
    for p, q in zip(model.parameters(), reference.parameters()):
        # As PyTorch: with offload the shards and their gradients are on the CPU.
        shard_device = "cpu" if offload else q.device.type
        assert p.device.type == p.grad.device.type == shard_device and p.shape == (q.numel(),)
        assert_close(p.grad.to(q.device), q.grad.reshape(-1), rtol=0, atol=0)  # one rank: the whole, flattened


@pytest.mark.gpu
@pytest.mark.slow  # ~10 s: two ranks start the CuPy stand-in
def test_every_strategy_on_nccl_with_cuda_tensors_matches_one_process():
    per_rank = run_nccl("fsdp_equivalence_")
    for variant in scenarios.FSDP_VARIANTS:
        results = case_results(per_rank, f"fsdp_equivalence_{variant}")
        for rank, r in enumerate(results):
            # With CPU offload the shards and gradients live on the CPU, the module computes on its GPU.
            expected = "cpu" if "offload" in variant else f"cuda:{rank}"
            assert r["device"] == expected and r["grad_devices"] == [expected], (variant, r)
            assert r["output_device"] == f"cuda:{rank}", (variant, r)
            assert r["max_diff"] < TIGHT, f"{variant}, rank {rank}: parameters differ by {r['max_diff']}"
            assert r["eval_diff"] < TIGHT, f"{variant}, rank {rank}: a no_grad forward differs by {r['eval_diff']}"
        assert_same_on_every_rank(results, "params")
