"""Stopping: signals to the launcher are forwarded, escalate to SIGKILL, and leave no process behind.

Each worker starts grandchildren (one in its process group, like a DataLoader worker, and
one that calls setsid), prints all pids, and blocks. After the launcher exits, none of them
may be alive. Every wait has a deadline.
"""

from __future__ import annotations

import glob
import os
import re
import select
import signal
import time

import pytest

from .conftest import Launcher, kill_leftovers, wait_all_dead, write_script

TREE_SCRIPT = """\
import os, signal, subprocess, sys
mode = sys.argv[1]
if mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
kids = [subprocess.Popen(["sleep", "120"]), subprocess.Popen(["setsid", "sleep", "121"])]
print("pids", os.getpid(), *(k.pid for k in kids), flush=True)
if mode == "fail":  # rank 1 fails once rank 0 has printed its pids (opening a FIFO blocks until both do)
    open(sys.argv[2], "w" if os.environ["RANK"] == "0" else "r").close()
    if os.environ["RANK"] == "1":
        sys.exit(4)
signal.pause()  # until the launcher's signal stops this worker
"""


def _start(tmp_path, mode: str, *flags, nproc: int = 2) -> tuple[Launcher, list[int]]:
    script = write_script(tmp_path, "tree.py", TREE_SCRIPT)
    fifo = tmp_path / "printed"
    os.mkfifo(fifo)
    launcher = Launcher("--nproc", nproc, *flags, script, mode, fifo)
    text = launcher.wait_for(lambda t: len(re.findall(r"pids( \d+)+\n", t)) == nproc)
    pids = [int(p) for line in re.findall(r"pids((?: \d+)+)\n", text) for p in line.split()]
    return launcher, pids


def _assert_all_gone(launcher, pids):
    survivors = wait_all_dead(pids)
    kill_leftovers(survivors)
    launcher.kill()
    assert survivors == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signals_are_forwarded_and_nothing_survives(tmp_path, sig):
    launcher, pids = _start(tmp_path, "plain")
    try:
        launcher.proc.send_signal(sig)
        code, _, err = launcher.finish()
        assert code == 128 + sig
        assert f"received {signal.Signals(sig).name}: forwarding it to the workers" in err
    finally:
        _assert_all_gone(launcher, pids)


def test_sigterm_escalates_to_sigkill_after_the_kill_timeout(tmp_path):
    launcher, pids = _start(tmp_path, "ignore-term", "--kill-timeout", "0.5")
    try:
        launcher.proc.send_signal(signal.SIGTERM)
        code, _, err = launcher.finish()
        assert code == 128 + signal.SIGTERM
        assert re.search(r"process\(es\) still alive 0.5 s after SIGTERM; sending SIGKILL", err)
    finally:
        _assert_all_gone(launcher, pids)


def test_a_second_signal_escalates_at_once(tmp_path):
    launcher, pids = _start(tmp_path, "ignore-term", "--kill-timeout", "60")
    try:
        launcher.proc.send_signal(signal.SIGTERM)
        launcher.wait_for(lambda t: "received SIGTERM" in t, stream="stderr")
        launcher.proc.send_signal(signal.SIGINT)
        code, _, err = launcher.finish(timeout=30)  # far less than the 60 s kill timeout
        assert code == 128 + signal.SIGTERM
        assert "sending SIGKILL" in err
    finally:
        _assert_all_gone(launcher, pids)


def test_worker_failure_stops_the_other_workers_and_their_children(tmp_path):
    launcher, pids = _start(tmp_path, "fail", "--kill-timeout", "5")
    try:
        code, _, err = launcher.finish()
        assert code == 4
        assert re.search(r"rank       : 1 \(local_rank: 1\)", err)
    finally:
        _assert_all_gone(launcher, pids)


def test_sigkilled_launcher_takes_workers_and_their_process_groups_down(tmp_path):
    before = set(glob.glob("/tmp/distrib-launch-*"))
    launcher, pids = _start(tmp_path, "plain")
    workers = pids[0::3]
    group_children = pids[1::3]  # the setsid'd grandchildren (pids[2::3]) escape once their parent is gone
    try:
        launcher.proc.kill()
        launcher.proc.wait(30)
        assert wait_all_dead(workers + group_children) == []
        # the watchdog also removes the job's temporary directory, right after its kill sweeps
        deadline = time.monotonic() + 10
        while set(glob.glob("/tmp/distrib-launch-*")) - before and time.monotonic() < deadline:
            select.select([], [], [], 0.02)
        assert set(glob.glob("/tmp/distrib-launch-*")) - before == set()
    finally:
        kill_leftovers(pids)
        launcher.kill()


def test_successful_job_leaves_no_stragglers(tmp_path):
    script = write_script(tmp_path, "bg.py", """\
        import subprocess
        p = subprocess.Popen(["sleep", "120"])
        print("child", p.pid, flush=True)
    """)
    launcher = Launcher("--nproc", "1", "--kill-timeout", "5", script)
    code, out, _ = launcher.finish()
    child = int(re.search(r"child (\d+)", out).group(1))
    survivors = wait_all_dead([child])
    kill_leftovers(survivors)
    assert (code, survivors) == (0, [])


def test_workers_run_in_their_own_sessions(tmp_path):
    script = write_script(tmp_path, "sid.py", "import os\nprint('sid', os.getsid(0) == os.getpid())\n")
    launcher = Launcher("--nproc", "2", script)
    code, out, _ = launcher.finish()
    assert (code, sorted(out.splitlines())) == (0, ["[rank0]:sid True", "[rank1]:sid True"])
    assert os.getsid(0) != launcher.proc.pid
