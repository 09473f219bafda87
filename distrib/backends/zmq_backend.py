"""The ``zmq`` backend: pyzmq over TCP, with shared memory between ranks on one host.

Algorithms (TCP): with two ranks, all_reduce up to 2 MiB is a whole-tensor exchange (one
step, both directions at once, reduced in rank order); small all_reduce in bigger groups
is a direct exchange; large all_reduce is a ring reduce-scatter fused with a ring
all-gather: every piece is forwarded as soon as it is reduced (or received), and the
pieces of a rank's own segment leave as the all-gather's first step the moment they are
final, so sending, receiving and reducing overlap across steps. Broadcast is a binomial
tree that forwards piece by piece; all_gather and reduce_scatter are rings. Collective
messages travel on per-pair sockets that the op thread reads itself (see
``_zmq_transport``), payloads land in place with ``recv_into``, and sends are zero-copy. When every
rank of the group is on this host (same boot id and user), all_reduce, broadcast,
reduce, all_gather, reduce_scatter and barrier go through ``_shm`` instead (see Note
[Shared-memory collectives]); gather, scatter, all_to_all and point-to-point stay on
zmq. ``DISTRIB_ZMQ_SHM=0`` turns shared memory off. When the group spans several hosts and
some host holds several ranks, all_reduce above 64 KiB is hierarchical (``_hierarchical``, Note
[Hierarchical all_reduce]; ``DISTRIB_HIERARCHICAL=0`` turns it off).
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

from .. import debug, reduce_op, security
from ..work import Work, _seconds
from . import _hierarchical, _shm
from ._zmq_transport import COLL, P2P, Transport, header
from .base import Backend, size_mismatch_reason

__all__ = ["ZmqBackend"]

# Bytes per pipelined message. Each message costs tens of microseconds of Python, wake-ups
# and zero-copy bookkeeping on both ends, so pieces stay large; 1 MiB measured best
# (256 KiB pieces cost about 50% more CPU per byte over loopback).
_PIECE = int(os.environ.get("DISTRIB_ZMQ_PIECE_BYTES", 1 << 20))
_SMALL = 1 << 16  # all_reduce up to this many bytes (groups of 3+): direct exchange
# Two ranks, up to this many bytes: whole-tensor exchange (see _all_reduce_pair). Over loopback the
# ring, which reduces half as much, wins from 4 MiB on (by 2-10%); at 2 MiB they tie.
_PAIR_MAX = 2 << 20


def _pieces(lo: int, hi: int, per: int):
    """``[lo, hi)`` cut into ranges of at most ``per`` elements (one empty range if lo == hi)."""
    if lo == hi:
        return [(lo, hi)]
    return [(a, min(a + per, hi)) for a in range(lo, hi, per)]


class ZmqBackend(Backend):
    """The default CPU backend. See the module docstring for the algorithms."""

    name = "zmq"
    device_types = ("cpu",)

    def __init__(self, store, rank, size, timeout, options=None) -> None:
        super().__init__(store, rank, size, timeout, options)
        host = self.options.get("host") or os.environ.get("DISTRIB_ZMQ_HOST") or "127.0.0.1"
        self.shm = self.hierarchy = None
        self.transport = Transport(rank, size, host, security.auth_key(), self.progress)
        peers = self.exchange_peer_info("zmq", {
            "endpoint": self.transport.endpoint,
            "data": {str(p): ep for p, ep in self.transport.data_endpoints.items()}})
        self.local = len(self.peer_pids) == size - 1  # every rank on this host
        self.transport.connect({p: v["endpoint"] for p, v in enumerate(peers)},
                               {p: v["data"][str(rank)] for p, v in enumerate(peers) if p < rank})
        use_shm = self.options.get("shm", os.environ.get("DISTRIB_ZMQ_SHM", "1") != "0")
        slot = os.environ.get("DISTRIB_SHM_SLOT_BYTES")
        slot = int(slot) if slot else None
        if size > 1 and self.local and use_shm:
            self.shm = _shm.setup(store, rank, size, slot)
            if self.shm is not None:
                self.shm.owner = self
        elif size > 1 and use_shm and _hierarchical.enabled():
            self.hierarchy = _hierarchical.setup(self, [v["host"] for v in peers], slot)
        if debug.mode() != "OFF":  # two network namespaces share a boot id: say which path was chosen
            path = ("shared memory (every rank on this host)" if self.shm is not None else
                    "TCP, all_reduce hierarchical (shared memory on each host)" if self.hierarchy is not None
                    else "TCP")
            print(f"[DISTRIB_DEBUG] zmq backend, rank {rank}/{size}: collectives over {path}", file=sys.stderr)

    def alloc_comm_buffer(self, nbytes):
        return self.shm.alloc_buffer(self.store, nbytes) if self.shm is not None else None

    def begin_op(self, name, seq):
        super().begin_op(name, seq)
        if self.shm is not None:
            self.shm.mark_op(seq)
        elif self.hierarchy is not None:
            self.hierarchy.mark_op(seq)

    # ------------------------------------------------------------ messaging helpers
    def _send(self, peer, step, piece, data=None):
        """Queue message (step, piece) for ``peer``; returns its zero-copy tracker or None."""
        try:
            return self.transport.send_coll(peer, header(COLL, self.op_seq, step, piece), data,
                                            self.deadline() - self.query_slack(), self.check_peers)
        except TimeoutError:
            self._timed_out([peer])

    def _recv(self, peer, step, piece, into=None):
        """The frame of message (step, piece) from ``peer``; with ``into``, its payload lands there."""
        hdr = header(COLL, self.op_seq, step, piece)
        got = self.transport.recv_coll(peer, hdr, self.deadline() - self.query_slack(), self.check_peers, into)
        if got is None:
            self._timed_out([peer])
        if into is not None and got != into.nbytes:
            self._size_mismatch(got // into.itemsize, into.size)
        return got

    def _size_mismatch(self, got: int, expected: int):
        raise self.op_error(size_mismatch_reason(got, expected))

    def query_progress(self, peers, seconds):
        return self.transport.query_progress(peers, seconds)

    def _timed_out(self, waiting_for) -> None:
        raise self.op_error(*self.timeout_reason(waiting_for))

    def _into(self, dst: np.ndarray, peer, step, piece) -> None:
        """Receive message (step, piece) from ``peer`` straight into ``dst`` (contiguous)."""
        self._recv(peer, step, piece, into=dst)

    def _reduce_from(self, f, dst: np.ndarray, frame) -> None:
        src = np.frombuffer(frame.buffer, dtype=dst.dtype)
        if src.size != dst.size:
            self._size_mismatch(src.size, dst.size)
        f(dst, src, out=dst)

    def _flush(self) -> None:
        if not self.transport.flush_coll(self.deadline()):
            self._timed_out([])

    def _per(self, x) -> int:
        return max(1, _PIECE // x.itemsize)

    # ------------------------------------------------------------ collectives
    def all_reduce(self, x, op):
        if self.size == 1:
            reduce_op.finish(op, x, 1)
        elif self.shm is not None:
            self.shm.all_reduce(x, op)
        elif self.hierarchy is not None and x.nbytes > _SMALL:  # small: one direct exchange is faster
            self.hierarchy.all_reduce(x, op)
        elif self.size == 2 and x.nbytes <= _PAIR_MAX:
            self._all_reduce_pair(x, op)
        elif x.nbytes <= _SMALL:
            self._all_reduce_direct(x, op)
        else:
            self._ring_reduce_scatter(x, op, gather=True)
            self._ring_all_gather(x, self._bounds(x.size), sent=True)
            self._flush()

    def _all_reduce_direct(self, x, op):
        for p in range(self.size):
            if p != self.rank:
                self._send(p, 0, 0, x.tobytes())
        frames = {p: self._recv(p, 0, 0) for p in range(self.size) if p != self.rank}
        mine = x.copy()
        views = [mine if p == self.rank else np.frombuffer(frames[p].buffer, x.dtype) for p in range(self.size)]
        for v in views:
            if v.size != x.size:
                self._size_mismatch(v.size, x.size)
        reduce_op.reduce_in_rank_order(op, views, out=x)

    def _all_reduce_pair(self, x, op):
        """Two ranks: each sends its whole tensor and reduces everything, in rank order (so
        both get bitwise the same result). The same bytes cross the wire as in the ring, but
        in one step with no dependency between the directions: for small and medium sizes
        that beats the ring's two dependent steps. Larger tensors take the ring, which
        reduces half as much."""
        peer = 1 - self.rank
        pieces = _pieces(0, x.size, self._per(x))
        trackers = [self._send(peer, 0, i, x[lo:hi]) for i, (lo, hi) in enumerate(pieces)]
        for i, (lo, hi) in enumerate(pieces):
            frame = self._recv(peer, 0, i)
            theirs = np.frombuffer(frame.buffer, x.dtype)
            if theirs.size != hi - lo:
                self._size_mismatch(theirs.size, hi - lo)
            # libzmq may still be reading this piece of x for our own send (zero-copy).
            if not self.transport.wait_sent(trackers[i], self.deadline()):
                self._timed_out([])
            mine = x[lo:hi]
            reduce_op.reduce_in_rank_order(op, [mine, theirs] if self.rank == 0 else [theirs, mine], out=mine)
        self._flush()

    def _bounds(self, count):
        return [count * j // self.size for j in range(self.size + 1)]

    def _ring_reduce_scatter(self, x, op, gather=False):
        """Ring reduce-scatter in place on flat ``x``; rank r ends with segment r reduced.

        Pipelined piece by piece: a piece is forwarded to the right as soon as it is reduced,
        so every step overlaps the next. With ``gather`` the finished pieces of our own
        segment go straight out as step 0 of the all-gather (``_ring_all_gather(sent=True)``).
        """
        n, me, per = self.size, self.rank, self._per(x)
        right, left = (me + 1) % n, (me - 1) % n
        b, f = self._bounds(x.size), reduce_op.ufunc(op, x.dtype)
        first = (me - 1) % n
        for i, (lo, hi) in enumerate(_pieces(b[first], b[first + 1], per)):
            self._send(right, 0, i, x[lo:hi])
        for step in range(n - 1):
            recv_seg = (me - step - 2) % n
            last = step == n - 2
            for i, (lo, hi) in enumerate(_pieces(b[recv_seg], b[recv_seg + 1], per)):
                piece = x[lo:hi]
                self._reduce_from(f, piece, self._recv(left, step, i))
                if not last:
                    self._send(right, step + 1, i, piece)
                elif gather:
                    reduce_op.finish(op, piece, n)
                    self._send(right, 1000, i, piece)

    def _ring_all_gather(self, x, b, sent=False):
        """Ring all-gather in place: rank r owns segment ``b[r]:b[r+1]`` of flat ``x``.

        Pieces are forwarded as they arrive; ``sent``: step 0 already went out.
        """
        n, me, per = self.size, self.rank, self._per(x)
        right, left = (me + 1) % n, (me - 1) % n
        if not sent:
            for i, (lo, hi) in enumerate(_pieces(b[me], b[me + 1], per)):
                self._send(right, 1000, i, x[lo:hi])
        for step in range(n - 1):
            recv_seg = (me - step - 1) % n
            for i, (lo, hi) in enumerate(_pieces(b[recv_seg], b[recv_seg + 1], per)):
                self._into(x[lo:hi], left, 1000 + step, i)
                if step < n - 2:
                    self._send(right, 1001 + step, i, x[lo:hi])

    def broadcast(self, x, root):
        if self.size == 1:
            return
        if self.shm is not None:
            return self.shm.broadcast(x, root)
        n = self.size
        vr = (self.rank - root) % n
        parent = None if vr == 0 else ((vr & (vr - 1)) + root) % n  # clear the lowest set bit
        children, bit = [], 1
        while bit < n:
            if vr + bit < n and (vr == 0 or bit < (vr & -vr)):
                children.append((vr + bit + root) % n)
            bit <<= 1
        for i, (lo, hi) in enumerate(_pieces(0, x.size, self._per(x))):
            if parent is not None:
                self._into(x[lo:hi], parent, 0, i)
            for child in children:
                self._send(child, 0, i, x[lo:hi])
        self._flush()

    def reduce(self, x, root, op):
        if self.shm is None and self.size > 1 and x.nbytes > _SMALL:
            work = x if self.rank == root else x.copy()
            self._ring_reduce_scatter(work, op)
            b = self._bounds(x.size)
            if self.rank != root:
                self._send(root, 2000, 0, work[b[self.rank]: b[self.rank + 1]])
            else:
                for p in range(self.size):
                    if p != root:
                        self._into(work[b[p]: b[p + 1]], p, 2000, 0)
                reduce_op.finish(op, work, self.size)
            self._flush()
            return
        super().reduce(x, root, op)

    def all_gather(self, output, x):
        if self.size == 1:
            np.copyto(output, x.reshape(-1))
        elif self.shm is not None:
            self.shm.all_gather(output, x.reshape(-1))
        else:
            np.copyto(output.reshape(self.size, -1)[self.rank], x.reshape(-1))
            self._ring_all_gather(output, [x.size * r for r in range(self.size + 1)])
            self._flush()

    def reduce_scatter(self, output, x, op):
        if self.size == 1:
            np.copyto(output, x.reshape(output.shape))
            reduce_op.finish(op, output, 1)
        elif self.shm is not None:
            self.shm.reduce_scatter(output.reshape(-1), x.reshape(-1), op)
        else:
            work = x.reshape(-1).copy()
            self._ring_reduce_scatter(work, op)
            m = output.size
            np.copyto(output.reshape(-1), work[self.rank * m: (self.rank + 1) * m])
            reduce_op.finish(op, output, self.size)
            self._flush()

    def gather(self, output, x, root):
        if self.rank != root:
            self._send(root, 0, 0, x.reshape(-1))
            return self._flush()
        out = output.reshape(self.size, -1)
        np.copyto(out[root], x.reshape(-1))
        for p in range(self.size):
            if p != root:
                self._into(out[p], p, 0, 0)

    def scatter(self, output, x, root):
        if self.rank == root:
            blocks = x.reshape(self.size, -1)
            for p in range(self.size):
                if p != root:
                    self._send(p, 0, 0, blocks[p])
            np.copyto(output.reshape(-1), blocks[root])
            return self._flush()
        self._into(output.reshape(-1), root, 0, 0)

    def all_to_all(self, output, x, output_counts, input_counts):
        ins = np.concatenate([[0], np.cumsum(input_counts)]).astype(int)
        outs = np.concatenate([[0], np.cumsum(output_counts)]).astype(int)
        flat_in, flat_out = x.reshape(-1), output.reshape(-1)
        for p in range(self.size):
            if p != self.rank:
                self._send(p, 0, 0, flat_in[ins[p]: ins[p + 1]])
        np.copyto(flat_out[outs[self.rank]: outs[self.rank + 1]], flat_in[ins[self.rank]: ins[self.rank + 1]])
        for p in range(self.size):
            if p != self.rank:
                self._into(flat_out[outs[p]: outs[p + 1]], p, 0, 0)
        self._flush()

    def barrier(self):
        if self.size == 1:
            return
        if self.shm is not None:
            return self.shm.barrier()
        for p in range(self.size):
            if p != self.rank:
                self._send(p, 0, 0)
        for p in range(self.size):
            if p != self.rank:
                self._recv(p, 0, 0)

    # ------------------------------------------------------------ point to point
    def isend(self, x, dst, tag=0):
        self.check_peer_rank(dst, "send")
        self.transport.send(dst, header(P2P, tag), x.reshape(-1))
        work = Work("send")
        transport, deadline = self.transport, time.monotonic() + self.timeout

        def finish():
            ok = transport.flush(deadline)
            work._complete(None if ok else self.p2p_error(f"send to rank {dst} (tag {tag})", "did not complete"))

        if x.nbytes < (1 << 16):
            work._complete()
        else:
            threading.Thread(target=finish, name="distrib-isend", daemon=True).start()
        return work

    def send(self, x, dst, tag=0):
        self.check_peer_rank(dst, "send")
        self.transport.send(dst, header(P2P, tag), x.reshape(-1))
        if not self.transport.flush(time.monotonic() + self.timeout):
            raise self.p2p_error(f"send to rank {dst} (tag {tag})", f"did not complete within {self.timeout:g} s")

    def irecv(self, x, src, tag=0):
        if src is not None:
            self.check_peer_rank(src, "recv")
        pend = self.transport.post_recv(x, src, tag)
        work = Work("recv")
        backend = self
        who = "any rank" if src is None else f"rank {src}"

        def wait(timeout=None):
            seconds = backend.timeout if timeout is None else _seconds(timeout)
            if not pend.done.wait(seconds):
                backend.transport.cancel_recv(pend)
                raise backend.p2p_error(f"recv from {who} (tag {tag})", f"timed out after {seconds:g} s")
            if pend.error:
                raise backend.p2p_error(f"recv from {who} (tag {tag})", pend.error)
            work._result = pend.source
            work._complete()
            return True

        work.wait = wait
        work.is_completed = pend.done.is_set
        work.source_rank = lambda: pend.source
        return work

    def shutdown(self):
        if self.shm is not None:
            self.shm.close()
            self.shm = None
        if self.hierarchy is not None:
            self.hierarchy.close()
            self.hierarchy = None
        self.transport.close()
