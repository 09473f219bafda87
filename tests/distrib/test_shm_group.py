"""Unit checks of the same-host shared-memory group (``distrib/backends/_shm.py``) that need no
second process; the collectives themselves are covered by the conformance suite."""

from __future__ import annotations

import mmap
import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from distrib import rendezvous
from distrib.backends import _shm
from distrib.backends._shm import _HEADER, ShmGroup
from distrib.store import HashStore


def test_a_barrier_arrival_survives_a_peer_that_already_exited():
    # A dead peer's wake-up FIFO has no reader left: the write fails with EPIPE. The arrival must
    # still publish its phase, so that the wait that follows can name the dead rank.
    read_end, write_end = os.pipe()
    os.close(read_end)
    maps = [mmap.mmap(-1, _HEADER + 2 * 4096) for _ in range(2)]
    own_r, own_w = os.pipe()
    os.close(own_w)
    group = ShmGroup(maps, 0, 2, 4096, own_r, [write_end])
    group.arrive()
    assert group.hdr[0][0] == 1
    group.close()
    assert group.maps == []


@pytest.mark.parametrize(("cpus", "local_env", "slot", "expected"), [
    (2, {}, None, _shm._SMALL_SLOT),  # 2 ranks fit 2 CPUs: cache-sized blocks
    (1, {}, None, _shm._LARGE_SLOT),  # 2 ranks on 1 CPU: fewer barriers
    (2, {"LOCAL_WORLD_SIZE": "4"}, None, _shm._LARGE_SLOT),  # a group of 2 among 4 ranks on this host
    (2, {"MPI_LOCALNRANKS": "3"}, None, _shm._LARGE_SLOT),  # the same under MPICH's mpiexec
    (2, {}, 8192, 8192),  # DISTRIB_SHM_SLOT_BYTES, as the zmq backend passes it
])
def test_both_ranks_use_one_slot_size(monkeypatch, cpus, local_env, slot, expected):
    """Note [Slot size]; rank 0 decides, so every rank cuts tensors into the same blocks."""
    monkeypatch.setattr(_shm, "_usable_cpus", lambda: cpus)
    for name in rendezvous._LOCAL_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in local_env.items():
        monkeypatch.setenv(name, value)
    store = HashStore()
    with ThreadPoolExecutor(2) as pool:  # the two ranks' setups meet through the store
        groups = list(pool.map(lambda rank: _shm.setup(store, rank, 2, slot), range(2)))
    try:
        assert [g.slot_bytes for g in groups] == [expected, expected]
    finally:
        for g in groups:
            g.close()


def test_usable_cpus_is_within_the_affinity():
    assert 1 <= _shm._usable_cpus() <= len(os.sched_getaffinity(0))


def test_segments_go_where_distrib_shm_dir_says(monkeypatch, tmp_path):
    """``DISTRIB_SHM_DIR`` moves the collectives' segments as it moves shared tensors'; a
    directory that cannot hold them makes the group unusable on every rank (the backend then
    falls back to its sockets) instead of one rank failing alone."""
    from tensor import _shared

    def setup_both():
        store = HashStore()
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(lambda rank: _shm.setup(store, rank, 2, 8192), range(2)))

    monkeypatch.setattr(_shared, "SHM_DIR", str(tmp_path / "missing"))
    assert setup_both() == [None, None]
    monkeypatch.setattr(_shared, "SHM_DIR", str(tmp_path))
    groups = setup_both()
    try:
        assert all(isinstance(g, ShmGroup) for g in groups)
        assert os.listdir(tmp_path) == []  # unlinked once every rank mapped them
    finally:
        for g in groups:
            g.close()


class _SlowRepliesStore:
    """One rank's view of a shared store whose replies reach the rank ``delay`` seconds late;
    ``log`` gets (rank, call) as the store serves each call."""

    def __init__(self, store, rank: int, log: list, delay: float) -> None:
        self.store, self.rank, self.log, self.delay = store, rank, log, delay

    def __getattr__(self, name):
        method = getattr(self.store, name)

        def call(*args, **kwargs):
            result = method(*args, **kwargs)
            self.log.append((self.rank, name))
            time.sleep(self.delay)
            return result

        return call


def test_rank_0_leaves_setup_after_the_peers_are_done_with_the_store():
    """Rank 0 usually owns the store and may destroy it as soon as init returns: it must not
    return while a peer's last store call is unanswered (that peer would time out)."""
    store, log = HashStore(), []

    def setup(rank):
        group = _shm.setup(_SlowRepliesStore(store, rank, log, 0.05 * rank), rank, 2, 8192)
        log.append((rank, "returned"))
        return group

    with ThreadPoolExecutor(2) as pool:
        groups = list(pool.map(setup, range(2)))
    for g in groups:
        g.close()
    peer_calls = [i for i, (rank, call) in enumerate(log) if rank == 1 and call != "returned"]
    assert log.index((0, "returned")) > max(peer_calls)
