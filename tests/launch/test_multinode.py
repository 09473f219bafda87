"""Multi-node jobs: launchers meet through the coordinator and form one job.

Two launcher processes on loopback (``--nnodes 2 --node-rank 0/1``), and two network
namespaces joined by a veth pair that the test makes itself with ``ip netns``. Network
faults between namespaces are in ``test_network_faults.py``.
"""

from __future__ import annotations

import re
import signal
import time

import pytest

from .conftest import Launcher, NetnsPair, clean_env, kill_leftovers, netns_skip_reason, wait_all_dead, write_script

ENV_SCRIPT = """\
import os, sys
print(*(f"{n}={os.environ[n]}" for n in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
       "GROUP_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "DISTRIB_RUN_ID", "DISTRIB_AUTH_KEY",
       "DISTRIB_RESTART_COUNT")))
count = int(os.environ["DISTRIB_RESTART_COUNT"])
if os.environ["RANK"] == sys.argv[1] and count < int(sys.argv[2]):
    sys.exit(6)
"""


def _envs(text: str) -> dict[int, dict]:
    found = {}
    for line in text.splitlines():
        if "RANK=" in line:
            env = dict(pair.split("=", 1) for pair in line.split(":", 1)[1].split())
            found.setdefault(int(env["RANK"]), []).append(env)
    return found


def _pair(tmp_path, port, fail_rank=-1, fail_times=0, nproc=(1, 2), extra=(), env=None, prefixes=((), ()),
          addr="127.0.0.1", script=None):
    script = script or write_script(tmp_path, "env.py", ENV_SCRIPT)
    launchers = [Launcher("--nnodes", 2, "--node-rank", rank, "--nproc", nproc[rank], "--master-addr", addr,
                          "--master-port", port, "--kill-timeout", 5, "--rdzv-timeout", 30, *extra, script,
                          fail_rank, fail_times, env=env, prefix=prefixes[rank]) for rank in (1, 0)]
    try:
        return [launcher.finish() for launcher in launchers]
    finally:
        for launcher in launchers:
            launcher.kill()


def test_two_launchers_on_loopback_form_one_job(tmp_path, port):
    (code1, out1, err1), (code0, out0, err0) = _pair(tmp_path, port, env=clean_env(DISTRIB_AUTH_KEY="s3cret"))
    assert (code0, code1) == (0, 0), err0 + err1
    envs0, envs1 = _envs(out0), _envs(out1)
    assert sorted(envs0) == [0] and sorted(envs1) == [1, 2]
    everyone = sorted((e[0] for e in (*envs0.values(), *envs1.values())), key=lambda e: e["RANK"])
    assert {e["WORLD_SIZE"] for e in everyone} == {"3"}
    assert {e["GROUP_WORLD_SIZE"] for e in everyone} == {"2"}
    assert [(e["RANK"], e["LOCAL_RANK"], e["GROUP_RANK"], e["LOCAL_WORLD_SIZE"]) for e in everyone] == \
        [("0", "0", "0", "1"), ("1", "0", "1", "2"), ("2", "1", "1", "2")]
    assert {(e["MASTER_ADDR"], e["MASTER_PORT"], e["DISTRIB_AUTH_KEY"]) for e in everyone} == \
        {("127.0.0.1", str(port), "s3cret")}
    assert len({e["DISTRIB_RUN_ID"] for e in everyone}) == 1


def test_without_a_key_node0_hands_out_a_fresh_one(tmp_path, port):
    (code1, out1, _), (code0, out0, err0) = _pair(tmp_path, port)
    assert (code0, code1) == (0, 0)
    keys = {e[0]["DISTRIB_AUTH_KEY"] for e in (*_envs(out0).values(), *_envs(out1).values())}
    assert len(keys) == 1 and re.fullmatch(r"[0-9a-f]{64}", keys.pop())
    assert "DISTRIB_AUTH_KEY is not set" in err0


