"""Network faults between two nodes: a lost node ends (or re-forms) the job on every node, in bounded time.

Two network namespaces are two hosts on one machine (:class:`NetnsPair`). One
``distrib-launch --nnodes 2 --nproc 1`` runs in each and trains ``examples/ddp_train.py``
with DISTRIB_ZMQ_SHM=0, so the ranks reduce over TCP across the link (two namespaces
share the boot id, and would otherwise reduce through /dev/shm, which no cut touches).
Both nodes write to one ``--out-dir``, as nodes share a filesystem for checkpoints.

1. The link is cut mid-training: every launcher exits non-zero within DISTRIB_TIMEOUT + 2
   heartbeat intervals and names the cause.
2. The same with ``--max-restarts 1``, and the link back within ``--rdzv-timeout``: the
   job re-forms, resumes from its checkpoint and ends with an uninterrupted run's parameters.
3. Node 0's namespace (the coordinator's) is cut off: the other node exits within the bound.
4. 50 ms latency and 5% loss each way (made in user space, ``_lossy_link.py``: this kernel
   has no netem): training completes at the default timeouts and equals the unfaulted run.
5. The mpi backend across the two namespaces (MPICH's hydra starting one rank in each
   through ``ip netns exec``), over TCP: it equals the unfaulted run.

After each test nothing may run in the namespaces and no segment may be left in /dev/shm.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tensor
from launch.procs import tree_of
from tests.distrib._mpi_harness import MPIEXEC, needs_mpi
from tests.helpers import wait_until

from ._lossy_link import LossyLink
from .conftest import ROOT, NetnsPair, clean_env, launch_cmd, netns_skip_reason

pytestmark = pytest.mark.skipif(netns_skip_reason() is not None, reason=str(netns_skip_reason()))

EXAMPLE = ROOT / "examples" / "ddp_train.py"
HEARTBEAT = 1.0  # --heartbeat-interval of the partition tests: a node is lost after 3 s of silence
TIMEOUT = 8  # their DISTRIB_TIMEOUT
BOUND = TIMEOUT + 2 * HEARTBEAT  # seconds from a cut to every launcher's exit
LONG = ("--epochs", "200", "--workers", "0", "--checkpoint-every", "20")  # cut long before the end
RESUMABLE = ("--epochs", "6", "--workers", "0", "--checkpoint-every", "20")
SMALL = ("--epochs", "1", "--batch-size", "128", "--workers", "0", "--checkpoint-every", "5")


ZMQ_SEGMENT = r"distrib-[0-9a-f]+-\d+"  # the zmq backend's shared memory (distrib/backends/_shm.py)


@contextlib.contextmanager
def two_hosts(joined: bool = True):
    """A NetnsPair for the test; afterwards nothing may be left running in it, nor a new zmq
    segment in /dev/shm (only that kind: other suites may be running meanwhile)."""
    def present() -> set[str]:
        return {name for name in os.listdir("/dev/shm") if re.fullmatch(ZMQ_SEGMENT, name)}

    before = present()
    net = NetnsPair(joined)
    try:
        yield net
    finally:
        leftovers = net.close()
    assert leftovers == [], f"processes left running in the namespaces: {leftovers}"
    wait_until(lambda: not present() - before, timeout=2.0)  # unlinked a moment after the job ends
    assert not present() - before, f"segments left in /dev/shm: {present() - before}"


class Proc:
    """A process whose output goes to files (a long training fills a pipe), and when it ended."""

    def __init__(self, argv, env: dict, log: Path) -> None:
        self.paths = (log.with_suffix(".out"), log.with_suffix(".err"))
        with open(self.paths[0], "wb") as out, open(self.paths[1], "wb") as err:
            self.proc = subprocess.Popen([str(a) for a in argv], cwd=ROOT, env=env, stdout=out, stderr=err)
        self.ended: float | None = None

    def poll(self) -> int | None:
        """The exit code, or None while running; notes when it ended."""
        code = self.proc.poll()
        if code is not None and self.ended is None:
            self.ended = time.monotonic()
        return code

    def text(self) -> str:
        """Its stdout and stderr so far."""
        return "".join(p.read_text(errors="replace") for p in self.paths)

    def kill(self) -> None:
        """SIGKILL it if it still runs, and reap it."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


