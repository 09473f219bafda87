"""Multi-node jobs: launchers meet through the rendezvous and form one job.

Two launcher processes on loopback (``--nnodes 2 --node-rank 0/1``), and two network
namespaces joined by a veth pair that the test makes itself with ``ip netns``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from .conftest import Launcher, clean_env, write_script

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
          addr="127.0.0.1"):
    script = write_script(tmp_path, "env.py", ENV_SCRIPT)
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


def _netns_skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_netns_skip_reason() is not None, reason=str(_netns_skip_reason()))
def test_two_network_namespaces_joined_by_a_veth_pair(tmp_path, port):
    tag = f"{os.getpid() % 100000}"
    ns = [f"dl{tag}a", f"dl{tag}b"]
    veth = [f"dl{tag}x", f"dl{tag}y"]
    ips = ["10.231.7.1", "10.231.7.2"]

    def ip(*args):
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    try:
        for name in ns:
            ip("netns", "add", name)
        ip("link", "add", veth[0], "type", "veth", "peer", "name", veth[1])
        for name, dev, addr in zip(ns, veth, ips):
            ip("link", "set", dev, "netns", name)
            ip("-n", name, "addr", "add", f"{addr}/24", "dev", dev)
            ip("-n", name, "link", "set", dev, "up")
            ip("-n", name, "link", "set", "lo", "up")
        prefixes = [("ip", "netns", "exec", name) for name in ns]
        (code1, out1, err1), (code0, out0, err0) = _pair(tmp_path, port, prefixes=prefixes, addr=ips[0],
                                                         env=clean_env(DISTRIB_AUTH_KEY="netns-key"))
    finally:
        for name in ns:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)
    assert (code0, code1) == (0, 0), err0 + err1
    everyone = [e[0] for e in (*_envs(out0).values(), *_envs(out1).values())]
    assert sorted(e["RANK"] for e in everyone) == ["0", "1", "2"]
    assert {(e["WORLD_SIZE"], e["MASTER_ADDR"]) for e in everyone} == {("3", ips[0])}
    assert not any(name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
                   for name in ns)
