"""DistributedDataParallel across processes: exact equivalence with one process, no_sync,
unused parameters, communication hooks, buffers, shape checks and Join.

Each configuration (backend/transport, world size) runs every case of ``_ddp_scenarios``
once, in one process group of subprocess ranks (zmq: env:// rendezvous; mpi: ``mpiexec -n``,
skipped where the mpi backend or mpiexec is missing); each test then checks its case's
results from every rank. Float64 models make the equivalence checks tight.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from tests.distrib import _ddp_scenarios as scenarios
from tests.distrib._harness import ROOT, TRANSPORTS, finish_ranks, free_port, shm_entries

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ddp_worker.py")
CONFIGS = [("zmq-shm", 2), ("zmq-shm", 3), ("zmq-tcp", 2), ("mpi", 2)]
IDS = [f"{c}-{n}" for c, n in CONFIGS]
TIGHT = 1e-12  # float64, summed in a different order
ENV = {"DISTRIB_TIMEOUT": "30", "OMP_NUM_THREADS": "1", "PYTHONPATH": ROOT}


def _mpiexec() -> str | None:
    local = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return local if os.path.exists(local) else shutil.which("mpiexec")


def _mpi_skip_reason() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    if importlib.util.find_spec("distrib.backends.mpi_backend") is None:
        return "the mpi backend (distrib/backends/mpi_backend.py) is not present"
    if _mpiexec() is None:
        return "no mpiexec on PATH or next to the interpreter"
    return None


def _run_zmq(transport: str, size: int) -> list[dict]:
    port = free_port()
    procs = []
    for rank in range(size):
        env = {**os.environ, **ENV, **TRANSPORTS[transport], "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(port), "RANK": str(rank), "WORLD_SIZE": str(size)}
        procs.append(subprocess.Popen([sys.executable, WORKER, "zmq"], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL))
    results = finish_ranks(procs, timeout=120)
    for r in results:
        assert r.returncode == 0, f"rank {r.rank} exited with {r.returncode}:\n{r.stderr[-4000:]}"
    return [r.result for r in results]


def _run_mpi(size: int) -> list[dict]:
    with tempfile.TemporaryDirectory() as out_dir:
        env = {**os.environ, **ENV, "DDP_RESULT_DIR": out_dir}
        proc = subprocess.Popen([_mpiexec(), "-n", str(size), sys.executable, WORKER, "mpi"], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            pytest.fail(f"mpiexec did not finish within 120 s:\n{out[-4000:]}")
        assert proc.returncode == 0, f"mpiexec exited with {proc.returncode}:\n{out[-4000:]}"
        results = []
        for rank in range(size):
            with open(os.path.join(out_dir, f"{rank}.json")) as f:
                results.append(json.load(f))
        return results


@functools.cache
def _run(config: str, size: int) -> list[dict]:
    before = shm_entries()
    results = _run_mpi(size) if config == "mpi" else _run_zmq(config, size)
    assert shm_entries() - before == set(), "the ranks left /dev/shm segments behind"
    return results


def case_results(config: str, size: int, name: str) -> list[dict]:
    """Every rank's result of case ``name`` (skips mpi where it is unavailable)."""
    if config == "mpi" and (reason := _mpi_skip_reason()):
        pytest.skip(reason)
    results = []
    for rank, per_rank in enumerate(_run(config, size)):
        entry = per_rank.get(name)
        assert entry is not None, f"rank {rank} did not reach {name} (an earlier case failed: {per_rank})"
        assert "error" not in entry, f"rank {rank}:\n{entry['error']}"
        results.append(entry)
    return results


def assert_same_on_every_rank(results, key):
    for rank, r in enumerate(results[1:], start=1):
        assert r[key] == results[0][key], f"{key} differs between rank 0 and rank {rank}"


pytestmark = pytest.mark.parametrize(("config", "size"), CONFIGS, ids=IDS)


@pytest.mark.parametrize("variant", list(scenarios.EQUIVALENCE))
def test_n_ranks_with_batch_b_over_n_match_one_process_with_batch_b(config, size, variant):
    results = case_results(config, size, f"equivalence_{variant}")
    for rank, r in enumerate(results):
        assert r["max_diff"] < TIGHT, f"rank {rank}: parameters differ from one process by {r['max_diff']}"
        assert r["grad_in_bucket"] == ("bucket_view" in variant), f"rank {rank}: grads as bucket views"
    assert_same_on_every_rank(results, "params")
    expected_buckets = 3 if "bucket_cap_mb" in scenarios.EQUIVALENCE[variant] else 1
    assert results[0]["buckets"] == expected_buckets


