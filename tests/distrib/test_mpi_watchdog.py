"""The ``mpi`` backend's watchdog (Note [MPI watchdog]) against a stand-in backend, in one
process: when it ends the job, with what message, and when it must not.

The real thing, under ``mpiexec``, is in ``test_mpi_failures.py``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import types

import pytest

from distrib.backends import _mpi_setup
from distrib.backends._mpi_setup import Stall
from distrib.backends._mpi_watchdog import Watchdog
from distrib.backends.base import HotAllReduce
from distrib.errors import DistBackendError

pytestmark = pytest.mark.timeout(30)


class _Backend:
    """What the watchdog uses of an MpiBackend; ``aborted`` is set when it ends the job."""

    def __init__(self, timeout=0.3, dead=None, missing=None, serve_error=None):
        self.rank, self.timeout = 0, timeout
        self.hot = HotAllReduce({}, None, None, None)
        self.op_name, self.op_seq = "init", 0
        self.served = 0
        self._dead, self._missing, self._serve_error = dead, missing, serve_error
        self.aborted = threading.Event()
        self.abort_codes = []
        self.mpi = types.SimpleNamespace(COMM_WORLD=types.SimpleNamespace(Abort=self._abort))

    def _abort(self, code):
        self.abort_codes.append(code)
        self.aborted.set()

    def query_slack(self):
        return 0.05

    def serve(self):
        self.served += 1
        if self._serve_error is not None:
            raise self._serve_error

    def dead_peers(self):
        return self._dead

    def find_missing(self):
        if isinstance(self._missing, Exception):
            raise self._missing
        return self._missing or Stall("timed out after 0.3 s (rank 1 has not called it)", {1})

    def op_error(self, reason, missing=()):
        return DistBackendError(f"[mpi backend, rank 0/2] {self.op_name} (op seq {self.op_seq}) failed: {reason}; "
                                f"missing rank(s): {sorted(missing or ())}")


@pytest.fixture(autouse=True)
def no_grace(monkeypatch):
    monkeypatch.setattr(_mpi_setup, "_ABORT_GRACE_SECONDS", 0)
    monkeypatch.setattr(_mpi_setup, "_exit", lambda code: None)  # the stand-in Abort records the end


def _watch(backend, seconds):
    dog = Watchdog(backend)
    try:
        backend.aborted.wait(seconds)
    finally:
        dog.stop()


def test_an_op_past_its_timeout_ends_the_job_with_its_error(capsys):
    backend = _Backend()
    backend.hot.started = 7  # a blocking op in flight, never finished
    start = time.monotonic()
    _watch(backend, 5)
    took = time.monotonic() - start
    assert backend.abort_codes[:1] == [1]
    assert 0.1 < took < 2, took  # about the timeout, not at once and not much later
    err = capsys.readouterr().err
    assert ("distrib: DistBackendError: [mpi backend, rank 0/2] all_reduce (op seq 7) failed: timed out after "
            "0.3 s (rank 1 has not called it); missing rank(s): [1]") in err
    assert "DISTRIB_MPI_BLOCKING=0" in err


def test_an_op_that_completes_in_time_is_left_alone():
    backend = _Backend()
    backend.hot.started = 3
    dog = Watchdog(backend)
    try:
        time.sleep(0.1)
        backend.hot.finished = 3
        assert not backend.aborted.wait(0.6)
    finally:
        dog.stop()
    assert backend.served >= 5  # it answered progress queries all along


def test_a_dead_peer_ends_the_job_at_once(capsys):
    backend = _Backend(timeout=60, dead=Stall("peer process(es) exited: rank 1 (pid 4242)", {1}))
    backend.hot.started = 2
    start = time.monotonic()
    _watch(backend, 5)
    assert backend.abort_codes[:1] == [1] and time.monotonic() - start < 1
    assert "all_reduce (op seq 2) failed: peer process(es) exited: rank 1 (pid 4242)" in capsys.readouterr().err


def test_failing_to_ask_the_peers_still_ends_the_job(capsys):
    backend = _Backend(missing=RuntimeError("side communicator gone"))
    backend.hot.started = 4
    _watch(backend, 5)
    assert backend.abort_codes[:1] == [1]
    assert "timed out after 0.3 s (asking the peers failed: side communicator gone)" in capsys.readouterr().err


def test_no_op_in_flight_means_no_abort_even_when_serving_fails():
    backend = _Backend(serve_error=RuntimeError("broken"))
    backend.hot.started = backend.hot.finished = 9
    dog = Watchdog(backend)
    try:
        assert not backend.aborted.wait(0.5)
        assert dog._thread.is_alive()
    finally:
        dog.stop()
    assert not dog._thread.is_alive()


@contextlib.contextmanager
def _piped_stderr():
    """fd 2 writes into a pipe, as under mpiexec, whose proxy reads it; yields the read end.
    (In the test body: pytest points fd 2 at its capture file again between set-up and call.)"""
    read_end, write_end = os.pipe()
    saved = os.dup(2)
    os.dup2(write_end, 2)
    try:
        yield read_end
    finally:
        os.dup2(saved, 2)
        for fd in (saved, read_end, write_end):
            os.close(fd)


def _abort_in_thread(unread_at_abort: list) -> threading.Thread:
    """``abort_job`` on a thread; its stand-in MPI_Abort records the bytes still unread on fd 2."""
    mpi = types.SimpleNamespace(COMM_WORLD=types.SimpleNamespace(
        Abort=lambda code: unread_at_abort.append(_mpi_setup._unread_bytes(2))))
    thread = threading.Thread(target=_mpi_setup.abort_job, args=(mpi, "distrib: ending the job"))
    thread.start()
    return thread


def test_abort_waits_until_the_reader_of_piped_output_has_it(monkeypatch):
    """Hydra's mpiexec drops what its proxy has not read when it hears of MPI_Abort
    (Note [A job that ends in MPI_Abort] in tests/distrib/_mpi_harness.py)."""
    monkeypatch.setattr(_mpi_setup, "_ABORT_GRACE_SECONDS", 5)
    unread_at_abort = []
    with _piped_stderr() as proxy_end:
        os.write(2, b"the error the user must see\n")
        thread = _abort_in_thread(unread_at_abort)
        time.sleep(1)  # a slow reader: longer than any fixed pause would have been
        assert unread_at_abort == [], "MPI_Abort was called before the output was read"
        assert b"the error the user must see\n" in os.read(proxy_end, 1 << 16)
        read_at = time.monotonic()
        thread.join(5)
        assert time.monotonic() - read_at < 1, "MPI_Abort waited on after the output was read"
    assert unread_at_abort == [0]


def test_abort_waits_for_an_idle_reader_no_longer_than_the_grace(monkeypatch):
    monkeypatch.setattr(_mpi_setup, "_ABORT_GRACE_SECONDS", 0.3)
    unread_at_abort = []
    with _piped_stderr():
        os.write(2, b"nobody reads this\n")
        start = time.monotonic()
        _abort_in_thread(unread_at_abort).join(5)
        took = time.monotonic() - start
    assert unread_at_abort and unread_at_abort[0] > 0
    assert 0.25 < took < 2, took


def test_abort_ends_the_process_when_mpi_abort_returns(monkeypatch):
    """MPICH's MPI_Abort returns once it has told the process manager."""
    exits, calls = [], []
    monkeypatch.setattr(_mpi_setup, "_exit", exits.append)
    mpi = types.SimpleNamespace(COMM_WORLD=types.SimpleNamespace(Abort=calls.append))
    _mpi_setup.abort_job(mpi, "distrib: ending the job")
    assert calls == [1] and exits == [1]


def test_abort_ends_the_process_when_mpi_abort_never_returns(monkeypatch):
    """Across a partition the process manager never answers, and MPI_Abort blocks for good."""
    monkeypatch.setattr(_mpi_setup, "_ABORT_DEADLINE_SECONDS", 0.2)
    ended, exits = threading.Event(), []
    monkeypatch.setattr(_mpi_setup, "_exit", lambda code: (exits.append(code), ended.set()))
    blocked = types.SimpleNamespace(Abort=lambda code: ended.wait(30))  # returns only once ended
    thread = threading.Thread(target=_mpi_setup.abort_job,
                              args=(types.SimpleNamespace(COMM_WORLD=blocked), "distrib: ending the job"))
    thread.start()
    thread.join(5)
    assert not thread.is_alive() and exits[0] == 1
