"""FSDP over 2 and 3 ranks (zmq) and 2 (mpi): ``fully_shard`` and ``FullyShardedDataParallel``
(FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD) give the parameters of one process with the whole batch
(float64, 1e-12); gradient accumulation without sync; FULL and SHARDED state dicts; the memory
held per rank; one-process checks of the API."""

from __future__ import annotations

import pytest

import distrib as dist
import nn
import tensor
from distrib.fsdp import (
    FSDPModule,
    FullyShardedDataParallel,
    ModuleWrapPolicy,
    fully_shard,
    size_based_auto_wrap_policy,
)
from distrib.fsdp.fully_sharded_data_parallel import _auto_wrap
from tests.distrib import _sharding_scenarios as scenarios
from tests.distrib._harness import case_results, free_port
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
    assert_same_on_every_rank(results, "params")


def test_prefetching_units_do_not_wait_for_their_gathers(fsdp_results):
    plain = case_results(fsdp_results, "fsdp_equivalence_fully_shard")[0]["waited_gathers"]
    prefetching = case_results(fsdp_results, "fsdp_equivalence_fully_shard_prefetch")[0]["waited_gathers"]
    # Per step only the root waits (its forward, its backward), plus the no_grad forward's root;
    # without prefetching each of the 2 blocks waits twice more per step, and once in no_grad.
    steps = scenarios.STEPS
    assert prefetching == 2 * steps + 1
    assert plain == 6 * steps + 3


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
        bound = 1.1 * (r["all_bytes"] / world + r["largest_unit_bytes"])
        assert r["peak"] <= bound, f"rank {rank}: peak {r['peak']} bytes > {bound:.0f} ({r})"


@pytest.fixture
def world_of_one():
    dist.init_process_group("zmq", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_fully_shard_makes_an_fsdp_module_and_refuses_twice(world_of_one):
    model = fully_shard(nn.Linear(3, 2))
    assert isinstance(model, FSDPModule) and isinstance(model, nn.Linear)
    assert [p.shape for p in model.parameters()] == [(6,), (2,)]
    with pytest.raises(ValueError, match="already sharded"):
        fully_shard(model)
    with pytest.raises(NotImplementedError, match="offload_policy"):
        fully_shard(nn.Linear(3, 2), offload_policy=object())


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
    with pytest.raises(NotImplementedError, match="cpu_offload"):
        FullyShardedDataParallel(model, cpu_offload=object())


def test_one_rank_on_each_device_gives_the_unsharded_gradients(world_of_one, device):
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device=device, dtype=tensor.float64)
    reference = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).to(device=device, dtype=tensor.float64)
    reference.load_state_dict(model.state_dict())
    fully_shard(model[0])
    fully_shard(model)
    x = tensor.randn(5, 4, dtype=tensor.float64, device=device)
    model(x).sum().backward()
    reference(x).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.device == q.device and p.shape == (q.numel(),)  # one rank: the whole, flattened
        assert_close(p.grad, q.grad.reshape(-1), rtol=0, atol=0)


@pytest.mark.gpu
@pytest.mark.slow  # ~10 s: two ranks start the CuPy stand-in
def test_fully_shard_on_nccl_with_cuda_tensors_matches_one_process():
    results = case_results(run_nccl("fsdp_equivalence_fully_shard"), "fsdp_equivalence_fully_shard")
    for rank, r in enumerate(results):
        assert r["device"] == f"cuda:{rank}", r["device"]
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
        assert r["eval_diff"] < TIGHT, f"rank {rank}: a no_grad forward differs by {r['eval_diff']}"
    assert_same_on_every_rank(results, "params")