def mapped_segments(root: int) -> set[str]:
    """The /dev/shm files that process ``root`` and its descendants have mapped now."""
    found = set()
    for pid in tree_of({root}):
        try:
            found |= set(re.findall(r"/dev/shm/(\S+)", Path(f"/proc/{pid}/maps").read_text()))
        except OSError:
            continue
    return found


def finish(procs: list[Proc], timeout: float, each=lambda: None) -> list[int]:
    """Wait for every process (bounded), calling ``each()`` at every poll; their exit codes.
    Kills them all on timeout."""
    def done() -> bool:
        each()
        return all(p.poll() is not None for p in procs)

    try:
        ended = wait_until(done, timeout)
        assert ended, f"still running after {timeout:.0f} s:\n" + "\n---\n".join(p.text()[-3000:] for p in procs)
    finally:
        for p in procs:
            p.kill()
    return [p.proc.returncode for p in procs]


def start_job(net: NetnsPair, tmp_path: Path, train: tuple, *flags, heartbeat=HEARTBEAT, **env) -> list[Proc]:
    """Node 1's launcher, then node 0's, each in its namespace; returns [node 0, node 1]."""
    env = clean_env(DISTRIB_ZMQ_SHM=0, DISTRIB_AUTH_KEY="faults", OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, **env)
    if heartbeat is not None:
        flags = ("--heartbeat-interval", heartbeat, *flags)
    nodes = {rank: Proc([*net.prefix(rank), *launch_cmd(
        "--nnodes", 2, "--node-rank", rank, "--nproc", 1, "--master-addr", net.ADDRS[0], "--kill-timeout", 5,
        *flags, EXAMPLE, *train, "--out-dir", tmp_path / "out")], env, tmp_path / f"node{rank}") for rank in (1, 0)}
    return [nodes[0], nodes[1]]


def wait_for_checkpoint(tmp_path: Path, nodes: list[Proc]) -> None:
    """Until the first checkpoint is written: the job is mid-training."""
    first = tmp_path / "out" / "step_000020.ckpt"
    assert wait_until(lambda: first.exists() or any(n.poll() is not None for n in nodes), 60) and first.exists(), \
        "\n---\n".join(n.text()[-3000:] for n in nodes)


def final_model(out_dir: Path) -> dict[str, np.ndarray]:
    """The parameters ``ddp_train.py`` saved at the end."""
    return {k: v.numpy() for k, v in tensor.load(str(out_dir / "final_model.pt")).items()}


def assert_same_model(actual: dict, expected: dict) -> None:
    """Bit for bit: the same parameters."""
    assert actual.keys() == expected.keys()
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """``reference(train)``: the parameters of an unfaulted two-namespace run (each computed once)."""
    cache: dict[tuple, dict] = {}

    def model(train: tuple) -> dict:
        if train not in cache:
            tmp = tmp_path_factory.mktemp("reference")
            with two_hosts() as net:
                assert finish(start_job(net, tmp, train), 120) == [0, 0]
            cache[train] = final_model(tmp / "out")
        return cache[train]

    return model


def _assert_partition_surfaced(nodes: list[Proc], codes: list[int], cut: float) -> None:
    for rank, (node, code) in enumerate(zip(nodes, codes)):
        text = node.text()
        assert code != 0, text[-3000:]
        assert node.ended - cut <= BOUND, f"node {rank} took {node.ended - cut:.1f} s (bound {BOUND} s)"
        print(f"REPORT: node {rank} exited {node.ended - cut:.2f} s after the cut")
        other = 1 - rank
        assert f"the job failed: lost node {other} " in text, text[-3000:]


