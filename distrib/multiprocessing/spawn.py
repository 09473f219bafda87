"""``spawn`` / ``start_processes``: run ``fn(i, *args)`` in N processes, and fail as one.

When one process fails, the others get SIGTERM, then SIGKILL after a grace period, and the
parent raises ``ProcessRaisedException`` (carrying the child's traceback) or
``ProcessExitedException`` (with the exit code or the signal's name). Each child asks the kernel
to SIGKILL it when its parent dies (``PR_SET_PDEATHSIG``, Linux), so no worker outlives a
crashed or killed parent.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import wait

from ._context import default_context

__all__ = ["ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
           "spawn", "start_processes"]

GRACE_PERIOD = float(os.environ.get("DISTRIB_SPAWN_GRACE_PERIOD", "5"))
_PR_SET_PDEATHSIG = 1


class ProcessException(Exception):
    """A process started by ``spawn`` failed; ``error_index`` is its rank, ``pid`` its pid."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The process raised; the message carries its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code, or was killed by ``signal_name``."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent dies; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def _wrap(fn, index: int, args: tuple, error_file: str, parent_pid: int) -> None:
    set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
    try:
        fn(index, *args)
    except KeyboardInterrupt:
        pass  # the parent is tearing everything down
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The running processes of ``start_processes(..., join=False)``."""

    def __init__(self, processes: list, error_files: list[str], error_dir: str | None = None) -> None:
        self.processes = processes
        self.error_files = error_files
        self._error_dir = error_dir
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """The pids of the processes, in rank order."""
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` s for the processes; True once all exited successfully.

        Raises:
            ProcessRaisedException, ProcessExitedException: when one failed (after stopping the
                others: SIGTERM, then SIGKILL after ``grace_period`` s).
        """
        if not self.sentinels:
            return True
        failed = None
        for sentinel in wait(list(self.sentinels), timeout=timeout):
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            if not self.sentinels:
                self._remove_error_dir()
            return not self.sentinels
        self.terminate(grace_period)
        raise self._exception(failed)

    def terminate(self, grace_period: float | None = None) -> None:
        """Stop every process still running: SIGTERM, then SIGKILL after ``grace_period`` s."""
        grace = GRACE_PERIOD if grace_period is None else grace_period
        alive = [p for p in self.processes if p.is_alive()]
        for p in alive:
            p.terminate()
        deadline = time.monotonic() + grace
        while alive and time.monotonic() < deadline:
            wait([p.sentinel for p in alive], timeout=deadline - time.monotonic())
            alive = [p for p in alive if p.is_alive()]
        for p in alive:
            p.kill()
        for p in self.processes:
            p.join()
        self.sentinels.clear()

    def _exception(self, index: int) -> ProcessException:
        process = self.processes[index]
        code, pid = process.exitcode, process.pid
        try:
            with open(self.error_files[index]) as f:
                trace = f.read()
        except FileNotFoundError:
            trace = ""
        self._remove_error_dir()
        if trace:
            return ProcessRaisedException(f"\n\n-- Process {index} terminated with the following error:\n{trace}",
                                          index, pid)
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            return ProcessExitedException(f"process {index} terminated with signal {name}", index, pid,
                                          exit_code=code, signal_name=name)
        return ProcessExitedException(f"process {index} terminated with exit code {code}", index, pid,
                                      exit_code=code)

    def _remove_error_dir(self) -> None:
        if self._error_dir is not None:
            shutil.rmtree(self._error_dir, ignore_errors=True)
            self._error_dir = None


def start_processes(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in its own process.

    With ``join=False`` returns a ``ProcessContext``; otherwise waits for all (returns None).

    Raises:
        ProcessRaisedException, ProcessExitedException: see ``ProcessContext.join``.
    """
    ctx = default_context.get_context(start_method)
    error_dir = tempfile.mkdtemp(prefix="distrib-spawn-")
    error_files = [os.path.join(error_dir, f"error-{i}") for i in range(nprocs)]
    processes = []
    try:
        for i in range(nprocs):
            process = ctx.Process(target=_wrap, args=(fn, i, args, error_files[i], os.getpid()), daemon=daemon)
            process.start()
            processes.append(process)
    except BaseException:
        ProcessContext(processes, error_files, error_dir).terminate(0)
        raise
    context = ProcessContext(processes, error_files, error_dir)
    if not join:
        return context
    try:
        while not context.join():
            pass
    except BaseException:
        context.terminate()
        context._remove_error_dir()
        raise
    return None


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """``start_processes`` with the ``spawn`` start method by default (see there).

        >>> def work(rank, scale):
        ...     print(rank * scale)
        >>> spawn(work, args=(10,), nprocs=2)  # doctest: +SKIP
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
