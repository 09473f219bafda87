"""``Work``, the handle of an asynchronous operation, and its ``Future``.

An async collective returns a ``Work`` at once; the operation runs on the process
group's worker thread (see ``process_group.Executor``), so communication overlaps
with the caller's computation. ``wait(timeout)`` blocks, re-raising the op's error.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from tensor.profiler import _recorder

from .errors import DistBackendError

__all__ = ["Work", "Future", "communication_wait_seconds"]


_now = time.perf_counter_ns
_waited_ns = [0]  # time blocked in Work.wait / Future.wait in this process


def communication_wait_seconds() -> float:
    """Seconds this process has spent blocked in ``Work.wait``/``Future.wait`` so far: the
    difference over a training step is the step's time waiting for communication (e.g. DDP's
    gradient buckets)."""
    return _waited_ns[0] / 1e9


def _seconds(timeout) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Future:
    """A value that becomes available later, like ``torch.futures.Future``."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._value = None
        self._error: BaseException | None = None
        self._callbacks: list = []
        self._lock = threading.Lock()
        # For an op's future: runs the op's queue in the waiting thread (see Note [Helping wait]).
        self._help = None

    def done(self) -> bool:
        """True once a value or an error is set."""
        return self._event.is_set()

    def set_result(self, value) -> None:
        """Complete the future with ``value`` and run the callbacks."""
        self._finish(value, None)

    def set_exception(self, error: BaseException) -> None:
        """Complete the future with an error; ``wait``/``value`` re-raise it."""
        self._finish(None, error)

    def _finish(self, value, error) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._value, self._error = value, error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def wait(self, timeout=None):
        """Block until done and return the value (raises the op's error)."""
        seconds = _seconds(timeout)
        if not self._await(seconds):
            raise DistBackendError(f"timed out after {seconds} s waiting for a Future")
        if self._error is not None:
            raise self._error
        return self._value

    def _await(self, seconds) -> bool:
        """Wait up to ``seconds`` (None: forever) for completion, first running the op's queue
        in this thread where that is allowed (Note [Helping wait]); whether it completed.
        The time is added to ``communication_wait_seconds`` (and is a profiler event)."""
        if self._event.is_set():
            return True
        start = _now()
        try:
            if self._help is not None:
                self._help(self._event)
            return self._event.wait(seconds)
        finally:
            end = _now()
            _waited_ns[0] += end - start
            if _recorder.current is not None:
                _recorder.current.add("wait", "collective_wait", start, end)

    def value(self):
        """The value of a completed future (raises the op's error)."""
        return self.wait()

    def add_done_callback(self, callback) -> None:
        """Call ``callback(self)`` when done (at once if already done)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback) -> Future:
        """A new Future holding ``callback(self)``, run when this one completes."""
        result = Future()

        def run(fut):
            try:
                result.set_result(callback(fut))
            except BaseException as exc:  # noqa: BLE001 - forwarded to the chained future
                result.set_exception(exc)

        self.add_done_callback(run)
        return result


class Work:
    """The handle of an async operation: ``wait``, ``is_completed``, ``exception``, ``get_future``."""

    def __init__(self, name: str = "op", seq: int = -1, result=None) -> None:
        self.name, self.seq = name, seq
        self._future = Future()
        self._result = result  # what the future yields: the output tensors

    def _complete(self, error: BaseException | None = None) -> None:
        if error is None:
            self._future.set_result(self._result)
        else:
            self._future.set_exception(error)

    def is_completed(self) -> bool:
        """True once the op finished, successfully or not."""
        return self._future.done()

    def is_success(self) -> bool:
        """True once the op finished without error."""
        return self._future.done() and self._future._error is None

    def exception(self) -> BaseException | None:
        """The op's error, or None (also None while still running)."""
        return self._future._error if self._future.done() else None

    def wait(self, timeout=None) -> bool:
        """Block until the op finished; raises its error, or DistBackendError after ``timeout``."""
        seconds = _seconds(timeout)
        if not self._future._await(seconds):
            raise DistBackendError(
                f"Work.wait timed out after {seconds} s: {self.name} (seq {self.seq}) is still running"
            )
        if self._future._error is not None:
            raise self._future._error
        return True

    def result(self):
        """The output tensors of a completed op."""
        self.wait()
        return self._result

    def get_future(self) -> Future:
        """A Future completed with the op's output tensors."""
        return self._future

    def __repr__(self) -> str:
        state = "completed" if self.is_completed() else "pending"
        return f"Work({self.name}, seq={self.seq}, {state})"
