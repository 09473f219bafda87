"""``DISTRIB_DEBUG=DETAIL``: disagreeing collectives raise on every rank instead of hanging."""

from __future__ import annotations

import pytest

from tests.distrib._harness import run_ranks
from tests.distrib._mpi_harness import needs_mpi, run_mpi

DEBUG = {"DISTRIB_DEBUG": "DETAIL", "DISTRIB_ZMQ_SHM": "1"}


@pytest.mark.parametrize(("kind", "rank0_says", "rank1_says"), [
    ("shape", "all_reduce(dtype=float32, op=SUM, shape=[3])", "all_reduce(dtype=float32, op=SUM, shape=[4])"),
    ("dtype", "all_reduce(dtype=float32, op=SUM, shape=[3])", "all_reduce(dtype=float64, op=SUM, shape=[3])"),
    ("op", "all_reduce(dtype=float32, op=SUM, shape=[3])", "broadcast(dtype=float32, shape=[3], src=0)"),
])
def test_mismatch_raises_on_every_rank_naming_both_calls(kind, rank0_says, rank1_says):
    results = run_ranks("debug_mismatch", 2, DEBUG, args=(kind,), timeout=60)
    for r in results:
        error = r.result["error"]
        assert error is not None, f"rank {r.rank} did not raise"
        assert error["type"] == "DistError"
        assert "collective mismatch at op seq 2" in error["message"]
        assert f"rank 0: {rank0_says}" in error["message"]
        assert f"rank 1: {rank1_says}" in error["message"]


def test_agreeing_calls_pass_and_a_skipped_call_names_the_missing_rank():
    results = run_ranks("debug_mismatch", 2, {**DEBUG}, args=("skip",), timeout=60)
    error = results[0].result["error"]
    # rank 1 called barrier instead: the op names differ, so this is a mismatch, reported at once
    assert error is not None and "collective mismatch at op seq 2" in error["message"]
    assert "rank 1: barrier()" in error["message"]


@needs_mpi
def test_the_mpi_hot_path_yields_to_the_debug_checks(tmp_path):
    """A small all_reduce on ``mpi`` is normally MPI's blocking call, run inline (Note [Hot
    all_reduce]); the debug mode must still compare it across ranks first."""
    run = run_mpi("debug_mismatch", 2, tmp_path, args=("shape", "mpi"), env={"DISTRIB_DEBUG": "DETAIL"}, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    for r in range(2):
        error = run.result(r)["error"]
        assert error is not None and "collective mismatch at op seq 2" in error["message"]
        assert "rank 1: all_reduce(dtype=float32, op=SUM, shape=[4])" in error["message"]
