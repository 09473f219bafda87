"""Failures on the ``mpi`` backend, each under ``mpiexec``: nothing hangs, errors name the culprit.

A rank that skips a collective is named by the others within the timeout; a rank that dies
is named at once (with ``-disable-auto-cleanup``; by default mpiexec ends the job itself);
an uncaught exception aborts the job with the traceback shown. The harness' deadline is
shorter than the collectives' timeout wherever only the failure handling can end the job.
Every job must leave no process behind. Where the library's own message ends an aborted
job, it is read through mpiexec, as a user sees it (Note [A job that ends in MPI_Abort] in
``_mpi_harness.py``: ``abort_job`` waits until mpiexec's proxy has read it).
"""

from __future__ import annotations

import re

import pytest

from tests.distrib._mpi_harness import needs_mpi, run_mpi

pytestmark = needs_mpi


def _run(*args, **kwargs):
    run = run_mpi(*args, **kwargs)
    assert run.leftovers == [], f"processes outlived the job: {run.leftovers}"
    return run


@pytest.mark.parametrize(("size", "skipper", "count", "env"), [
    (2, 1, 1000, {"DISTRIB_MPI_BLOCKING": "0"}),  # the small all_reduce without its blocking hot path
    (3, 2, 1000, {"DISTRIB_MPI_BLOCKING": "0"}),
    (3, 1, 100_000, {}),  # 100_000 floats: the ring all_reduce
], ids=["2-ranks", "3-ranks", "3-ranks-ring"])
def test_rank_that_never_calls_the_collective_is_named(tmp_path, size, skipper, count, env):
    run = _run("skip_collective", size, tmp_path, args=("2", skipper, count),
               env={**env, "DISTRIB_TEST_LINGER": "1"}, timeout=40)
    waiting = [r for r in range(size) if r != skipper]
    for r in waiting:
        result = run.result(r)
        error = result["error"]
        assert error is not None, f"rank {r} did not fail"
        assert error["type"] == "DistBackendError" and error["is_runtime_error"]
        assert "all_reduce (op seq 2)" in error["message"]
        assert f"missing rank(s): [{skipper}]" in error["message"]
        assert "timed out after 2 s" in error["message"]
        # the skipper's watchdog thread answers the progress query while its main thread is parked
        assert f"rank {skipper} has not called it (its last op: seq 1)" in error["message"]
        later = result["later"]
        assert later is not None and "barrier (op seq 3)" in later["message"]
        assert "unusable after an earlier failure (all_reduce (op seq 2))" in later["message"]
    # the waiting ranks cannot finalize over an abandoned op: they end the job with MPI_Abort
    assert run.returncode != 0
    assert "MPI_Abort" in run.stderr + run.stdout
    assert skipper not in run.results


@pytest.mark.parametrize(("size", "skipper"), [(2, 1), (3, 2)])
def test_blocking_all_reduce_timeout_ends_the_job_naming_the_missing_rank(tmp_path, size, skipper):
    """The small synchronous all_reduce is MPI's blocking call (Note [Blocking all_reduce]): the
    watchdog prints the op's error and aborts the job at the timeout."""
    run = _run("skip_collective", size, tmp_path, args=("2", skipper, "1000"), timeout=40, output="mpiexec")
    assert run.returncode not in (0, None)
    assert "[harness]" not in run.stderr, "the job was still running at the deadline"
    assert run.results == {}, "no rank may get past the abandoned all_reduce"
    # every waiting rank's watchdog fires; the first MPI_Abort may end the others before they print
    expected = re.compile(rf"DistBackendError: \[mpi backend, rank [0-{size - 2}]/{size}\] all_reduce \(op seq 2\) "
                          rf"failed: timed out after 2 s \(rank {skipper} has not called it \(its last op: seq 1\)\); "
                          rf"missing rank\(s\): \[{skipper}\]")
    assert expected.search(run.stderr), run.stderr[-3000:]
    assert "a blocking MPI call cannot be interrupted; calling MPI_Abort" in run.stderr


@pytest.mark.parametrize("count", ["100000", "1000"], ids=["ring", "blocking"])
def test_rank_that_dies_is_named_before_the_timeout(tmp_path, count):
    run = _run("dead_rank", 2, tmp_path, args=("60", count), timeout=30, flags=("-disable-auto-cleanup",))
    assert run.returncode != 0
    if count == "1000":  # the blocking all_reduce: the watchdog names the dead rank, then aborts
        assert "[harness]" not in run.stderr, "the job was still running at the deadline"
        assert run.results == {}
        assert ("all_reduce (op seq 2) failed: peer process(es) exited: rank 1 (pid " in run.stderr
                and "missing rank(s): [1]" in run.stderr), run.stderr[-2000:]
        return
    error = run.result(0)["error"]
    assert error is not None and error["type"] == "DistBackendError"
    assert "all_reduce (op seq 2)" in error["message"]
    assert "peer process(es) exited: rank 1" in error["message"]
    assert "missing rank(s): [1]" in error["message"]


def test_rank_that_dies_ends_the_job_under_default_mpiexec(tmp_path):
    run = _run("dead_rank", 2, tmp_path, args=("60",), timeout=30)
    assert run.returncode != 0, run.stderr[-2000:]  # 3 (the dead rank's code), or 9 if mpiexec reports the kill
    assert "[harness]" not in run.stderr  # ended by mpiexec, not by the test's deadline
    # mpiexec kills rank 0 once rank 1 has exited; on a busy machine rank 0 may see the dead peer first
    assert 1 not in run.results
    if 0 in run.results:
        assert "peer process(es) exited: rank 1" in run.results[0]["error"]["message"]


def test_uncaught_exception_aborts_the_job_with_the_traceback(tmp_path):
    run = _run("uncaught", 2, tmp_path, args=("60",), timeout=30, output="mpiexec")
    assert run.returncode not in (0, None)
    assert "[harness]" not in run.stderr, "the job was still running at the deadline"
    assert "Traceback (most recent call last)" in run.stderr
    assert "ValueError: boom from rank 1" in run.stderr
    assert "uncaught ValueError on MPI rank 1; calling MPI_Abort" in run.stderr
    assert run.results == {}, "rank 0's all_reduce must not complete"


def test_recv_timeout_is_cancelled_and_the_job_continues(tmp_path):
    run = _run("recv_timeout", 2, tmp_path, timeout=40)
    assert run.returncode == 0, run.stderr[-3000:]
    r0 = run.result(0)
    assert r0["error"]["type"] == "DistBackendError"
    assert r0["error"]["message"] == "[mpi backend, rank 0/2] recv from rank 1 (tag 5) failed: timed out after 1 s"
    assert r0["completed"] is True
    assert r0["sum"] == [1.0, 1.0] and run.result(1)["sum"] == [1.0, 1.0]


def test_p2p_size_mismatch_is_a_clear_error(tmp_path):
    run = _run("p2p_size_mismatch", 2, tmp_path, timeout=40)
    assert run.returncode == 0, run.stderr[-3000:]
    error = run.result(0)["error"]
    assert error["type"] == "DistBackendError"
    assert "recv from rank 1 (tag 0) failed" in error["message"]
    assert "received 12 bytes from rank 1 where 20 were expected" in error["message"]
