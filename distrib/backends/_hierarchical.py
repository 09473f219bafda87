"""Hierarchical all_reduce for the zmq backend: shared memory on each host, TCP between hosts.

Note [Hierarchical all_reduce]
    When a group spans several hosts (host ids from ``_procs.host_id``, exchanged at init:
    ``distrib-launch`` gives each node of a multi-node job its own, and under mpirun MPI's
    nodes count once MPI is initialised)
    and some host holds several of its ranks, all_reduce runs in three steps: the ranks of
    each host all_reduce through shared memory (``_shm``, Note [Shared-memory collectives]),
    the host leaders (each host's lowest rank) exchange their host results over TCP and
    reduce them in leader order, and each leader broadcasts the result to its host through
    shared memory. Only one copy of the tensor per host crosses the network instead of one
    per rank, and no rank waits on a socket for a peer on its own host.

    The result is bitwise the same on every rank (every leader reduces the same host results
    in the same order, and broadcasts it), but it is summed in a different order than the
    flat algorithms: ((r0 + r1) + (r2 + r3)) for hosts {0, 1} and {2, 3}. AVG sums and
    divides once by the group size at the end, as the flat algorithms do.

    The leaders exchange whole tensors (each sends its host result to every other leader,
    piece by piece): with H hosts each leader sends (H - 1) copies, which suits the few hosts
    this is meant for. Timeouts and peer failures behave as in the flat paths: the TCP steps
    go through the backend's ``_send``/``_recv``, the shared-memory ones through ``_shm``'s
    barriers, whose peers are reported by their rank in the group.

    All_reduces up to 64 KiB stay the flat direct exchange (one step instead of three
    dependent ones): with 2 hosts of 2 ranks, 4 KB took 3-4.6x longer hierarchically
    (BENCHMARKS.md, issue 15).

    ``DISTRIB_HIERARCHICAL=0`` turns it off (all_reduce then runs the flat TCP algorithms);
    it is also off when shared memory is (``DISTRIB_ZMQ_SHM=0``) or cannot be set up on
    some host (every rank then agrees, through the store, to stay flat).
"""

from __future__ import annotations

import os

import numpy as np

from .. import reduce_op
from ..reduce_op import ReduceOp
from ..store.prefix_store import PrefixStore
from . import _shm

__all__ = ["Hierarchy", "setup"]


def enabled() -> bool:
    """Whether ``DISTRIB_HIERARCHICAL`` allows the hierarchical path (anything but "0")."""
    return os.environ.get("DISTRIB_HIERARCHICAL", "auto") != "0"


def setup(backend, hosts: list[str], slot_bytes: int | None):
    """A Hierarchy for ``backend`` whose ranks run on ``hosts`` (a host id per rank), or None
    (on every rank) when it does not apply: one host, one rank per host, or shared memory
    unusable on some host. Collective over the backend's store."""
    by_host: dict[str, list[int]] = {}
    for p, h in enumerate(hosts):
        by_host.setdefault(h, []).append(p)
    if len(by_host) < 2 or all(len(ranks) == 1 for ranks in by_host.values()):
        return None
    store, rank = backend.store, backend.rank
    local = by_host[hosts[rank]]
    shm = None
    if len(local) > 1:
        sub = PrefixStore(f"hier/{local[0]}", store)
        shm = _shm.setup(sub, local.index(rank), len(local), slot_bytes)
    ok = shm is not None or len(local) == 1
    store.set(f"hier/ok/{rank}", "1" if ok else "0")
    if not all(store.get(f"hier/ok/{p}") == b"1" for p in range(backend.size)):
        if shm is not None:
            shm.close()
        return None
    return Hierarchy(backend, local, sorted(ranks[0] for ranks in by_host.values()), shm)


class _HostOwner:
    """What ``ShmGroup`` asks of its owner, for the ranks of one host: deadlines and errors from
    the backend, with host-local ranks translated to the group's."""

    def __init__(self, backend, ranks: list[int]) -> None:
        self.backend, self.ranks = backend, ranks

    @property
    def timeout(self) -> float:
        return self.backend.timeout

    def deadline(self) -> float:
        return self.backend.deadline()

    def check_peers(self, local) -> None:
        self.backend.check_peers([self.ranks[p] for p in local])

    def op_error(self, reason: str, missing=()):
        return self.backend.op_error(reason, [self.ranks[p] for p in missing])


class Hierarchy:
    """The hierarchical all_reduce of one zmq group (Note [Hierarchical all_reduce]).
    ``calls`` counts the all_reduces it ran."""

    def __init__(self, backend, local: list[int], leaders: list[int], shm) -> None:
        self.backend, self.local, self.leaders, self.shm = backend, local, leaders, shm
        self.calls = 0
        if shm is not None:
            shm.owner = _HostOwner(backend, local)

    def mark_op(self, seq: int) -> None:
        if self.shm is not None:
            self.shm.mark_op(seq)

    def all_reduce(self, x: np.ndarray, op: ReduceOp) -> None:
        """All-reduce flat ``x`` in place over the backend's group."""
        self.calls += 1
        inner = ReduceOp.SUM if op.name == "AVG" else op
        if self.shm is not None:
            self.shm.all_reduce(x, inner)
        if self.backend.rank == self.local[0]:
            self._leaders_all_reduce(x, inner)
        if self.shm is not None:
            self.shm.broadcast(x, 0)
        reduce_op.finish(op, x, self.backend.size)

    def _leaders_all_reduce(self, x: np.ndarray, op: ReduceOp) -> None:
        """Every leader sends its host result to the others, piece by piece, and reduces all of
        them in leader order (so every leader gets bitwise the same result)."""
        b, me = self.backend, self.backend.rank
        others = [p for p in self.leaders if p != me]
        per = b._per(x)
        pieces = [(lo, min(lo + per, x.size)) for lo in range(0, x.size, per)] or [(0, 0)]
        trackers = {p: [b._send(p, 0, i, x[lo:hi]) for i, (lo, hi) in enumerate(pieces)] for p in others}
        for i, (lo, hi) in enumerate(pieces):
            theirs = {}
            for p in others:
                theirs[p] = np.frombuffer(b._recv(p, 0, i).buffer, x.dtype)
                if theirs[p].size != hi - lo:
                    b._size_mismatch(theirs[p].size, hi - lo)
            for p in others:  # libzmq may still be reading this piece of x (zero-copy send)
                if not b.transport.wait_sent(trackers[p][i], b.deadline()):
                    b._timed_out([])
            mine = x[lo:hi]
            srcs = [mine if p == me else theirs[p] for p in self.leaders]
            # Reducing into our own piece is safe only if it is read first (one of the first two).
            out = reduce_op.reduce_in_rank_order(op, srcs, out=mine if self.leaders.index(me) < 2 else None)
            if out is not mine:
                np.copyto(mine, out)
        b._flush()

    def close(self) -> None:
        if self.shm is not None:
            self.shm.close()
            self.shm = None
