"""Error files and the failure summary.

Worker side: the launcher gives every worker an error-file path in ``DISTRIB_ERROR_FILE``
(and ``TORCHELASTIC_ERROR_FILE``, so torch's ``@record`` writes there too). Decorate the
entry point with :func:`record`, or call :func:`install` once, and an uncaught exception
is written there as JSON before the process dies::

    from launch.errors import record

    @record
    def main():
        ...

Launcher side: :func:`read_error_file` reads either format (ours or torch's), and
:func:`format_summary` prints the failures, root cause first. Where a worker wrote no
error file, the summary falls back to the last lines of its stderr, which hold the
traceback Python printed anyway.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import time
import traceback

__all__ = ["record", "install", "write_error_file", "read_error_file", "Failure", "format_summary",
           "exit_code_of"]

ERROR_FILE_ENV = "DISTRIB_ERROR_FILE"


def write_error_file(exc: BaseException, path: str | None = None) -> str | None:
    """Write ``exc`` and its traceback as JSON to ``path`` (default: ``$DISTRIB_ERROR_FILE``).

    Returns the path written, or None when no path is known. The write is atomic (a
    temporary file renamed into place), so the launcher never reads half a file.
    """
    path = path or os.environ.get(ERROR_FILE_ENV)
    if not path:
        return None
    record_ = {
        "message": f"{type(exc).__name__}: {exc}",
        "type": type(exc).__name__,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        "timestamp": time.time(),
        "pid": os.getpid(),
        "rank": os.environ.get("RANK"),
    }
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(record_, f)
    os.replace(tmp, path)
    return path


def record(fn):
    """Decorator: an exception escaping ``fn`` is written to the error file, then re-raised.

    ``SystemExit`` is not an error here: ``sys.exit(0)`` is success, and any other exit
    code is reported by the launcher from the exit status.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            write_error_file(exc)
            raise

    return wrapper


def install() -> None:
    """Install a ``sys.excepthook`` that writes uncaught exceptions to the error file."""
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, Exception):
            try:
                write_error_file(exc.with_traceback(tb))
            except OSError:
                pass
        previous(exc_type, exc, tb)

    sys.excepthook = hook


def read_error_file(path: str | None) -> dict | None:
    """The error a worker recorded: ``{"message", "traceback", "timestamp"}``, or None.

    Reads our format and torch.distributed.elastic's
    (``{"message": {"message": ..., "extraInfo": {"py_callstack": ..., "timestamp": ...}}}``).
    """
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    message = data.get("message")
    if isinstance(message, dict):  # torch's format
        extra = message.get("extraInfo", {})
        return {"message": message.get("message", ""), "traceback": extra.get("py_callstack", ""),
                "timestamp": float(extra.get("timestamp", 0) or 0)}
    return {"message": message or "", "traceback": data.get("traceback", ""),
            "timestamp": float(data.get("timestamp", 0) or 0)}


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_code_of(returncode: int) -> int:
    """The launcher's exit code for a worker's return code: the code itself, or 128+signal."""
    return 128 - returncode if returncode < 0 else returncode


class Failure:
    """One failed worker: what the summary prints. Plain data, so it crosses the rendezvous as JSON."""

    FIELDS = ("time", "host", "rank", "local_rank", "returncode", "pid", "error_file", "message", "traceback")

    def __init__(self, **fields) -> None:
        for name in self.FIELDS:
            setattr(self, name, fields.get(name))

    @classmethod
    def of_worker(cls, worker, host: str, stderr_tail: str) -> Failure:
        error = read_error_file(worker.error_file)
        if error is not None:
            message, tb, when = error["message"], error["traceback"], error["timestamp"] or worker.end_time
        else:
            message, when = "", worker.end_time
            tb = ("(no error file: decorate the entry point with launch.errors.record; last lines of stderr:)\n"
                  + stderr_tail) if stderr_tail.strip() else "(no error file and no stderr output)"
        if worker.returncode < 0 and not message:
            message = f"Signal {-worker.returncode} ({signal_name(-worker.returncode)}) received by PID {worker.pid}"
        return cls(time=when, host=host, rank=worker.rank, local_rank=worker.local_rank,
                   returncode=worker.returncode, pid=worker.pid, error_file=worker.error_file if error else None,
                   message=message, traceback=tb)

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.FIELDS}

    @property
    def exit_code(self) -> int:
        return exit_code_of(self.returncode)

    def describe_exit(self) -> str:
        if self.returncode < 0:
            return f"signal {-self.returncode} ({signal_name(-self.returncode)}), exit code {self.exit_code}"
        return f"{self.returncode}"

    def lines(self, index: str) -> list[str]:
        when = time.strftime("%Y-%m-%d_%H:%M:%S", time.localtime(self.time or 0))
        out = [f"[{index}]:",
               f"  time       : {when}",
               f"  host       : {self.host}",
               f"  rank       : {self.rank} (local_rank: {self.local_rank})",
               f"  exitcode   : {self.describe_exit()} (pid: {self.pid})",
               f"  error_file : {self.error_file or '<N/A>'}"]
        if self.message:
            out.append(f"  message    : {self.message}")
        out.append("  traceback  :")
        out.extend("    " + line for line in (self.traceback or "").rstrip("\n").splitlines())
        return out


def root_cause(failures: list[Failure]) -> Failure:
    """The first failure: the earliest time (error-file timestamps are exact), then the lowest rank."""
    return min(failures, key=lambda f: (f.time or 0, f.rank))


def format_summary(name: str, failures: list[Failure]) -> str:
    """The failure report: the root cause first, then the other failures."""
    first = root_cause(failures)
    others = [f for f in failures if f is not first]
    bar, rule = "=" * 72, "-" * 72
    lines = [bar, f"{name} FAILED", rule, "Root Cause (first observed failure):"]
    lines += first.lines("0")
    lines.append(rule)
    if others:
        lines.append("Other Failures:")
        for i, failure in enumerate(others, 1):
            lines += failure.lines(str(i))
    else:
        lines.append("Other Failures:\n  <NO_OTHER_FAILURES>")
    lines.append(bar)
    return "\n".join(lines)
