"""``distrib.multiprocessing.spawn`` / ``start_processes``: N processes that fail as one.

A failure in one process stops the others (SIGTERM, then SIGKILL after the grace period), and the
parent raises ``ProcessRaisedException`` with the child's traceback or ``ProcessExitedException``
with the exit code or the signal's name.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time

import pytest

import distrib.multiprocessing as mp
from tests.helpers import wait_until


def _write_rank(rank, directory):
    with open(os.path.join(directory, f"rank{rank}"), "w") as f:
        f.write(str(os.getpid()))


def _raise_on_rank_1(rank):
    if rank == 1:
        raise ValueError("rank one is unhappy")


def _exit_with_3(rank):
    sys.exit(3)


def _kill_self(rank):
    faulthandler.disable()  # pytest's fault handler would print a dump first
    os.kill(os.getpid(), signal.SIGSEGV)


def _fail_fast_or_block(rank, directory, ignore_sigterm):
    if rank == 0:  # fail once rank 1 is blocking with its SIGTERM disposition in place
        wait_until(lambda: os.path.exists(os.path.join(directory, "rank1")), timeout=30)
        raise RuntimeError("rank zero fails")
    if ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _write_rank(rank, directory)
    signal.pause()  # blocks until a signal stops it


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_spawn_runs_fn_with_the_rank_and_args(tmp_path, start_method):
    assert mp.spawn(_write_rank, args=(str(tmp_path),), nprocs=2, start_method=start_method) is None
    assert sorted(os.listdir(tmp_path)) == ["rank0", "rank1"]


def test_a_raising_process_gives_its_traceback():
    with pytest.raises(mp.ProcessRaisedException, match=r"(?s)-- Process 1 terminated with the following "
                                                        r"error:\nTraceback.*ValueError: rank one is unhappy") as info:
        mp.spawn(_raise_on_rank_1, nprocs=2, start_method="fork")
    assert info.value.error_index == 1 and info.value.pid > 0


@pytest.mark.parametrize("fn, message, exit_code, signal_name", [
    (_exit_with_3, "process 0 terminated with exit code 3", 3, None),
    (_kill_self, "process 0 terminated with signal SIGSEGV", -signal.SIGSEGV, "SIGSEGV"),
])
def test_an_exiting_process_gives_its_exit_code_or_signal(fn, message, exit_code, signal_name):
    with pytest.raises(mp.ProcessExitedException, match=f"^{message}$") as info:
        mp.start_processes(fn, nprocs=1, start_method="fork")
    assert (info.value.error_index, info.value.exit_code, info.value.signal_name) == (0, exit_code, signal_name)


@pytest.mark.parametrize("ignore_sigterm, grace_period, expected_signal", [
    (False, 30.0, -signal.SIGTERM),  # stops at SIGTERM, long before the grace period ends
    (True, 0.5, -signal.SIGKILL),  # ignores SIGTERM: killed after the grace period
])
def test_the_first_failure_stops_the_others(tmp_path, ignore_sigterm, grace_period, expected_signal):
    context = mp.start_processes(_fail_fast_or_block, args=(str(tmp_path), ignore_sigterm), nprocs=2,
                                 join=False, start_method="fork")
    assert len(context.pids()) == 2
    deadline = time.monotonic() + 60
    with pytest.raises(mp.ProcessRaisedException, match="rank zero fails"):
        while not context.join(timeout=1, grace_period=grace_period):
            assert time.monotonic() < deadline, "spawn did not report the failure"
    assert context.processes[1].exitcode == expected_signal
    assert all(not p.is_alive() for p in context.processes)


def test_join_with_a_timeout_returns_false_while_running_then_true(tmp_path):
    context = mp.start_processes(_write_rank, args=(str(tmp_path),), nprocs=2, join=False, start_method="fork")
    deadline = time.monotonic() + 60
    while not context.join(timeout=0.5):
        assert time.monotonic() < deadline
    assert context.join() is True
    assert [p.exitcode for p in context.processes] == [0, 0]


def test_exceptions_survive_pickling():
    import pickle

    raised = pickle.loads(pickle.dumps(mp.ProcessRaisedException("boom", 2, 123)))
    exited = pickle.loads(pickle.dumps(mp.ProcessExitedException("gone", 1, 7, -9, "SIGKILL")))
    assert (str(raised), raised.error_index, raised.pid) == ("boom", 2, 123)
    assert (exited.exit_code, exited.signal_name, exited.error_index) == (-9, "SIGKILL", 1)