def test_no_sync_accumulates_locally_then_averages_the_sum(config, size):
    results = case_results(config, size, "no_sync")
    for rank, r in enumerate(results):
        assert r["local_diff"] == 0.0, f"rank {rank}: gradients inside no_sync() were communicated"
        assert r["synced_diff"] < TIGHT, f"rank {rank}: the synced gradients are off by {r['synced_diff']}"
    assert_same_on_every_rank(results, "grads")


def test_unused_parameter_is_an_error_naming_it(config, size):
    for rank, r in enumerate(case_results(config, size, "unused_error")):
        assert r["type"] == "RuntimeError"
        message = r["message"]
        assert f"did not receive grad for rank {rank}: b.weight, b.bias, never.weight, never.bias" in message
        assert "find_unused_parameters=True" in message


def test_find_unused_parameters_averages_what_each_rank_used(config, size):
    for rank, r in enumerate(case_results(config, size, "find_unused")):
        assert r["step0_diff"] < TIGHT and r["step1_diff"] < TIGHT, f"rank {rank}: {r}"
        assert r["never_grad_is_none"], f"rank {rank}: a parameter no rank used got a gradient"
        assert not r["b_grad_is_none"], f"rank {rank}: a parameter rank 1 used got no gradient"


def test_comm_hooks_run_per_bucket_in_order(config, size):
    for rank, r in enumerate(case_results(config, size, "comm_hooks")):
        n = r["buckets"]
        assert r["calls"] == [[i, i == n - 1, 2] for i in range(n)], f"rank {rank}"
        assert r["exact_diff"] < TIGHT
        assert r["fp16_diff"] < 1e-3, f"rank {rank}: fp16 compression is off by {r['fp16_diff']}"
        assert r["fp16_grad_dtype"] == "float32"
        assert r["bad_hook"]["type"] == "TypeError"
        assert "must return a distrib Future" in r["bad_hook"]["message"]


def test_params_and_buffers_come_from_rank_0(config, size):
    results = case_results(config, size, "buffers")
    assert_same_on_every_rank(results, "params")
    for rank, r in enumerate(results):
        assert r["after_init"] == [0.0, 0.0], f"rank {rank}: buffers not broadcast at construction"
        assert r["after_forward"] == [10.0, 10.0], f"rank {rank}: buffers not broadcast at forward"
        assert r["unsynced_after_forward"] == [rank + 10.0] * 2, f"rank {rank}: broadcast_buffers=False broadcast"


def test_parameter_mismatch_across_ranks_names_the_first_one(config, size):
    last = size - 1
    for r in case_results(config, size, "shape_mismatch"):
        assert r["shape"]["type"] == "RuntimeError"
        assert (f"parameter 2 ('1.weight') has shape [3, 4] and dtype float32 on rank {last}, but rank 0's "
                "('1.weight') has shape [2, 4]") in r["shape"]["message"]
        assert r["count"]["type"] == "RuntimeError"
        assert f"rank {last} has 6 parameters that require grad, while rank 0 has 4" in r["count"]["message"]


@pytest.mark.parametrize("case", ["join", "join_divide_by_active"])
def test_join_with_uneven_inputs_matches_the_last_joiner(config, size, case):
    results = case_results(config, size, case)
    for rank, r in enumerate(results):
        assert r["max_diff"] < TIGHT, f"rank {rank}: {r['max_diff']}"
    assert_same_on_every_rank(results, "params")


def test_join_shadows_buffer_broadcasts(config, size):
    results = case_results(config, size, "join_with_buffers")
    assert_same_on_every_rank(results, "params")
    assert_same_on_every_rank(results, "buffers")


def test_join_throw_on_early_termination_raises_everywhere(config, size):
    for r in case_results(config, size, "join_throw"):
        assert r == {"type": "RuntimeError",
                     "message": "Detected at least one rank that exhausted inputs. Throwing across all ranks."}