@pytest.mark.timeout(120)
def test_a_link_cut_mid_training_ends_every_launcher_with_the_cause(tmp_path):
    with two_hosts() as net:
        nodes = start_job(net, tmp_path, LONG, DISTRIB_TIMEOUT=TIMEOUT)
        wait_for_checkpoint(tmp_path, nodes)
        net.set_link(1, "down")
        cut = time.monotonic()
        codes = finish(nodes, BOUND + 30)
    _assert_partition_surfaced(nodes, codes, cut)
    assert "no heartbeat for" in nodes[0].text()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_link_back_within_the_rendezvous_timeout_re_forms_the_job(tmp_path, reference):
    expected = reference(RESUMABLE)
    with two_hosts() as net:
        nodes = start_job(net, tmp_path, RESUMABLE, "--max-restarts", 1, "--rdzv-timeout", 60,
                          DISTRIB_TIMEOUT=TIMEOUT)
        wait_for_checkpoint(tmp_path, nodes)
        net.set_link(1, "down")
        # node 0's reason may be its rank's DistBackendError, if that came before the heartbeats' verdict
        both_noticed = wait_until(lambda: "restarting the worker group (1/1): " in nodes[0].text()
                                  and "joining again (restart 1/1)" in nodes[1].text(), BOUND + 10)
        net.set_link(1, "up")
        codes = finish(nodes, 120)
    assert both_noticed, "\n---\n".join(n.text()[-3000:] for n in nodes)
    assert codes == [0, 0], "\n---\n".join(n.text()[-3000:] for n in nodes)
    assert "resumed from" in nodes[0].text() and "(restart 1)" in nodes[0].text()
    assert_same_model(final_model(tmp_path / "out"), expected)


@pytest.mark.timeout(120)
def test_the_coordinators_namespace_cut_off_ends_the_other_node(tmp_path):
    with two_hosts() as net:
        nodes = start_job(net, tmp_path, LONG, DISTRIB_TIMEOUT=TIMEOUT)
        wait_for_checkpoint(tmp_path, nodes)
        net.set_link(0, "down")
        cut = time.monotonic()
        codes = finish(nodes, BOUND + 30)
    _assert_partition_surfaced(nodes, codes, cut)
    assert "(10.231.7.1, the coordinator): no heartbeat for" in nodes[1].text()


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_latency_and_loss_slow_training_down_but_change_nothing(tmp_path, reference):
    expected = reference(SMALL)
    with two_hosts(joined=False) as net:
        link = LossyLink(net.ns, net.devs, net.ADDRS, delay=0.05, loss=0.05)
        try:
            codes = finish(start_job(net, tmp_path, SMALL, heartbeat=None), 150)  # the default timeouts
        finally:
            link.close()
    assert codes == [0, 0]
    assert link.dropped > 0 and link.sent > 0
    assert_same_model(final_model(tmp_path / "out"), expected)


LAUNCHER_EXEC = """\
#!/bin/sh
# hydra's ssh launcher calls: <this> [ssh options] <host> <command line>; the host names a namespace
while [ "${{1#-}}" != "$1" ]; do shift; done
case "$1" in {addr1}) ns={ns1};; *) echo "unknown host $1" >&2; exit 1;; esac
shift
exec ip netns exec "$ns" sh -c "$*"
"""


@needs_mpi
@pytest.mark.timeout(180)
def test_the_mpi_backend_across_two_namespaces_over_tcp(tmp_path, reference):
    expected = reference(SMALL)
    seen: set[str] = set()  # MPICH's segments, which may not outlive the job
    with two_hosts() as net:
        launcher_exec = tmp_path / "netns-exec"
        launcher_exec.write_text(LAUNCHER_EXEC.format(addr1=net.ADDRS[1], ns1=net.ns[1]))
        launcher_exec.chmod(0o755)
        env = clean_env(OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1)
        argv = [*net.prefix(0), MPIEXEC, "-launcher", "ssh", "-launcher-exec", launcher_exec,
                "-localhost", net.ADDRS[0], "-hosts", ",".join(net.ADDRS), "-n", 2, "-ppn", 1,
                "-genv", "UCX_TLS", "self,tcp",  # UCX would take shared memory between the namespaces too
                "-genv", "MASTER_ADDR", net.ADDRS[0], "-genv", "MASTER_PORT", 29500,
                sys.executable, EXAMPLE, "--backend", "mpi", *SMALL, "--out-dir", tmp_path / "out"]
        job = Proc(argv, env, tmp_path / "mpiexec")
        codes = finish([job], 120, each=lambda: seen.update(mapped_segments(job.proc.pid)))
    assert codes == [0], job.text()[-5000:]
    print(f"REPORT: mpi job mapped {sorted(seen)}")
    assert wait_until(lambda: not seen & set(os.listdir("/dev/shm")), 2.0), seen & set(os.listdir("/dev/shm"))
    assert_same_model(final_model(tmp_path / "out"), expected)