def test_a_failure_on_one_node_restarts_every_node(tmp_path, port):
    (code1, out1, _), (code0, out0, err0) = _pair(tmp_path, port, fail_rank=2, fail_times=1,
                                                  extra=("--max-restarts", 1))
    assert (code0, code1) == (0, 0), err0
    rank2 = [e["DISTRIB_RESTART_COUNT"] for e in _envs(out1)[2]]
    assert rank2 == ["0", "1"]
    assert _envs(out0)[0][-1]["DISTRIB_RESTART_COUNT"] == "1"


def test_exhausted_restarts_fail_every_node_with_the_root_cause(tmp_path, port):
    (code1, _, err1), (code0, _, err0) = _pair(tmp_path, port, fail_rank=1, fail_times=9,
                                               extra=("--max-restarts", 1))
    assert (code0, code1) == (6, 6)
    for err in (err0, err1):
        root = err[err.index("Root Cause"):err.index("Other Failures")]
        assert re.search(r"rank       : 1 \(local_rank: 0\)", root) and "exitcode   : 6" in root


def test_a_launcher_with_another_key_is_refused(tmp_path, port):
    script = write_script(tmp_path, "env.py", ENV_SCRIPT)
    common = ("--nnodes", 2, "--master-port", port, "--rdzv-timeout", 3)
    node0 = Launcher(*common, "--node-rank", 0, script, -1, 0, env=clean_env(DISTRIB_AUTH_KEY="right"))
    node1 = Launcher(*common, "--node-rank", 1, script, -1, 0, env=clean_env(DISTRIB_AUTH_KEY="wrong"))
    try:
        code1, _, err1 = node1.finish()
        code0, _, err0 = node0.finish()
    finally:
        node0.kill()
        node1.kill()
    assert code1 == 1 and "DISTRIB_AUTH_KEY must be the same on every node" in err1
    assert code0 == 1 and "rendezvous timed out after 3 s: 1 of 2 node(s) joined" in err0


BLOCK_SCRIPT = """\
import os, signal
print("pid", os.getpid(), flush=True)
signal.pause()
"""


def _lose_a_node(tmp_path, port, victim: int, sig: int, *flags) -> tuple[int, str, float, list[int]]:
    """Two launchers of blocking workers; ``sig`` to the ``victim``'s launcher once every worker
    runs. Returns the other launcher's exit code, stderr and time to exit, and the surviving
    workers (after the victim is killed: its workers go with it)."""
    script = write_script(tmp_path, "block.py", BLOCK_SCRIPT)
    launchers = {rank: Launcher("--nnodes", 2, "--node-rank", rank, "--master-port", port, "--heartbeat-interval",
                                0.5, "--kill-timeout", 5, *flags, script) for rank in (1, 0)}
    pids = []
    try:
        for launcher in launchers.values():
            pids += [int(p) for p in re.findall(r"pid (\d+)", launcher.wait_for(lambda t: "pid " in t))]
        launchers[victim].proc.send_signal(sig)
        start = time.monotonic()
        code, _, err = launchers[1 - victim].finish()
        took = time.monotonic() - start
    finally:
        for launcher in launchers.values():
            launcher.kill()  # parent-death signal and watchdog take the workers down too
        survivors = wait_all_dead(pids)
        kill_leftovers(survivors)
    return code, err, took, survivors


@pytest.mark.parametrize("victim, sig, cause", [
    (1, signal.SIGSTOP, r"lost node 1 \(.*\): no heartbeat for"),
    (0, signal.SIGSTOP, r"lost node 0 \(127.0.0.1, the coordinator\): no heartbeat for"),
    (1, signal.SIGKILL, r"lost node 1 \(.*\): its launcher closed the connection"),
    (0, signal.SIGKILL, r"lost node 0 \(127.0.0.1, the coordinator\): the rendezvous server closed the connection"),
], ids=["node1-stopped", "node0-stopped", "node1-killed", "node0-killed"])
def test_a_silent_or_dead_launcher_ends_the_job_on_the_other_node(tmp_path, port, victim, sig, cause):
    """A stopped launcher falls silent (lost after 3 heartbeat intervals), a killed one closes its
    connection (lost at once): either way the other node stops its workers and names the loss."""
    code, err, took, survivors = _lose_a_node(tmp_path, port, victim, sig)
    assert code == 1, err
    assert re.search(f"the job failed: {cause}", err), err
    assert took < 10.0  # 1.5 s of silence (or none), then a SIGTERMed worker; slack for a loaded machine
    assert survivors == []


