"""examples/ddp_train.py end to end: under distrib-launch (2 processes), alone, under mpiexec
(on either backend, ending with the launcher's parameters), and the elastic restart: a rank
SIGKILLed mid-training, the job restarted by the launcher from the latest checkpoint, ending
with exactly the parameters of an uninterrupted run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

import tensor
from tests.distrib._harness import ROOT, leaked_shm, shm_entries
from tests.helpers import child_pythonpath

SCRIPT = os.path.join(ROOT, "examples", "ddp_train.py")
BIN = os.path.dirname(sys.executable)
ACCURACY = re.compile(r"^(?:\[rank0\]:)?test accuracy: (\d+(?:\.\d+)?)%$", re.MULTILINE)
EPOCH_LINE = re.compile(r"^(?:\[rank0\]:)?epoch +(\d+)/(\d+): loss \d+\.\d+, train accuracy [\d.]+%, "
                        r"test accuracy [\d.]+%", re.MULTILINE)
THREE_EPOCHS = ("--epochs", "3", "--checkpoint-every", "20")  # the restart and mpiexec tests' runs


def launcher() -> list[str]:
    exe = os.path.join(BIN, "distrib-launch")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "launch"]


def run(cmd: list[str], timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` in its own session (``env`` values of None unset a variable); on timeout kill
    the whole session and fail."""
    full_env = {**os.environ, "PYTHONPATH": child_pythonpath(ROOT), "OMP_NUM_THREADS": "1", **(env or {})}
    for name in ("DISTRIB_RESTART_COUNT", *[k for k, v in full_env.items() if v is None]):
        full_env.pop(name, None)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"{cmd} did not finish within {timeout} s:\n{out[-4000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, "")


def accuracy(output: str) -> float:
    found = ACCURACY.findall(output)
    assert found, f"no 'test accuracy' line in:\n{output[-4000:]}"
    return float(found[-1])


def load_params(out_dir) -> dict:
    return {k: v.numpy() for k, v in tensor.load(os.path.join(out_dir, "final_model.pt")).items()}


def assert_identical(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert np.array_equal(a[key], b[key]), f"{key} differs"


def test_two_processes_under_the_launcher_reach_97_percent(tmp_path):
    before = shm_entries()
    result = run([*launcher(), "--nproc", "2", SCRIPT, "--out-dir", str(tmp_path), "--workers", "1"])
    assert result.returncode == 0, result.stdout[-4000:]
    assert accuracy(result.stdout) >= 97.0
    epochs = EPOCH_LINE.findall(result.stdout)
    assert [int(e) for e, _ in epochs] == list(range(1, 13)), "one loss/accuracy line per epoch, from rank 0 only"
    assert "2 rank(s) x batch 16" in result.stdout
    assert "[rank1]:" not in result.stdout, "only the master process prints"
    assert (tmp_path / "training_summary.txt").exists() or (tmp_path / "training_curve.png").exists()
    assert not leaked_shm(before), "the job left /dev/shm segments behind"


def test_single_process_run_and_resume_match_an_uninterrupted_run(tmp_path):
    common = [sys.executable, SCRIPT, "--epochs", "2", "--checkpoint-every", "20", "--workers", "0"]
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    result = run([*common, "--out-dir", str(whole)])
    assert result.returncode == 0, result.stdout[-4000:]
    assert "1 rank(s) x batch 32" in result.stdout

    crashed = run([*common, "--out-dir", str(parts), "--simulate-failure", "50"])
    assert crashed.returncode == -signal.SIGKILL
    assert sorted(n for n in os.listdir(parts) if n.endswith(".ckpt")) == ["step_000020.ckpt", "step_000040.ckpt"]
    resumed = run([*common, "--out-dir", str(parts), "--resume"])
    assert resumed.returncode == 0, resumed.stdout[-4000:]
    assert f"resumed from {parts}/step_000040.ckpt at step 40" in resumed.stdout
    assert_identical(load_params(whole), load_params(parts))


@pytest.fixture(scope="module")
def three_epochs(tmp_path_factory) -> dict:
    """The final parameters of an uninterrupted run of two processes under the launcher (zmq),
    THREE_EPOCHS: what the restarted job and the mpiexec runs must end with, bit for bit."""
    out = tmp_path_factory.mktemp("three_epochs")
    result = run([*launcher(), "--nproc", "2", SCRIPT, *THREE_EPOCHS, "--out-dir", str(out)])
    assert result.returncode == 0, result.stdout[-4000:]
    return load_params(out)


def test_killed_rank_restarts_from_checkpoint_with_identical_final_parameters(tmp_path, three_epochs):
    result = run([*launcher(), "--max-restarts", "1", "--nproc", "2", SCRIPT, *THREE_EPOCHS,
                  "--out-dir", str(tmp_path), "--simulate-failure", "50"])
    assert result.returncode == 0, result.stdout[-4000:]
    assert "rank 1 failed (signal 9 (SIGKILL)" in result.stdout
    assert f"resumed from {tmp_path}/step_000040.ckpt at step 40 (restart 1)" in result.stdout
    assert_identical(load_params(tmp_path), three_epochs)


def test_without_restarts_the_killed_rank_fails_the_job(tmp_path):
    result = run([*launcher(), "--nproc", "2", SCRIPT, "--epochs", "2", "--out-dir", str(tmp_path),
                  "--simulate-failure", "5"])
    assert result.returncode == 128 + signal.SIGKILL, result.stdout[-4000:]
    assert not (tmp_path / "final_model.pt").exists()


def _mpiexec() -> str | None:
    exe = os.path.join(BIN, "mpiexec")
    return exe if os.path.exists(exe) else None


@pytest.mark.parametrize("backend", ["mpi", "zmq"])
def test_mpiexec_two_ranks(tmp_path, backend, three_epochs):
    # Two ranks sum each gradient in one order on every backend, so the job started by mpiexec
    # ends with exactly the launcher's parameters (whose full run reaches 97%, above).
    mpiexec = _mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec next to the interpreter (pip install 'distrib[mpi]')")
    if backend == "mpi":
        pytest.importorskip("mpi4py", reason="the mpi backend needs mpi4py")
    result = run([mpiexec, "-n", "2", sys.executable, SCRIPT, "--backend", backend, *THREE_EPOCHS,
                  "--out-dir", str(tmp_path)],
                 env={"OMP_NUM_THREADS": None})  # the script caps the BLAS threads itself under mpirun
    assert result.returncode == 0, result.stdout[-4000:]
    assert f"backend {backend}" in result.stdout
    assert "2 rank(s) x batch 16" in result.stdout
    assert accuracy(result.stdout) > 50.0
    assert_identical(load_params(tmp_path), three_epochs)
