"""Run the cases of ``_sharding_scenarios`` with one name prefix in one process group per
configuration (zmq through env:// rendezvous, or ``mpiexec``), and read each case's results."""

from __future__ import annotations

import pytest

import tensor
from tests.conftest import CUDA_SKIP_REASON
from tests.distrib._harness import TRANSPORTS, rank_results
from tests.distrib._mpi_harness import mpi_rank_results, skip_reason

CONFIGS = [("zmq-shm", 2), ("zmq-shm", 3), ("mpi", 2), ("mpi", 3)]
CONFIG_IDS = [f"{c}-{n}" for c, n in CONFIGS]
TIGHT = 1e-12  # float64, summed in a different order


def run_config(prefix: str, config: str, size: int, env: dict | None = None) -> list[dict]:
    """Every rank's ``{case: result}`` for the cases named ``prefix*`` (skips mpi where it is
    missing), with ``env`` added to the ranks' environment."""
    env = {"DISTRIB_TIMEOUT": "30", "SHARDING_CASES": prefix, **(env or {})}
    if config != "mpi":
        return rank_results("sharding", size, env={**env, **TRANSPORTS[config]}, timeout=120)
    if reason := skip_reason():
        pytest.skip(reason)
    return mpi_rank_results("sharding", size, args=("mpi",), env=env, timeout=120)


def assert_same_on_every_rank(results: list[dict], key: str) -> None:
    for rank, r in enumerate(results[1:], start=1):
        assert r[key] == results[0][key], f"{key} differs between rank 0 and rank {rank}"


def run_nccl(prefix: str, size: int = 2) -> list[dict]:
    """Every rank's ``{case: result}`` for the cases named ``prefix*`` on nccl, one CUDA device per
    rank (skips, with the reason, without CUDA or with fewer devices than ranks)."""
    if CUDA_SKIP_REASON:
        pytest.skip(f"no CUDA device: {CUDA_SKIP_REASON}")
    if tensor.cuda.device_count() < size:
        pytest.skip(f"needs {size} GPUs (one per rank, as NCCL requires), found {tensor.cuda.device_count()}")
    env = {"DISTRIB_TIMEOUT": "60", "SHARDING_CASES": prefix}
    return rank_results("sharding_nccl", size, env=env, timeout=180)