@pytest.mark.parametrize("victim, notice, cause", [
    (1, r"restarting the worker group \(1/1\): lost node 1",
     r"lost node 1 \(.*\): its launcher closed the connection; then rendezvous timed out after 3 s: "
     r"1 of 2 node\(s\) joined"),
    (0, r"joining again \(restart 1/1\)",
     r"lost node 0 \(127.0.0.1, the coordinator\): the rendezvous server closed the connection; then "
     r"rendezvous failed: could not reach the rendezvous server"),
], ids=["node1-gone", "node0-gone"])
def test_with_restarts_left_a_lost_node_is_awaited_for_the_rendezvous_timeout(tmp_path, port, victim, notice,
                                                                              cause):
    code, err, _, survivors = _lose_a_node(tmp_path, port, victim, signal.SIGKILL, "--max-restarts", 1,
                                           "--rdzv-timeout", 3)
    assert code == 1, err
    assert re.search(notice, err), err
    assert re.search(f"the job failed: {cause}", err), err
    assert survivors == []


ALL_REDUCE_SCRIPT = ENV_SCRIPT + """\
import distrib as dist, tensor
dist.init_process_group("zmq")
t = tensor.full((3,), float(dist.get_rank() + 1))
dist.all_reduce(t)
print("SUM", t.tolist())
dist.destroy_process_group()
"""


@pytest.mark.slow
@pytest.mark.skipif(netns_skip_reason() is not None, reason=str(netns_skip_reason()))
@pytest.mark.parametrize("shm, path", [("1", "TCP, all_reduce hierarchical (shared memory on each host)"),
                                       ("0", "TCP")])
def test_two_network_namespaces_joined_by_a_veth_pair(tmp_path, port, shm, path):
    """Two namespaces share the machine's boot id, but each launcher makes its node a host
    (DISTRIB_HOST_ID), so the zmq backend goes over TCP between them, shared memory on each host
    unless DISTRIB_ZMQ_SHM=0; DISTRIB_DEBUG=INFO says which path each rank took."""
    script = write_script(tmp_path, "all_reduce.py", ALL_REDUCE_SCRIPT)
    net = NetnsPair()
    try:
        prefixes = [net.prefix(0), net.prefix(1)]
        env = clean_env(DISTRIB_AUTH_KEY="netns-key", DISTRIB_ZMQ_SHM=shm, DISTRIB_DEBUG="INFO", DISTRIB_TIMEOUT=30)
        (code1, out1, err1), (code0, out0, err0) = _pair(tmp_path, port, prefixes=prefixes, addr=net.ADDRS[0],
                                                         env=env, script=script)
    finally:
        leftovers = net.close()
    assert (code0, code1) == (0, 0), err0 + err1
    everyone = [e[0] for e in (*_envs(out0).values(), *_envs(out1).values())]
    assert sorted(e["RANK"] for e in everyone) == ["0", "1", "2"]
    assert {(e["WORLD_SIZE"], e["MASTER_ADDR"]) for e in everyone} == {("3", net.ADDRS[0])}
    assert (out0 + out1).count("SUM [6.0, 6.0, 6.0]") == 3
    chosen = re.findall(r"rank \d/3: collectives over (.+)$", err0 + err1, re.MULTILINE)
    assert chosen == [path] * 3, err0 + err1
    assert leftovers == []
