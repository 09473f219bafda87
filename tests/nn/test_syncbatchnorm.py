"""nn.SyncBatchNorm: a plain BatchNorm on one process; over 2 and 3 ranks (zmq, mpi), the
output, input gradient, running statistics and trained parameters of one process with the
whole batch (float64, 1e-12); convert_sync_batchnorm."""

from __future__ import annotations

import pytest

import nn
import tensor
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


def test_without_a_process_group_it_is_batchnorm(device):
    x = tensor.randn(8, 3, 4, dtype=tensor.float64, device=device)
    sync = nn.SyncBatchNorm(3).to(device=device, dtype=tensor.float64)
    plain = nn.BatchNorm1d(3).to(device=device, dtype=tensor.float64)
    for module in (sync, plain):
        module.weight.data.copy_(tensor.tensor([1.0, 2.0, 3.0], device=device))
    assert_close(sync(x), plain(x), rtol=0, atol=0)
    assert_close(sync.running_var, plain.running_var, rtol=0, atol=0)
    sync.eval(), plain.eval()
    assert_close(sync(x), plain(x), rtol=0, atol=0)


def test_convert_sync_batchnorm_shares_parameters_and_buffers():
    bn = nn.BatchNorm2d(4, momentum=0.3)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.Sequential(bn, nn.ReLU()))
    model.eval()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model, process_group="group")
    sync = converted[1][0]
    assert converted is model and isinstance(sync, nn.SyncBatchNorm)
    assert sync.weight is bn.weight and sync.running_mean is bn.running_mean
    assert (sync.momentum, sync.process_group, sync.training) == (0.3, "group", False)
    assert list(converted.state_dict()) == [
        "0.weight",
        "0.bias",
        "1.0.weight",
        "1.0.bias",
        "1.0.running_mean",
        "1.0.running_var",
        "1.0.num_batches_tracked",
    ]
    assert isinstance(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(2)), nn.SyncBatchNorm)


def test_refuses_1d_input():
    with pytest.raises(ValueError, match="got 1D input"):
        nn.SyncBatchNorm(3)(tensor.randn(3))


@pytest.fixture(scope="module", params=CONFIGS, ids=CONFIG_IDS)
def syncbn_results(request) -> list[dict]:
    return run_config("syncbn", *request.param)


def test_output_input_grad_and_running_stats_match_one_process(syncbn_results):
    for rank, r in enumerate(case_results(syncbn_results, "syncbn_input_grad")):
        for key in ("out_diff", "input_grad_diff", "weight_grad_diff", "stats_diff"):
            assert r[key] < TIGHT, f"rank {rank}: {key} = {r[key]}"


def test_ddp_training_matches_one_process_with_the_whole_batch(syncbn_results):
    results = case_results(syncbn_results, "syncbn_ddp_equivalence")
    for rank, r in enumerate(results):
        assert r["is_sync"] == "SyncBatchNorm"
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
    assert_same_on_every_rank(results, "params")


@pytest.mark.gpu
@pytest.mark.slow  # ~10 s: two ranks start the CuPy stand-in
def test_on_nccl_with_cuda_tensors_matches_one_process():
    per_rank = run_nccl("syncbn")
    for rank, r in enumerate(case_results(per_rank, "syncbn_input_grad")):
        assert r["device"] == f"cuda:{rank}", r["device"]
        for key in ("out_diff", "input_grad_diff", "weight_grad_diff", "stats_diff"):
            assert r[key] < TIGHT, f"rank {rank}: {key} = {r[key]}"
    results = case_results(per_rank, "syncbn_ddp_equivalence")
    for rank, r in enumerate(results):
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
    assert_same_on_every_rank(results, "params")
