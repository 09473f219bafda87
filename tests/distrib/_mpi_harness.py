"""Run a scenario under ``mpiexec -n N`` (the ``mpich`` wheel's, in the venv) as one subprocess.

Every rank runs ``_mpi_worker.py`` with no rendezvous variables at all: rank and size come
from MPI, as under a real ``mpirun``. Each rank writes its result to ``<out>/rank<r>.json``
(stdout of N ranks is interleaved). The job carries a unique marker in its environment;
after the run (or at the deadline) every process carrying it is killed by pid, and the
``mpich_shm_*`` segments MPICH leaves in /dev/shm when a job ends in MPI_Abort are removed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.distrib._harness import ROOT, free_port, shm_entries
from tests.helpers import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_mpi_worker.py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
# The fork launcher starts ranks on this host without ssh (sandboxes and CI have none).
LAUNCH_FLAGS = ("-launcher", "fork")


def skip_reason() -> str | None:
    """Why MPI tests cannot run here (None when they can)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install 'distrib[mpi]')"
    if shutil.which(MPIEXEC) is None:
        return f"no mpiexec next to {sys.executable} (pip install mpich)"
    return None


# Skips a test, with the reason shown, where MPI tests cannot run.
needs_mpi = pytest.mark.skipif(skip_reason() is not None, reason=str(skip_reason()))


@dataclass
class MpiRun:
    returncode: int | None
    stdout: str
    stderr: str
    results: dict  # rank -> the scenario's return value
    leftovers: list  # pids that were still running after mpiexec ended (killed)

    def result(self, rank: int):
        assert rank in self.results, (f"rank {rank} wrote no result (exit {self.returncode}):\n"
                                      f"{self.stdout[-3000:]}\n{self.stderr[-4000:]}")
        return self.results[rank]


def _marked_pids(marker: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            pass
    return pids


def _mpich_segments() -> set[str]:
    return {name for name in os.listdir("/dev/shm") if name.startswith("mpich_shm_")}


def run_mpi(scenario: str, n: int, out_dir, args=(), env=None, timeout: float = 60, flags=()) -> MpiRun:
    """``mpiexec -n n python _mpi_worker.py <out_dir> <scenario> args...``, killed at ``timeout``."""
    marker = f"distrib-mpi-test-{secrets.token_hex(8)}"
    penv = {k: v for k, v in os.environ.items()
            if k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")}
    penv.update({"PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1", "DISTRIB_TEST_JOB": marker, **(env or {})})
    mpich_before, distrib_before = _mpich_segments(), shm_entries()
    cmd = [MPIEXEC, *LAUNCH_FLAGS, *flags, "-n", str(n), sys.executable, WORKER, str(out_dir), scenario,
           *map(str, args)]
    proc = subprocess.Popen(cmd, env=penv, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # hydra forwards it and tears the job down
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        err += f"\n[harness] mpiexec stopped at the {timeout} s deadline"
    killed: set[int] = set()

    def none_left() -> bool:  # kill whatever is left, until nothing is (cleanup, not synchronisation)
        pids = _marked_pids(marker)
        killed.update(pids)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return not pids

    wait_until(none_left, timeout=5)
    leftovers = sorted(killed)
    for name in _mpich_segments() - mpich_before:
        try:
            os.unlink(os.path.join("/dev/shm", name))
        except FileNotFoundError:
            pass
    assert shm_entries() - distrib_before == set(), "the ranks left distrib /dev/shm segments behind"
    results = {}
    for r in range(n):
        path = os.path.join(str(out_dir), f"rank{r}.json")
        if os.path.exists(path):
            with open(path) as f:
                results[r] = json.load(f)
    return MpiRun(proc.returncode, out, err, results, leftovers)


def mpi_rank_results(scenario: str, n: int, args=(), env=None, timeout: float = 60) -> list:
    """Every rank's result of ``scenario`` under ``mpiexec -n n``, after asserting that the job
    exited 0 and that no process outlived it."""
    with tempfile.TemporaryDirectory() as out:
        run = run_mpi(scenario, n, out, args=args, env=env, timeout=timeout)
    assert run.returncode == 0, f"mpiexec exited with {run.returncode}:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    assert run.leftovers == [], f"processes outlived mpiexec: {run.leftovers}"
    return [run.result(r) for r in range(n)]


def run_without_mpiexec(scenario: str, n: int, out_dir, timeout: float = 60) -> list:
    """Run ``scenario`` on ``n`` ranks started as plain processes (env:// rendezvous, no
    mpiexec); returns each rank's JSON result after asserting that every rank exited 0."""
    port = free_port()
    procs = []
    for rank in range(n):
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
               "WORLD_SIZE": str(n), "PYTHONPATH": ROOT}
        procs.append(subprocess.Popen([sys.executable, WORKER, str(out_dir), scenario], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        outputs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, p in enumerate(procs):
        assert p.returncode == 0, outputs[rank][1][-3000:]
    return [json.loads((Path(out_dir) / f"rank{rank}.json").read_text()) for rank in range(n)]
