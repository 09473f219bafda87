"""Run a scenario under ``mpiexec -n N`` (the ``mpich`` wheel's, in the venv) as one subprocess.

Every rank runs ``_mpi_worker.py`` with no rendezvous variables at all: rank and size come
from MPI, as under a real ``mpirun``. Each rank writes its result to ``<out>/rank<r>.json``.
The job carries a unique marker in its environment, by which its processes are found. At
the deadline every rank prints its threads' stacks (faulthandler, on SIGABRT) before the job
is stopped.

Note [A job that ends in MPI_Abort]
    Hydra's mpiexec exits as soon as it reads a rank's abort: it neither waits for its proxy
    nor forwards what the proxy has not sent yet. And the proxy, when a rank's abort and its
    last output are both ready, forwards the abort first. So:

    * By default each rank writes its stdout and stderr straight to files (a shell execs
      python with them redirected), read once the job is over: MPICH's own "application
      called MPI_Abort" line, written just before the abort, would go missing through
      mpiexec on a busy machine. ``output="mpiexec"`` reads the output as a user sees it.
    * The proxy SIGKILLs the ranks only when it sees mpiexec gone, so the job's processes
      outlive mpiexec for a moment (longer under load). The harness waits for them to end;
      whatever still runs ``TEARDOWN_SECONDS`` later is a leftover, killed and reported.
    * MPICH leaves its ``mpich_shm_*`` segments in /dev/shm. The harness removes the new ones
      that nothing maps, but never one so new that a job starting beside this one may not
      have mapped it yet (``_remove_left_mpich_segments``).
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
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.distrib._harness import ROOT, free_port, leaked_shm, mapped_shm, shm_entries
from tests.helpers import child_pythonpath, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_mpi_worker.py")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
# The fork launcher starts ranks on this host without ssh (sandboxes and CI have none).
LAUNCH_FLAGS = ("-launcher", "fork")
# $0 is the directory for the output files, "$@" the rank's command (Note [A job that ends in MPI_Abort]).
RANK_OUTPUT = 'exec "$@" >"$0/stdout.$PMI_RANK" 2>"$0/stderr.$PMI_RANK"'
TEARDOWN_SECONDS = 10  # for the job's processes to end once mpiexec has
SHM_SETTLE_SECONDS = 2  # a new /dev/shm segment that nothing maps by this age is abandoned


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
    leftovers: list  # "pid command" of each process still running TEARDOWN_SECONDS after mpiexec (killed)

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


def _remove_left_mpich_segments(names: set[str]) -> None:
    """Remove the segments among ``names`` that nothing maps once they are SHM_SETTLE_SECONDS old.

    A job that ends in MPI_Abort leaves its segments behind. One that is being set up beside
    this one has just created its own, and maps it a moment later; removing it then would leave
    its ranks waiting for each other in MPI_Init forever.
    """
    ages = {}
    for name in names:
        try:
            ages[name] = time.time() - os.stat(os.path.join("/dev/shm", name)).st_ctime
        except FileNotFoundError:
            pass
    if not ages:
        return
    time.sleep(max(0.0, SHM_SETTLE_SECONDS - min(ages.values())))
    for name in set(ages) - mapped_shm():
        try:
            os.unlink(os.path.join("/dev/shm", name))
        except FileNotFoundError:
            pass


def _argv(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def _dump_stacks(marker: str) -> None:
    """Make every rank still running print its threads' stacks to its stderr and end (SIGABRT,
    which faulthandler catches): where a job that missed its deadline was stuck."""
    ranks = [pid for pid in _marked_pids(marker) if _argv(pid)[1:2] == [WORKER]]
    for pid in ranks:
        try:
            os.kill(pid, signal.SIGABRT)
        except ProcessLookupError:
            pass
    wait_until(lambda: not set(ranks) & set(_marked_pids(marker)), timeout=5)


def _end_job(marker: str) -> list[str]:
    """Wait for the job's processes to end; kill those still running after TEARDOWN_SECONDS and
    return them as ``"pid command"``."""
    if wait_until(lambda: not _marked_pids(marker), timeout=TEARDOWN_SECONDS):
        return []
    leftovers = [" ".join([str(pid), *_argv(pid)]) for pid in _marked_pids(marker)]

    def none_left() -> bool:
        pids = _marked_pids(marker)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return not pids

    wait_until(none_left, timeout=5)
    return leftovers


def _rank_output(directory: str, n: int, stream: str) -> str:
    """Each rank's ``stream`` ("stdout" or "stderr") from its file, under a header."""
    parts = []
    for r in range(n):
        path = os.path.join(directory, f"{stream}.{r}")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                text = f.read()
            if text:
                parts.append(f"[rank {r} {stream}]\n{text}" + ("" if text.endswith("\n") else "\n"))
    return "".join(parts)


def run_mpi(scenario: str, n: int, out_dir, args=(), env=None, timeout: float = 60, flags=(),
            output: str = "ranks") -> MpiRun:
    """``mpiexec -n n python _mpi_worker.py <out_dir> <scenario> args...``, stopped at ``timeout``.

    ``output``: "ranks" reads each rank's stdout and stderr from files it wrote itself (followed
    by mpiexec's own); "mpiexec" reads them as mpiexec forwarded them (Note [A job that ends in
    MPI_Abort]).
    """
    if output not in ("ranks", "mpiexec"):
        raise ValueError(f"output must be 'ranks' or 'mpiexec', got {output!r}")
    marker = f"distrib-mpi-test-{secrets.token_hex(8)}"
    penv = {k: v for k, v in os.environ.items()
            if k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")}
    penv.update({"PYTHONPATH": child_pythonpath(ROOT), "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1",
                 "DISTRIB_TEST_JOB": marker, **(env or {})})
    mpich_before, distrib_before = _mpich_segments(), shm_entries()
    with tempfile.TemporaryDirectory(prefix="mpi-output-") as logs:
        rank_cmd = [sys.executable, WORKER, str(out_dir), scenario, *map(str, args)]
        if output == "ranks":
            rank_cmd = ["/bin/sh", "-c", RANK_OUTPUT, logs, *rank_cmd]
        proc = subprocess.Popen([MPIEXEC, *LAUNCH_FLAGS, *flags, "-n", str(n), *rank_cmd], env=penv, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _dump_stacks(marker)
            proc.send_signal(signal.SIGINT)  # hydra forwards it and tears the job down
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            err += f"\n[harness] mpiexec stopped at the {timeout} s deadline"
        leftovers = _end_job(marker)
        out = _rank_output(logs, n, "stdout") + out
        err = _rank_output(logs, n, "stderr") + err
    _remove_left_mpich_segments(_mpich_segments() - mpich_before)
    assert not leaked_shm(distrib_before), "the ranks left distrib /dev/shm segments behind"
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
               "WORLD_SIZE": str(n), "PYTHONPATH": child_pythonpath(ROOT)}
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
