"""Point-to-point ops of the ``mpi`` backend as ``Work`` objects: each a sequence of MPI requests
(one per chunk), driven by ``wait`` against the op's deadline."""

from __future__ import annotations

import os
import threading
import time

from ..work import Work, _seconds
from ._mpi_setup import Stall, abort_at_exit


class RequestWork(Work):
    """A point-to-point op as a sequence of MPI requests (one per chunk), driven by ``wait``."""

    def __init__(self, backend, name: str, what: str, steps) -> None:
        super().__init__(name)
        self._backend, self._what, self._steps = backend, what, steps
        self._lock = threading.Lock()
        self._current = None
        self._advance()

    def _finish(self, error: BaseException | None = None, result=None) -> None:
        self._current = None
        self._result = result
        self._complete(error)

    def _advance(self) -> None:
        """Start the next request, or finish with the steps' return value."""
        be = self._backend
        try:
            self._current = self._steps.send(None) if self._current is not None else next(self._steps)
        except StopIteration as stop:
            self._finish(result=stop.value)
        except (ValueError, be.mpi.Exception) as exc:
            self._finish(be.p2p_error(self._what, str(exc)))

    def _drive(self, deadline: float | None, seconds: float = 0.0) -> None:
        """Progress until done (or ``seconds`` pass, at ``deadline``); without a deadline, only as
        far as possible without waiting."""
        be = self._backend
        if not self._lock.acquire(blocking=deadline is not None):
            return
        try:
            while self._current is not None:
                while self._current:  # the requests of the current step
                    request, status = self._current[0]
                    try:
                        if deadline is None:
                            if not request.Test(status):
                                return
                        else:
                            be._poll(request, status, deadline, seconds)
                    except Stall as stall:
                        self._give_up([r for r, _ in self._current], stall.reason)
                        return
                    except be.mpi.Exception as exc:
                        self._finish(be.p2p_error(self._what, f"MPI error: {exc}"))
                        return
                    self._current.pop(0)
                self._advance()
        finally:
            self._lock.release()

    def _give_up(self, requests, reason: str) -> None:
        """Cancel requests that cannot finish; if MPI cannot cancel them, the job ends with MPI_Abort."""
        be = self._backend
        for request in requests:
            request.Cancel()
            status, until = be.mpi.Status(), time.monotonic() + 0.1
            done = request.Test(status)
            while not done and time.monotonic() < until:
                os.sched_yield()
                done = request.Test(status)
            if not (done and status.Is_cancelled()):
                be._abandoned.append(request)
                abort_at_exit(be.mpi)
        self._finish(be.p2p_error(self._what, reason))

    def wait(self, timeout=None) -> bool:
        seconds = self._backend.timeout if timeout is None else _seconds(timeout)
        self._drive(time.monotonic() + seconds, seconds)
        return super().wait(0)

    def is_completed(self) -> bool:
        if not self._future.done():
            self._drive(None)
        return self._future.done()

    def source_rank(self) -> int:
        self.wait()
        return self._result
