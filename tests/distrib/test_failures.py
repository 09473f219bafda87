"""Failures: a rank that skips a collective or dies makes the others fail in time, named.

Rank 1 either blocks (reading stdin) instead of calling the collective, or exits. The
other rank must raise a DistBackendError naming the op, its sequence number and rank 1,
within its timeout; the harness' deadline (much longer) catches hangs.
"""

from __future__ import annotations

import pytest

from tests.distrib._harness import TRANSPORTS, finish_ranks, shm_entries, start_ranks


def _wait_ready(proc) -> None:
    line = proc.stdout.readline()  # bounded: rank 1 prints READY or exits (EOF)
    assert line.strip() == "READY", f"rank 1 did not get ready: {line!r}"


@pytest.mark.parametrize("transport", list(TRANSPORTS))
@pytest.mark.parametrize(("op", "seq"), [("all_reduce", 2), ("broadcast", 2), ("async", 2)])
def test_rank_that_never_calls_the_collective_is_named(transport, op, seq):
    before = shm_entries()
    procs = start_ranks("skip_collective", 2, TRANSPORTS[transport], args=(op, "2"), stdin=True)
    _wait_ready(procs[1])
    rank0, _ = finish_ranks(procs, timeout=30, kill_after=(1,))
    error = rank0.result["error"]
    assert error is not None, "rank 0 did not fail"
    assert error["type"] == "DistBackendError" and error["is_runtime_error"]
    name = "all_reduce" if op == "async" else op
    assert f"{name} (op seq {seq})" in error["message"]
    assert "missing rank(s): [1]" in error["message"]
    assert "timed out after 2 s" in error["message"]
    assert shm_entries() - before == set()


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_rank_that_dies_is_named_before_the_timeout(transport):
    results = finish_ranks(start_ranks("dead_rank", 2, TRANSPORTS[transport], args=("60",)), timeout=40)
    assert results[1].returncode == 3
    error = results[0].result["error"]
    assert error is not None and error["type"] == "DistBackendError"
    assert "all_reduce (op seq 2)" in error["message"]
    assert "exited" in error["message"] and "rank 1" in error["message"]
    assert "missing rank(s): [1]" in error["message"]


def test_mixing_a_shared_comm_buffer_with_a_plain_tensor_raises_on_both_ranks():
    before = shm_entries()
    results = finish_ranks(start_ranks("comm_buffer_mismatch", 2, TRANSPORTS["zmq-shm"]), timeout=40)
    for r in results:
        error = r.result["error"]
        assert error is not None, f"rank {r.rank} did not raise"
        assert error["type"] == "DistBackendError"
    assert "reduce a different kind of tensor" in results[0].result["error"]["message"]
    assert shm_entries() - before == set()
