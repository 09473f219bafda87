"""ZeroRedundancyOptimizer (ZeRO-1) over 2 and 3 ranks (zmq) and 2 (mpi): the parameters of DDP +
Adam and of one process with the whole batch (float64, 1e-12), the consolidated state dict and a
resumed run, 1/N of the optimizer state per rank; one-process checks of the partition."""

from __future__ import annotations

import pytest

import nn
import tensor
from distrib.optim import ZeroRedundancyOptimizer
from distrib.optim.zero_redundancy_optimizer import partition
from tests.distrib._harness import case_results
from tests.distrib._sharding_harness import (
    CONFIG_IDS,
    CONFIGS,
    TIGHT,
    assert_same_on_every_rank,
    run_config,
    run_nccl,
)


@pytest.fixture(scope="module", params=CONFIGS, ids=CONFIG_IDS)
def zero_results(request) -> list[dict]:
    return run_config("zero", *request.param)


def test_matches_ddp_adam_and_one_process(zero_results):
    results = case_results(zero_results, "zero_equivalence")
    for rank, r in enumerate(results):
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
        assert r["same_as_ddp"], f"rank {rank}: parameters differ from DDP + Adam"
    assert_same_on_every_rank(results, "params")


def test_consolidated_state_dict_is_the_whole_optimizers_and_resumes(zero_results):
    results = case_results(zero_results, "zero_state_dict")
    assert results[0]["state_diff"] < TIGHT and results[0]["groups_equal"]
    assert all(r["refused"] for r in results[1:]), "state_dict() on a rank without the shards must raise"
    for rank, r in enumerate(results):
        assert r["resumed_diff"] < TIGHT, f"rank {rank}: the resumed run differs by {r['resumed_diff']}"


def test_each_rank_holds_a_1_over_n_share_of_the_state(zero_results):
    results = case_results(zero_results, "zero_memory")
    world = len(results)
    full = results[0]["full_bytes"]
    assert sum(r["bytes"] for r in results) == full
    for rank, r in enumerate(results):
        assert r["bytes"] <= full / world + r["largest_param_bytes"], f"rank {rank}: {r['bytes']} of {full} bytes"


def test_partition_balances_greedily_largest_first():
    sizes = [10, 7, 6, 5, 1]
    params = [tensor.zeros(n) for n in sizes]
    owned = partition([{"params": params[:3]}, {"params": params[3:]}], 2)
    numels = [[[p.numel() for p in group] for group in rank] for rank in owned]
    assert numels == [[[10], [5]], [[7, 6], [1]]]  # after group 0: 10 against 13


def test_one_rank_is_the_wrapped_optimizer(world_of_one, device):
    tensor.manual_seed(0)
    model = nn.Linear(3, 2).to(device=device, dtype=tensor.float64)
    reference = nn.Linear(3, 2).to(device=device, dtype=tensor.float64)
    reference.load_state_dict(model.state_dict())
    opt = ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, lr=0.1)
    ref_opt = nn.optim.Adam(reference.parameters(), lr=0.1)
    x = tensor.randn(4, 3, dtype=tensor.float64, device=device)
    for m, o in ((model, opt), (reference, ref_opt)):
        m(x).sum().backward()
        o.step()
    assert all(bool((p == q).all()) for p, q in zip(model.parameters(), reference.parameters()))
    assert isinstance(opt, nn.optim.Optimizer) and isinstance(opt.optim, nn.optim.Adam)
    with pytest.raises(RuntimeError, match="consolidate_state_dict"):
        opt.state_dict()
    with pytest.raises(ValueError, match="overlap_with_ddp"):
        ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, overlap_with_ddp=True)


@pytest.mark.gpu
@pytest.mark.slow  # ~10 s: two ranks start the CuPy stand-in
def test_on_nccl_with_cuda_tensors_matches_ddp_adam_and_one_process():
    results = case_results(run_nccl("zero_equivalence"), "zero_equivalence")
    for rank, r in enumerate(results):
        assert r["device"] == f"cuda:{rank}", r["device"]
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
        assert r["same_as_ddp"], f"rank {rank}: parameters differ from DDP + Adam"
    assert_same_on_every_rank(results, "params")
