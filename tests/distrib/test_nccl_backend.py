"""The ``nccl`` backend: op/dtype mapping and errors here; collectives on GPUs where they exist.

The multi-rank run needs one CUDA device per rank and is marked ``gpu`` (skipped, with the
reason, on machines without). The mapping of ReduceOps and dtypes to NCCL, and the refusal
of what NCCL cannot do, need no GPU.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import distrib as dist
import tensor
from tests.conftest import CUDA_SKIP_REASON
from tests.distrib._mpi_harness import run_without_mpiexec
from tests.distrib._scenarios import check_conformance_case

S = dist.ReduceOp
# scripts/gpu-check adds a run at world size = the number of GPUs.
GPU_WORLD_SIZE = int(os.environ.get("DISTRIB_GPU_WORLD_SIZE", "0"))


@pytest.mark.parametrize(("op", "dtype", "expected"), [
    (S.SUM, np.float32, (np.float32, 7, 0)),
    (S.AVG, np.float64, (np.float64, 8, 0)),  # AVG is SUM, then a division
    (S.PRODUCT, np.int32, (np.int32, 2, 1)),
    (S.MAX, np.int64, (np.int64, 4, 2)),
    (S.MIN, np.float16, (np.float16, 6, 3)),
    (S.SUM, np.uint8, (np.uint8, 1, 0)),
    (S.SUM, np.bool_, (np.uint8, 1, 2)),  # any = MAX on 0/1 bytes
    (S.PRODUCT, np.bool_, (np.uint8, 1, 3)),  # all = MIN
    (S.SUM, np.complex64, (np.float32, 7, 0)),  # pairs of reals
])
def test_reduction_mapping(op, dtype, expected):
    from distrib.backends.nccl_backend import nccl_reduction

    as_dtype, code, nccl_op = nccl_reduction(op, dtype)
    assert (as_dtype, code, nccl_op) == (np.dtype(expected[0]), expected[1], expected[2])


@pytest.mark.parametrize(("op", "dtype", "match"), [
    (S.BAND, np.int32, r"ReduceOp.BAND is not supported by the nccl backend: NCCL has no bitwise reductions"),
    (S.BOR, np.uint8, r"ReduceOp.BOR is not supported by the nccl backend"),
    (S.BXOR, np.bool_, r"ReduceOp.BXOR is not supported by the nccl backend"),
    (S.PRODUCT, np.complex64, r"ReduceOp.PRODUCT on complex64 is not supported by the nccl backend"),
    (S.SUM, np.int16, r"the nccl backend cannot reduce int16 tensors"),
])
def test_what_nccl_cannot_reduce_is_refused_by_name(op, dtype, match):
    from distrib.backends.nccl_backend import nccl_reduction

    with pytest.raises(ValueError, match=match):
        nccl_reduction(op, dtype)


@pytest.mark.skipif(CUDA_SKIP_REASON is None, reason="CUDA is available: the backend can start here")
def test_backend_without_cuda_names_the_reason():
    from distrib.backends import backend_class
    from distrib.store import HashStore

    with pytest.raises(RuntimeError, match=r"CUDA is not available \(.*\)\. help: install the GPU extra"):
        backend_class("nccl")(HashStore(), 0, 1, 5.0)


def _run_on_gpus(tmp_path, scenario: str, size: int) -> None:
    """Run ``scenario`` on ``size`` ranks, one GPU each, and check every case on every rank."""
    if CUDA_SKIP_REASON:
        pytest.skip(f"no CUDA device: {CUDA_SKIP_REASON}")
    if tensor.cuda.device_count() < size:
        pytest.skip(f"needs {size} GPUs (one per rank, as NCCL requires), found {tensor.cuda.device_count()}")
    results = run_without_mpiexec(scenario, size, tmp_path, timeout=120)
    for case in results[0]:
        check_conformance_case(results, case)


@pytest.mark.gpu
@pytest.mark.parametrize("size", sorted({1, 2, 3, GPU_WORLD_SIZE} - {0}))
def test_collectives_on_gpus(tmp_path, size):
    _run_on_gpus(tmp_path, "nccl_conformance", size)


@pytest.mark.gpu
def test_defect3_async_ops_run_on_the_ranks_device(tmp_path):
    # Issue 13: the group's worker thread starts on device 0; it must use the rank's device.
    _run_on_gpus(tmp_path, "nccl_off_the_callers_thread", 2)


@pytest.mark.gpu
@pytest.mark.parametrize("size", sorted({1, 2, GPU_WORLD_SIZE} - {0}))
def test_defect4_object_collectives_and_ddp_on_nccl(tmp_path, size):
    _run_on_gpus(tmp_path, "nccl_objects_and_ddp", size)


@pytest.mark.gpu
def test_defect3_cuda_tensors_on_a_host_backend_are_staged_on_their_device(tmp_path):
    _run_on_gpus(tmp_path, "cuda_tensors_on_zmq_off_the_callers_thread", 2)


@pytest.mark.gpu
@pytest.mark.parametrize(("scenario", "message"), [("nccl_peer_leaves", r"remote process exited|rank 1"),
                                                   ("nccl_peer_hangs", r"timed out after 2 s")])
def test_a_failing_peer_makes_the_nccl_op_fail_instead_of_hanging(tmp_path, scenario, message):
    if CUDA_SKIP_REASON:
        pytest.skip(f"no CUDA device: {CUDA_SKIP_REASON}")
    if tensor.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, found {tensor.cuda.device_count()}")
    result = run_without_mpiexec(scenario, 2, tmp_path, timeout=60)[0]
    assert result["error"] is not None and re.search(message, result["error"]), result
    assert re.search(r"all_reduce \(op seq 2\) failed", result["error"]), result  # the op that failed
    assert result["seconds"] < 10
    # a wait shorter than the op's timeout gives up on the host, naming the op
    assert result["short_wait"] is not None and "all_reduce" in result["short_wait"], result
    if scenario == "nccl_peer_hangs":
        assert "Work.wait timed out after 0.5 s: all_reduce (seq 2) is still running" in result["short_wait"]
    # later ops, and waits with a timeout, report the failure too
    assert result["wait_error"] is not None and "all_reduce (op seq 2)" in result["wait_error"], result


# ---- one GPU: NCCL refuses two ranks on it, so processes that share it use zmq ----------------
def _run_on_one_gpu(tmp_path, monkeypatch, scenario: str) -> list:
    """Run ``scenario`` on 2 ranks that both see only GPU 0 (CUDA_VISIBLE_DEVICES=0)."""
    if CUDA_SKIP_REASON:
        pytest.skip(f"no CUDA device: {CUDA_SKIP_REASON}")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    return run_without_mpiexec(scenario, 2, tmp_path, timeout=120)


@pytest.mark.gpu
@pytest.mark.parametrize("scenario", ["zmq_cuda_conformance", "zmq_cuda_objects_and_ddp"])
def test_two_processes_share_one_gpu_on_zmq(tmp_path, monkeypatch, scenario):
    results = _run_on_one_gpu(tmp_path, monkeypatch, scenario)
    for case in results[0]:
        check_conformance_case(results, case)


@pytest.mark.gpu
def test_two_nccl_ranks_on_one_gpu_are_refused_with_help(tmp_path, monkeypatch):
    for rank, result in enumerate(_run_on_one_gpu(tmp_path, monkeypatch, "nccl_two_ranks_on_one_gpu")):
        assert result["error"] is not None, rank
        assert "all_reduce (op seq 1) failed: NCCL could not make the communicator on cuda:0" in result["error"]
        # NCCL says "invalid usage" (its log adds "Duplicate GPU detected"; CuPy does not show it)
        assert "invalid usage" in result["error"] and "backend='zmq'" in result["error"], result
