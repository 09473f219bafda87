"""The failure model every backend shares (Note [Peer failures] in ``distrib/backends/base.py``),
against a stand-in backend in one process: who is named missing after a timeout, dead peers on
this host (zombies included), and the peer exchange that finds them. The backends' own failure
tests (``test_failures.py``, ``test_mpi_failures.py``) run the real thing across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from distrib import _procs
from distrib.backends.base import Backend
from distrib.errors import DistBackendError
from distrib.store import HashStore
from distrib.work import Work
from tests.helpers import wait_until

pytestmark = pytest.mark.timeout(60)


class _Stub(Backend):
    """A transport whose peers answer progress queries with ``answers``; p2p completes at once."""

    name = "stub"

    def __init__(self, answers=None, rank=0, size=4, timeout=2.0, store=None) -> None:
        super().__init__(store, rank, size, timeout)
        self.answers, self.asked = answers or {}, None

    def query_progress(self, peers, seconds):
        self.asked = (peers, seconds)
        return {p: a for p, a in self.answers.items() if p in peers}

    def isend(self, array, dst, tag=0):
        work = Work("send")
        work._complete()
        return work

    def irecv(self, array, src, tag=0):
        array[...] = 7
        work = Work("recv", result=3 if src is None else src)
        work._complete()
        return work


def test_a_timeout_names_the_peers_that_are_behind_or_silent():
    backend = _Stub({1: (5, 4), 2: (4, 4)})  # rank 1 is in op 5 with us; rank 2 finished op 4; rank 3 is silent
    backend.begin_op("all_reduce", 5)
    reason, missing = backend.timeout_reason()
    assert backend.asked == ([1, 2, 3], pytest.approx(0.2))  # a tenth of the timeout is kept to ask
    assert reason == ("timed out after 2 s (rank 2 has not called it (its last op: seq 4); rank 3 did not answer "
                      "(dead, unreachable, or hung in code that holds the GIL))")
    assert missing == {2, 3}


def test_a_peer_in_an_older_op_and_the_ranks_waited_for():
    backend = _Stub({1: (3, 2), 2: (5, 4), 3: (5, 4)})
    backend.begin_op("broadcast", 5)
    reason, missing = backend.timeout_reason(waiting_for=[2])
    assert reason == "timed out after 2 s (rank 1 is in op seq 3)"
    assert missing == {1, 2}


def test_every_peer_in_the_op_says_so():
    backend = _Stub({1: (5, 4), 2: (5, 4), 3: (6, 5)})
    backend.begin_op("barrier", 5)
    assert backend.timeout_reason() == (
        "timed out after 2 s (every peer is in this op, yet it did not complete)", set())
    assert backend.timeout_reason(waiting_for=[3]) == ("timed out after 2 s (waiting for rank(s) [3])", {3})


def test_the_slack_is_a_tenth_of_the_timeout_up_to_a_second():
    assert _Stub(timeout=0.5).query_slack() == pytest.approx(0.05)
    assert _Stub(timeout=1800).query_slack() == 1.0


def test_progress_follows_begin_and_end():
    backend = _Stub()
    assert backend.progress() == (0, 0)
    backend.begin_op("all_reduce", 1)
    assert backend.progress() == (1, 0)
    backend.end_op()
    assert backend.progress() == (1, 1)


def test_a_zombie_peer_fails_the_op_at_once():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # exited, but not waited for: a zombie
        assert wait_until(lambda: not _procs.alive(child.pid), 30), "the child did not exit"
        backend = _Stub()
        backend.peer_pids = {1: os.getpid(), 2: child.pid}
        backend.begin_op("all_gather", 3)
        assert backend.exited_peers() == [2]
        assert backend.exited_peers([1]) == []  # only the ranks asked about
        with pytest.raises(DistBackendError) as info:
            backend.check_peers()
    finally:
        child.wait()
    assert str(info.value) == (f"[stub backend, rank 0/4] all_gather (op seq 3) failed: peer process(es) exited: "
                               f"rank 2 (pid {child.pid}); missing rank(s): [2]")


def test_the_peer_exchange_records_the_pids_on_this_host():
    store = HashStore()

    def rank(r):
        backend = _Stub(rank=r, size=2, store=store)
        return backend, backend.exchange_peer_info("t", {"endpoint": f"e{r}"})

    with ThreadPoolExecutor(2) as pool:
        (b0, peers), (b1, _) = pool.map(rank, range(2))
    assert [p["endpoint"] for p in peers] == ["e0", "e1"]
    assert peers[1]["host"] == _procs.host_id()
    assert b0.peer_pids == {1: os.getpid()} and b1.peer_pids == {0: os.getpid()}


def test_send_and_recv_wait_for_isend_and_irecv():
    backend, x = _Stub(), np.zeros(3)
    backend.send(x, 1)
    assert backend.recv(x, None) == 3
    assert x.tolist() == [7, 7, 7]
