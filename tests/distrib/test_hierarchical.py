"""Hierarchical all_reduce (Note [Hierarchical all_reduce] in distrib/backends/_hierarchical.py):
two network namespaces as two hosts, two ranks in each (``_hierarchical_worker.py``); host ids
from the launcher (one per node) and from MPI (its nodes), with no DISTRIB_HOST_ID."""

from __future__ import annotations

import json
import os
import tempfile

import pytest

from distrib import _procs
from distrib.backends import _hierarchical
from tests.distrib._mpi_harness import needs_mpi, run_mpi
from tests.launch.conftest import (
    ROOT,
    Launcher,
    NetnsPair,
    clean_env,
    free_port_pair,
    netns_skip_reason,
    write_script,
)

from ._hierarchical_worker import CASES, PER_HOST, WORLD, hierarchical, run_2x2

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


def _assert_hierarchical_on_two_hosts(verdicts: list[dict]) -> None:
    """Each host's ranks share a host id, the hosts' differ, and every rank reduced exactly, on
    the hierarchical path for the sizes above the threshold."""
    hosts = [v["host"] for v in verdicts]
    assert hosts == [hosts[r - r % PER_HOST] for r in range(WORLD)], hosts
    assert len(set(hosts)) == WORLD // PER_HOST, hosts
    want = sum(hierarchical(dtype, n) for dtype, n, _ in CASES)
    for rank, v in enumerate(verdicts):
        assert v["failures"] == [], f"rank {rank}"
        assert v["calls"] == want, f"rank {rank} took the hierarchical path {v['calls']} times, not {want}"


LAUNCHED_CHECK = """\
import json, sys
sys.path.insert(0, sys.argv[1])
import distrib as dist, tensor
from distrib._procs import host_id
from tests.distrib._hierarchical_worker import _check
dist.init_process_group("zmq")
verdict = {"rank": dist.get_rank(), "host": host_id(), **_check(dist, tensor)}
dist.barrier()
dist.destroy_process_group()
print("VERDICT", json.dumps(verdict))
"""


@pytest.mark.slow  # ~10 s: two launchers, four ranks
@pytest.mark.timeout(180)
def test_distrib_launch_makes_each_node_a_host(tmp_path):
    # Two launchers (--nnodes 2), two ranks each, in two network namespaces where root can make
    # them (they share the machine's boot id), else both on loopback: the launcher's host ids
    # alone (no DISTRIB_HOST_ID) make all_reduce hierarchical.
    script = write_script(tmp_path, "check.py", LAUNCHED_CHECK)
    net = NetnsPair() if netns_skip_reason() is None else None
    env = {k: v for k, v in clean_env(DISTRIB_TIMEOUT=60).items() if k != "DISTRIB_HOST_ID"}
    addr, port = (net.ADDRS[0] if net else "127.0.0.1"), free_port_pair()
    flags = ("--nnodes", 2, "--nproc", PER_HOST, "--master-addr", addr, "--master-port", port, "--rdzv-timeout", 60)
    launchers = []
    try:
        for node in (1, 0):
            args = (*flags, "--node-rank", node, script, ROOT)
            launchers.append(Launcher(*args, env=env, prefix=net.prefix(node) if net else ()))
        finished = [launcher.finish(timeout=150) for launcher in launchers]
    finally:
        for launcher in launchers:
            launcher.kill()
        leftovers = net.close() if net else []
    assert [code for code, _, _ in finished] == [0, 0], "\n".join(err for _, _, err in finished)
    lines = [line.split("VERDICT ", 1)[1] for _, out, _ in finished for line in out.splitlines() if "VERDICT " in line]
    verdicts = sorted((json.loads(line) for line in lines), key=lambda v: v["rank"])
    assert [v["rank"] for v in verdicts] == list(range(WORLD))
    _assert_hierarchical_on_two_hosts(verdicts)
    assert leftovers == []


@needs_mpi
@pytest.mark.slow  # ~8 s: four ranks under mpiexec
@pytest.mark.timeout(180)
def test_mpi_nodes_make_the_hosts_under_mpiexec():
    # Hydra's fork launcher with two host names runs both "hosts" here, but MPI sees two nodes
    # (MPI_Comm_split_type SHARED): the zmq backend, through env:// under mpiexec, follows them.
    with tempfile.TemporaryDirectory() as out:
        flags = ("-hosts", "h0,h1", "-ppn", str(PER_HOST))
        run = run_mpi("hierarchical_mpi_hosts", WORLD, out, flags=flags, timeout=120)
    assert run.returncode == 0, f"{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    assert run.leftovers == []
    verdicts = [run.result(r) for r in range(WORLD)]
    assert all("/mpi-node" in v["host"] for v in verdicts), verdicts
    _assert_hierarchical_on_two_hosts(verdicts)


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
