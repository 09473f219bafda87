"""Unit checks of the same-host shared-memory group (``distrib/backends/_shm.py``) that need no
second process; the collectives themselves are covered by the conformance suite."""

from __future__ import annotations

import mmap
import os

from distrib.backends._shm import _HEADER, ShmGroup


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
