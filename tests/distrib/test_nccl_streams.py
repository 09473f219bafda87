"""NCCL on the group's own stream (Note [NCCL streams] in distrib/backends/nccl_backend.py),
observed through the CuPy stand-in's trace of stream records, waits and NCCL launches and its
count of host synchronisations (a real CuPy counts nothing: these tests need the stand-in).

Two ranks on two emulated devices; each test is one scenario of ``_nccl_scenarios``.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.conftest import CUDA_SKIP_REASON
from tests.distrib._mpi_harness import run_without_mpiexec

pytestmark = pytest.mark.gpu


def _run(tmp_path, scenario: str) -> list:
    if CUDA_SKIP_REASON:
        pytest.skip(f"no CUDA device: {CUDA_SKIP_REASON}")
    if tensor.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs (one per nccl rank), found {tensor.cuda.device_count()}")
    state = pytest.importorskip("cupy._state", reason="the trace needs the CuPy stand-in")
    if not hasattr(state, "start_trace"):
        pytest.skip("the trace needs the CuPy stand-in (a real CuPy records nothing)")
    return run_without_mpiexec(scenario, 2, tmp_path, timeout=120)


def test_ops_run_on_the_groups_stream_after_the_producers_and_wait_needs_no_host_sync(tmp_path):
    results = _run(tmp_path, "nccl_streams")
    assert len(results) == 2
    for rank, out in enumerate(results):
        a, s = out["async"], out["sync"]
        # the all_reduce was queued on a stream of the group's, not on the caller's
        assert a["comm"] not in (a["user_stream"], 0), (rank, a)
        assert s["comm"] == a["comm"] and s["comm"] != s["current"], (rank, s)
        # before it, that stream waited for an event recorded on the caller's current stream
        assert a["producer"] == a["user_stream"], (rank, a)
        assert s["producer"] == s["current"], (rank, s)
        # Work.wait() (and a synchronous op) made the caller's stream wait for the op's end event ...
        assert a["user_stream"] in a["waited_by"], (rank, a)
        assert s["current"] in s["waited_by"], (rank, s)
        # ... without synchronising the host, at the call or at the wait
        assert out["async_syncs"] == [0, 0], (rank, out["async_syncs"])
        assert out["sync_syncs"] == 0, (rank, out["sync_syncs"])
        np.testing.assert_allclose(out["values"], out["expected"])


def test_ddp_buckets_are_reduced_while_backward_runs(tmp_path):
    for rank, out in enumerate(_run(tmp_path, "nccl_ddp_overlap")):
        assert out["buckets"] >= 3, out  # one per layer, or close
        assert len(out["launches"]) == out["buckets"], out
        # when the last gradient became ready, earlier buckets' all-reduces were already queued
        assert len(out["launched_before_last_grad"]) == 1, out
        assert 1 <= out["launched_before_last_grad"][0] < out["buckets"], out
        # on the group's stream, not the stream backward computes on
        assert set(out["launches"]) and out["current"] not in out["launches"], out
        assert out["syncs"] == 0, (rank, out["syncs"])  # nor does the step wait on the host
        assert out["grad_error"] < 1e-4, out
