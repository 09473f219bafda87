"""The ``mpi`` backend's watchdog thread: the timeout of blocking ops, and progress answers.

Note [MPI watchdog]
    * A small synchronous all_reduce is MPI's blocking ``Allreduce`` (the hot path, Note [Hot
      all_reduce] in ``base.py``; Note [Blocking all_reduce] in ``mpi_backend.py``), which no
      timeout can interrupt. ``collectives`` marks it in ``hot.started`` before the call and
      ``hot.finished`` after it: two stores, no clock read. Every ``_TICK`` seconds this
      thread looks at them. When one op has been in flight for the group's timeout (less the
      time kept back to ask the peers), or a peer process on this host has exited, it asks the
      peers which op they are in, prints the ``DistBackendError`` the op would have raised
      (the op, its sequence number, the missing ranks) and ends the job with ``MPI_Abort``,
      as PyTorch's NCCL watchdog ends a process whose collective timed out.
    * Each tick it also answers the peers' progress queries, so a rank that is idle, or
      inside a blocking op, still tells a timed-out peer where it is.
    * ``stop`` joins the thread: it must not call MPI after the communicators are freed or
      MPI is finalized.
"""

from __future__ import annotations

import threading
import time

from ._mpi_setup import Stall, abort_job

_TICK = 0.05  # s between looks at the op in flight, and between answers to progress queries


class Watchdog:
    """Watches ``backend``'s blocking ops and answers progress queries, on a daemon thread."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"distrib-mpi-watchdog-{backend.rank}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the thread and wait for it (a tick at most)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def _loop(self) -> None:
        backend, hot = self.backend, self.backend.hot
        watched, since = 0, 0.0
        limit = backend.timeout - backend.query_slack() - _TICK
        while not self._stop.wait(_TICK):
            try:
                backend.serve()
            except Exception:  # noqa: BLE001 - a failed communicator: the op in flight reports it
                pass
            seq = hot.started
            if seq <= hot.finished:
                continue
            now = time.monotonic()
            if seq != watched:
                watched, since = seq, now
            stall = backend.dead_peers()
            if stall is None and now - since < limit:
                continue
            self._fire(seq, stall)

    def _fire(self, seq: int, stall) -> None:
        """End the job over blocking op ``seq``, unless it completed meanwhile."""
        backend = self.backend
        backend.op_name, backend.op_seq = "all_reduce", seq  # the caller is blocked inside that op
        if stall is None:
            try:
                stall = backend.find_missing()
            except Exception as exc:  # noqa: BLE001 - the job ends either way; say what is known
                stall = Stall(f"timed out after {backend.timeout:g} s (asking the peers failed: {exc})")
        if backend.hot.finished >= seq or self._stop.is_set():
            return
        error = backend.op_error(stall.reason, stall.missing)
        abort_job(backend.mpi, f"distrib: {type(error).__name__}: {error}\ndistrib: a blocking MPI call cannot be "
                               "interrupted; calling MPI_Abort (set DISTRIB_MPI_BLOCKING=0 to get this error "
                               "raised in the caller instead)")
