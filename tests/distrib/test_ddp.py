"""DistributedDataParallel across processes: exact equivalence with one process, no_sync,
unused parameters, communication hooks, buffers, shape checks and Join.

Each configuration (backend/transport, world size) runs every case of ``_ddp_scenarios``
once, in one process group of subprocess ranks (zmq: env:// rendezvous; mpi: ``mpiexec -n``,
skipped where mpi4py or mpiexec is missing); each test then checks its case's results from
every rank. Ranks send small results: distances to a one-process reference, and digests of
what must agree across ranks. Float64 models make the equivalence checks tight.
"""

from __future__ import annotations

import pytest

from tests.distrib import _ddp_scenarios as scenarios
from tests.distrib._harness import TRANSPORTS, case_results, rank_results
from tests.distrib._mpi_harness import mpi_rank_results, skip_reason

CONFIGS = [("zmq-shm", 2), ("zmq-shm", 3), ("zmq-tcp", 2), ("mpi", 2)]
TIGHT = 1e-12  # float64, summed in a different order
TIMEOUT = {"DISTRIB_TIMEOUT": "30"}


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"{c}-{n}" for c, n in CONFIGS])
def ddp_results(request) -> list[dict]:
    """Every rank's results of every case, for one configuration; dropped by pytest once the
    configuration's last test has run."""
    config, size = request.param
    if config != "mpi":
        return rank_results("ddp", size, env={**TIMEOUT, **TRANSPORTS[config]}, timeout=120)
    if reason := skip_reason():
        pytest.skip(reason)
    return mpi_rank_results("ddp", size, args=("mpi",), env=TIMEOUT, timeout=120)


def assert_same_on_every_rank(results, key):
    for rank, r in enumerate(results[1:], start=1):
        assert r[key] == results[0][key], f"{key} differs between rank 0 and rank {rank}"


@pytest.mark.parametrize("variant", list(scenarios.EQUIVALENCE))
def test_n_ranks_with_batch_b_over_n_match_one_process_with_batch_b(ddp_results, variant):
    results = case_results(ddp_results, f"equivalence_{variant}")
    for rank, r in enumerate(results):
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
        assert r["grad_in_bucket"] == ("bucket_view" in variant), f"rank {rank}: grads as bucket views"
    assert_same_on_every_rank(results, "params")
    expected_buckets = 3 if "bucket_cap_mb" in scenarios.EQUIVALENCE[variant] else 1
    assert results[0]["buckets"] == expected_buckets


def test_no_sync_accumulates_locally_then_averages_the_sum(ddp_results):
    results = case_results(ddp_results, "no_sync")
    for rank, r in enumerate(results):
        assert r["local_diff"] == 0.0, f"rank {rank}: gradients inside no_sync() were communicated"
        assert r["synced_diff"] < TIGHT, f"rank {rank}: the synced gradients are off by {r['synced_diff']}"
    assert_same_on_every_rank(results, "grads")


def test_unused_parameter_is_an_error_naming_it(ddp_results):
    for rank, r in enumerate(case_results(ddp_results, "unused_error")):
        assert r["type"] == "RuntimeError"
        message = r["message"]
        assert f"did not receive grad for rank {rank}: b.weight, b.bias, never.weight, never.bias" in message
        assert "find_unused_parameters=True" in message


def test_find_unused_parameters_averages_what_each_rank_used(ddp_results):
    for rank, r in enumerate(case_results(ddp_results, "find_unused")):
        assert r["step0_diff"] < TIGHT and r["step1_diff"] < TIGHT, f"rank {rank}: {r}"
        assert r["never_grad_is_none"], f"rank {rank}: a parameter no rank used got a gradient"
        assert not r["b_grad_is_none"], f"rank {rank}: a parameter rank 1 used got no gradient"


def test_comm_hooks_run_per_bucket_in_order(ddp_results):
    for rank, r in enumerate(case_results(ddp_results, "comm_hooks")):
        n = r["buckets"]
        assert r["calls"] == [[i, i == n - 1, 2] for i in range(n)], f"rank {rank}"
        assert r["exact_diff"] < TIGHT
        assert r["fp16_diff"] < 1e-3, f"rank {rank}: fp16 compression is off by {r['fp16_diff']}"
        assert r["fp16_grad_dtype"] == "float32"
        assert r["bad_hook"]["type"] == "TypeError"
        assert "must return a distrib Future" in r["bad_hook"]["message"]


def test_fp16_and_bf16_compress_hooks_match_uncompressed_within_their_precision(ddp_results):
    for rank, r in enumerate(case_results(ddp_results, "compress_hooks")):
        for name, unit in (("fp16_compress_hook", 2.0**-11), ("bf16_compress_hook", 2.0**-8)):
            result = r[name]
            assert result["grad_dtype"] == "float32", (rank, name)
            # a few roundings (compress, average, sum of two) of at most one unit each
            assert result["diff"] < 4 * unit * result["grad_scale"], (rank, name, result)


def test_params_and_buffers_come_from_rank_0(ddp_results):
    results = case_results(ddp_results, "buffers")
    assert_same_on_every_rank(results, "params")
    for rank, r in enumerate(results):
        assert r["after_init"] == [0.0, 0.0], f"rank {rank}: buffers not broadcast at construction"
        assert r["after_forward"] == [10.0, 10.0], f"rank {rank}: buffers not broadcast at forward"
        assert r["unsynced_after_forward"] == [rank + 10.0] * 2, f"rank {rank}: broadcast_buffers=False broadcast"


def test_parameter_mismatch_across_ranks_names_the_first_one(ddp_results):
    last = len(ddp_results) - 1
    for r in case_results(ddp_results, "shape_mismatch"):
        assert r["shape"]["type"] == "RuntimeError"
        assert (f"parameter 2 ('1.weight') has shape [3, 4] and dtype float32 on rank {last}, but rank 0's "
                "('1.weight') has shape [2, 4]") in r["shape"]["message"]
        assert r["count"]["type"] == "RuntimeError"
        assert f"rank {last} has 6 parameters that require grad, while rank 0 has 4" in r["count"]["message"]


@pytest.mark.parametrize("case", ["join", "join_divide_by_active"])
def test_join_with_uneven_inputs_matches_the_last_joiner(ddp_results, case):
    results = case_results(ddp_results, case)
    for rank, r in enumerate(results):
        assert r["max_diff"] < TIGHT, f"rank {rank}: {r['max_diff']}"
    assert_same_on_every_rank(results, "params")


def test_join_shadows_buffer_broadcasts(ddp_results):
    results = case_results(ddp_results, "join_with_buffers")
    assert_same_on_every_rank(results, "params")
    assert_same_on_every_rank(results, "buffers")


def test_join_throw_on_early_termination_raises_everywhere(ddp_results):
    for r in case_results(ddp_results, "join_throw"):
        assert r == {"type": "RuntimeError",
                     "message": "Detected at least one rank that exhausted inputs. Throwing across all ranks."}
