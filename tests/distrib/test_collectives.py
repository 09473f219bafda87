"""The conformance suite: every collective on 1, 2 and 3 ranks, exact expected values.

Each (transport, world size) runs all cases of ``_scenarios.CASES`` once, in one process
group of subprocess ranks; every case then checks each rank's result here. Other backends
(mpi, nccl) add themselves to ``CONFIGS``.
"""

from __future__ import annotations

import functools

import pytest

from tests.distrib import _scenarios
from tests.distrib._harness import TRANSPORTS, run_ranks, shm_entries

CONFIGS = [("zmq-shm", 1), ("zmq-shm", 2), ("zmq-shm", 3), ("zmq-tcp", 2), ("zmq-tcp", 3)]


@functools.cache
def _run(transport: str, size: int):
    before = shm_entries()
    results = run_ranks("conformance", size, env=TRANSPORTS[transport], timeout=90)
    for r in results:
        assert r.returncode == 0, f"rank {r.rank} exited with {r.returncode}:\n{r.stderr[-4000:]}"
    assert shm_entries() - before == set(), "the ranks left /dev/shm segments behind"
    return [r.result for r in results]


@pytest.mark.parametrize("case", list(_scenarios.CASES))
@pytest.mark.parametrize(("transport", "size"), CONFIGS, ids=[f"{t}-{n}" for t, n in CONFIGS])
def test_collective(transport, size, case):
    _scenarios.check_conformance_case(_run(transport, size), case, size)


@pytest.mark.parametrize(("transport", "expect_shm"), [("zmq-shm", True), ("zmq-tcp", False)])
def test_same_host_ranks_use_shared_memory_unless_disabled(transport, expect_shm):
    results = run_ranks("shm_check", 2, env=TRANSPORTS[transport], timeout=60)
    assert [r.result["shm"] for r in results] == [expect_shm, expect_shm]
