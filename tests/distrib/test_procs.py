"""``distrib/_procs.py``: whether a process still runs (Note [Zombies are dead]), and the host id."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from distrib import _procs
from distrib.multiprocessing import _handles

pytestmark = pytest.mark.timeout(60)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()


def test_a_running_process_is_alive():
    assert _procs.alive(os.getpid())


def test_a_zombie_is_dead():
    """An exited child we have not waited for: its pid exists (kill(pid, 0) succeeds) but it will
    never answer, so the backends and the receiver of a shared tensor must count it as dead."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while _state(child.pid) != "Z":
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)
        os.kill(child.pid, 0)  # the pid still exists...
        assert not _procs.alive(child.pid)  # ...but the process is dead
    finally:
        child.wait()
    assert not _procs.alive(child.pid)  # reaped: gone


def test_the_receiver_of_a_shared_tensor_uses_the_same_check():
    assert _handles.alive is _procs.alive


def test_host_id_is_stable_and_names_this_host():
    assert _procs.host_id() == _procs.host_id()
    assert _procs.host_id().startswith(os.uname().nodename + "/")
