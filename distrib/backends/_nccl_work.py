"""The ``Work`` of an NCCL op queued on its group's stream, and the watchdog that fails it.

See Note [NCCL streams] in ``nccl_backend.py``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from tensor import _nccl

from ..work import Future, Work, _seconds

__all__ = ["StreamWork", "StreamFuture", "Launch", "Watchdog"]

WATCH_PERIOD = 0.05  # seconds between the watchdog's looks at the ops in flight


class StreamFuture(Future):
    """The Future of a queued op: complete once the op is queued, as PyTorch's CUDA futures
    are; waiting orders the current stream after the op (see ``StreamWork.wait``)."""

    def __init__(self, work: StreamWork) -> None:
        super().__init__()
        self._work = work

    def wait(self, timeout=None):
        """The op's output tensors, once the current stream waits for the op (``timeout``: see
        ``StreamWork.wait``)."""
        self._work.wait(timeout)
        return self._value


class StreamWork(Work):
    """An op queued on the group's NCCL stream; ``wait()`` needs no host synchronisation."""

    def __init__(self, backend, name: str, seq: int, result=None, what: str | None = None) -> None:
        super().__init__(name, seq, result)
        self._future = StreamFuture(self)
        self._backend = backend
        self.what = what  # a point-to-point op's description (it has no collective sequence number)
        self.end = None  # an event recorded on the group's stream after the op
        self.failure: BaseException | None = None
        self._keep = None  # the op's job, whose closure holds its arrays (see _enqueued)

    def _enqueued(self, end, keep=None) -> None:
        # CuPy's pool has no record_stream: an array the op reads or writes must not go back to
        # the pool of the caller's stream, and be handed out again there, before the op is done
        # on the GPU. The backend keeps this Work until then (Note [NCCL streams]).
        self.end, self._keep = end, keep
        self._future.set_result(self._result)

    def _failed(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
            self._future.set_exception(error)

    def is_completed(self) -> bool:
        """True once the op failed or its work on the GPU is done (a query: no synchronisation)."""
        done = self.failure is not None or (self.end is not None and _nccl.event_done(self.end))
        if done:
            self._keep = None
        return done

    def is_success(self) -> bool:
        """True once the op's work on the GPU is done without an error."""
        return self.failure is None and self.is_completed()

    def exception(self) -> BaseException | None:
        """The op's error, or None."""
        return self.failure

    def wait(self, timeout=None) -> bool:
        """Make the current stream wait for the op: later work there runs after it, and the host
        does not wait. With ``timeout`` (seconds or a timedelta) the host waits too, as PyTorch's
        does with a timeout, until the op is done.

        Raises:
            DistBackendError: the op failed (a timeout or an NCCL error the watchdog found,
                naming the op), or is still running after ``timeout``.
        """
        if self.failure is None:
            self._backend.order_after(self, None if timeout is None else _seconds(timeout))
        if self.failure is not None:
            raise self.failure
        return True


@dataclass
class Launch:
    """One op the watchdog watches: the event after its kernel, and by when it must be done."""

    event: object
    deadline: float
    op: tuple[str, int]
    what: str | None = None  # for point-to-point ops


class Watchdog:
    """A thread that watches the ops in flight, as PyTorch's NCCL watchdog does: an op past its
    deadline, or an asynchronous NCCL error, makes ``on_failure(launch, reason, timed_out)``
    fail it (which aborts the communicator)."""

    def __init__(self, device: int, comm, on_failure, name: str) -> None:
        self.device, self.comm, self.on_failure = device, comm, on_failure
        self.launches: list[Launch] = []
        self.cond = threading.Condition()
        self.stopped = False
        self.thread = threading.Thread(target=self._loop, daemon=True, name=name)
        self.thread.start()

    def watch(self, launch: Launch) -> None:
        with self.cond:
            self.launches.append(launch)
            self.cond.notify()

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            self.cond.notify()

    def _loop(self) -> None:
        with _nccl.on_device(self.device):  # events are queried on their device
            while True:
                with self.cond:
                    self.launches = [x for x in self.launches if not _nccl.event_done(x.event)]
                    if self.stopped:
                        return
                    if not self.launches:
                        self.cond.wait()
                        continue
                    oldest = self.launches[0]
                if self.check(oldest):
                    return
                with self.cond:
                    self.cond.wait(WATCH_PERIOD)

    def check(self, launch: Launch) -> bool:
        """Fail ``launch`` on an asynchronous NCCL error or once past its deadline; whether it did."""
        try:
            self.comm.check_async_error()
        except Exception as exc:  # noqa: BLE001 - NcclError
            self.on_failure(launch, f"NCCL error: {exc}", False)
            return True
        if time.monotonic() > launch.deadline and not _nccl.event_done(launch.event):
            self.on_failure(launch, None, True)
            return True
        return False


def poll(event, until: float, check) -> bool:
    """Wait on the host for ``event`` until ``until`` (``time.monotonic()``); whether it is done.
    ``check()`` runs now and then and raises to stop waiting."""
    polls = 0
    while not _nccl.event_done(event):
        polls += 1
        if polls % 64 == 0:
            check()
            if time.monotonic() > until:
                return False
        if polls > 1000:
            time.sleep(2e-5)
    return True
