"""Hierarchical all_reduce (Note [Hierarchical all_reduce] in distrib/backends/_hierarchical.py):
two network namespaces as two hosts, two ranks in each (``_hierarchical_worker.py``)."""

from __future__ import annotations

import os

import pytest

from distrib import _procs
from distrib.backends import _hierarchical
from tests.launch.conftest import NetnsPair, clean_env, netns_skip_reason

from ._hierarchical_worker import CASES, WORLD, hierarchical, run_2x2

needs_netns = pytest.mark.skipif(netns_skip_reason() is not None, reason=str(netns_skip_reason()))


@pytest.fixture
def net():
    pair = NetnsPair()
    try:
        yield pair
    finally:
        leftovers = pair.close()
    assert leftovers == [], f"processes left running in the namespaces: {leftovers}"


@needs_netns
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_two_hosts_of_two_ranks_reduce_hierarchically_and_exactly(net):
    verdicts = run_2x2(net, "check", clean_env())
    assert [v["rank"] for v in verdicts] == list(range(WORLD))
    for v in verdicts:
        assert v["failures"] == [], f"rank {v['rank']}"
        want = sum(hierarchical(dtype, n) for dtype, n, _ in CASES)
        assert v["calls"] == want, f"rank {v['rank']} took the hierarchical path {v['calls']} times, not {want}"


@needs_netns
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_distrib_hierarchical_0_keeps_the_flat_algorithms(net):
    # The flat ring sums in another order: the float cases then differ from the hierarchical
    # reference, which shows the check above can tell the paths apart.
    verdicts = run_2x2(net, "check", clean_env(DISTRIB_HIERARCHICAL="0"))
    for v in verdicts:
        assert v["calls"] is None
        assert any("float64[300000]" in f for f in v["failures"]), v["failures"]


@needs_netns
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_dead_rank_fails_every_ranks_all_reduce(net):
    # Each rank's op has a 5 s timeout; the test's own timeout bounds the whole.
    verdicts = run_2x2(net, "fail", clean_env())
    assert verdicts[WORLD - 1]["exited"]
    for v in verdicts[: WORLD - 1]:
        assert v["error"] is not None and "all_reduce" in v["error"], v
    # Rank 3's host peer sees it exit through shared memory and names it.
    assert "rank 3" in verdicts[2]["error"] and "exited" in verdicts[2]["error"], verdicts[2]


def test_host_id_override(monkeypatch):
    monkeypatch.delenv("DISTRIB_HOST_ID", raising=False)
    machine = _procs.host_id()
    assert machine.endswith(f"/{os.getuid()}")
    monkeypatch.setenv("DISTRIB_HOST_ID", "rack3/node7")
    assert _procs.host_id() == "rack3/node7"


@pytest.mark.parametrize("hosts", [["a", "a", "a"], ["a", "b", "c"], ["a"]])
def test_no_hierarchy_on_one_host_or_one_rank_per_host(hosts):
    # Decided from the host ids alone, before the store is touched.
    assert _hierarchical.setup(object(), hosts, None) is None
