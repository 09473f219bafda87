"""The conformance suite: every collective on 1, 2 and 3 ranks, exact expected values.

Each (transport, world size) runs all cases of ``_scenarios.CASES`` once, in one process
group of subprocess ranks that check their own results; every case then checks each rank's
verdict here. Other backends (mpi, nccl) add themselves to ``CONFIGS``.
"""

from __future__ import annotations

import pytest

from tests.distrib import _scenarios
from tests.distrib._harness import TRANSPORTS, rank_results, run_ranks

CONFIGS = [("zmq-shm", 1), ("zmq-shm", 2), ("zmq-shm", 3), ("zmq-tcp", 2), ("zmq-tcp", 3)]


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"{t}-{n}" for t, n in CONFIGS])
def verdicts(request) -> list[dict]:
    """Every rank's verdicts on every case, for one (transport, world size); dropped by pytest
    once the configuration's last case has run."""
    transport, size = request.param
    return rank_results("conformance", size, env=TRANSPORTS[transport], timeout=90)


@pytest.mark.parametrize("case", list(_scenarios.CASES))
def test_collective(verdicts, case):
    _scenarios.check_conformance_case(verdicts, case)


@pytest.mark.parametrize(("transport", "expect_shm"), [("zmq-shm", True), ("zmq-tcp", False)])
def test_same_host_ranks_use_shared_memory_unless_disabled(transport, expect_shm):
    results = run_ranks("shm_check", 2, env=TRANSPORTS[transport], timeout=60)
    assert [r.result["shm"] for r in results] == [expect_shm, expect_shm]


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_group_edge_cases_on_two_ranks(transport):
    results = rank_results("group_edge_cases", 2, env=TRANSPORTS[transport], timeout=60)
    for rank, out in enumerate(results):
        assert out["backend"] == out["gloo_group_backend"] == "gloo"
        assert out["after_local_group"] == [2.0]  # rank 0's local-sync group shifted no name
        assert out["other_ranks"] == [1 - rank] and out["other_global_rank_0"] == 1 - rank
        assert out["other_group_rank"] == 0
        assert out["bf16_avg"] == [1.5, 2.5, -2.5]  # divided as floats, not truncated
        assert out["size_mismatch"]["type"] == "DistBackendError"
        assert "elements where" in out["size_mismatch"]["message"]
