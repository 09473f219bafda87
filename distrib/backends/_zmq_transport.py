"""Point-to-point messaging between the ranks of a group over ZeroMQ (TCP).

Two planes. Control and point-to-point: each rank binds one ROUTER socket and connects
one DEALER per peer (the DEALER's identity is the sender's rank). A receiver thread owns
the ROUTER: it completes pending point-to-point receives and answers progress queries
even while this rank's op thread is blocked (that is how a timed-out rank learns which
peers are missing).

Collectives: one PAIR socket per pair of ranks (the lower rank binds, the higher one
connects), read and written only by the thread running the group's current op (the
executor runs one op at a time; its lock orders the hand-over between threads). The op
thread polls the socket of the peer it expects data from itself, so a message costs no
thread hand-off, and ``recv_coll(..., into=array)`` lets libzmq copy the payload straight
into the destination. Messages that arrive early (another step or a later op) wait in a
stash keyed by ``(source, header)``. Large sends are zero-copy (``copy=False``): libzmq's
I/O thread streams them in the background while the op thread goes on; ``flush()`` waits
for them before the caller may touch the buffers again.
"""

from __future__ import annotations

import collections
import struct
import threading
import time

import numpy as np
import zmq

from .. import security

__all__ = ["Transport", "COLL", "P2P", "header"]

COLL, P2P, QUERY, REPLY = 0, 1, 2, 3
_HDR = struct.Struct("<Bqqq")
_ZERO_COPY_MIN = 1 << 16  # below this libzmq copies anyway; tracking would only cost time
_EMPTY = zmq.Frame(b"")


def _bytes(array: np.ndarray) -> memoryview:
    """A contiguous array's bytes, writable: through a uint8 view, since ``memoryview`` refuses
    the ml_dtypes types (bfloat16, float8) that ``cast("B")`` would need to read."""
    return memoryview(array.reshape(-1).view(np.uint8))


def header(kind: int, a: int = 0, b: int = 0, c: int = 0) -> bytes:
    return _HDR.pack(kind, a, b, c)


class _PendingRecv:
    __slots__ = ("src", "tag", "array", "done", "source", "error")

    def __init__(self, src, tag, array) -> None:
        self.src, self.tag, self.array = src, tag, array
        self.done = threading.Event()
        self.source, self.error = None, None


def _send_frame(sock, frame, flags: int, peer: int, deadline: float, check, **kwargs):
    """``sock.send`` that never blocks past ``deadline`` and runs ``check()`` while it waits."""
    while True:
        try:
            return sock.send(frame, flags | zmq.NOBLOCK, **kwargs)
        except zmq.Again:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"cannot send to rank {peer}: not connected") from None
            if not sock.poll(int(min(left, 0.1) * 1000) + 1, zmq.POLLOUT) and check is not None:
                check()


class Transport:
    """Messaging for one process group. ``progress`` returns this rank's (entered, finished) op seqs."""

    def __init__(self, rank: int, size: int, host: str, key: bytes | None, progress) -> None:
        self.rank, self.size, self.key, self.progress = rank, size, key, progress
        ctx = security.context()
        self.router = ctx.socket(zmq.ROUTER)
        self.router.linger = 0
        self.router.rcvhwm = 0
        security.secure_server(self.router, key)
        try:
            port = self.router.bind_to_random_port(f"tcp://{host}", 20000, 60000, 500)
        except zmq.ZMQError as exc:
            from ..errors import DistNetworkError  # noqa: PLC0415 - error path only

            self.router.close(0)
            raise DistNetworkError(f"zmq backend: cannot bind to {host} (port 0): {exc.strerror}") from exc
        self.endpoint = f"tcp://{host}:{port}"
        # Collective plane: a PAIR per peer; this rank binds those to higher ranks.
        self.data: dict[int, zmq.Socket] = {}
        self.data_endpoints: dict[int, str] = {}
        for peer in range(rank + 1, size):
            sock = self._data_socket(ctx)
            security.secure_server(sock, key)
            try:
                dport = sock.bind_to_random_port(f"tcp://{host}", 20000, 60000, 500)
            except zmq.ZMQError as exc:
                from ..errors import DistNetworkError  # noqa: PLC0415 - error path only

                for other in [sock, self.router, *self.data.values()]:
                    other.close(0)
                raise DistNetworkError(f"zmq backend: cannot bind to {host} (port 0): {exc.strerror}") from exc
            self.data[peer] = sock
            self.data_endpoints[peer] = f"tcp://{host}:{dport}"
        self.stash: dict[tuple[int, bytes], collections.deque] = {}
        self.coll_trackers: list = []
        self.dealers: dict[int, zmq.Socket] = {}
        self.cond = threading.Condition()
        self.p2p_stash: list[tuple[int, int, object]] = []  # arrival order, for src=None
        self.pending: list[_PendingRecv] = []
        self.replies: dict[int, tuple[int, int]] = {}
        self.trackers: list = []
        self.send_lock = threading.Lock()
        self._stop_w = ctx.socket(zmq.PAIR)
        self._stop_r = ctx.socket(zmq.PAIR)
        stop_ep = f"inproc://distrib-transport-stop-{id(self)}"
        self._stop_r.bind(stop_ep)
        self._stop_w.connect(stop_ep)
        self.closed = False
        self.thread = threading.Thread(target=self._receive_loop, name="distrib-zmq-recv", daemon=True)
        self.thread.start()

    @staticmethod
    def _data_socket(ctx) -> zmq.Socket:
        sock = ctx.socket(zmq.PAIR)
        sock.linger = 0
        sock.sndhwm = 0
        sock.rcvhwm = 0
        return sock

    def connect(self, endpoints: dict[int, str], data_endpoints: dict[int, str]) -> None:
        """Open a DEALER to every peer's endpoint, and the collective PAIRs to lower ranks
        (``data_endpoints[p]``: the endpoint rank ``p`` bound for this rank)."""
        ctx = security.context()
        for peer, endpoint in data_endpoints.items():
            if peer < self.rank:
                sock = self._data_socket(ctx)
                security.secure_client(sock, self.key)
                sock.connect(endpoint)
                self.data[peer] = sock
        for peer, endpoint in endpoints.items():
            if peer == self.rank:
                continue
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.sndhwm = 0
            sock.identity = str(self.rank).encode()
            security.secure_client(sock, self.key)
            sock.connect(endpoint)
            self.dealers[peer] = sock

    # ------------------------------------------------------------ receiving (receiver thread)
    def _receive_loop(self) -> None:
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self._stop_r, zmq.POLLIN)
        while True:
            events = dict(poller.poll())
            if self._stop_r in events:
                break
            while True:
                try:
                    frames = self.router.recv_multipart(zmq.NOBLOCK, copy=False)
                except zmq.Again:
                    break
                self._dispatch(frames)
        self.router.close(0)
        self._stop_r.close(0)

    def _dispatch(self, frames) -> None:
        if len(frames) < 2:
            return
        try:
            src = int(frames[0].bytes)
            hdr = frames[1].bytes
            kind, a, b, _ = _HDR.unpack(hdr)
        except (ValueError, struct.error):
            return  # not one of ours: ignore
        if not 0 <= src < self.size or src == self.rank:
            return
        payload = frames[2] if len(frames) > 2 else _EMPTY
        if kind == QUERY:
            entered, finished = self.progress()
            self.router.send_multipart([frames[0].bytes, header(REPLY, entered, finished)])
            return
        with self.cond:
            if kind == REPLY:
                self.replies[src] = (a, b)
            elif kind == P2P:
                for pend in self.pending:
                    if (pend.src is None or pend.src == src) and pend.tag == a:
                        self.pending.remove(pend)
                        self._fill(pend, src, payload)
                        break
                else:
                    self.p2p_stash.append((src, a, payload))
            # (collective messages travel on the PAIR sockets, never through the ROUTER)
            self.cond.notify_all()

    @staticmethod
    def _fill(pend: _PendingRecv, src: int, payload) -> None:
        buf = payload.buffer
        if buf.nbytes != pend.array.nbytes:
            pend.error = (f"rank {src} sent {buf.nbytes} bytes but the receiving tensor holds "
                          f"{pend.array.nbytes} (the shapes or dtypes of send and recv differ)")
        else:
            np.copyto(pend.array.reshape(-1), np.frombuffer(buf, dtype=pend.array.dtype))
        pend.source = src
        pend.done.set()

    # ------------------------------------------------------------ collective plane (op thread)
    def send_coll(self, peer: int, hdr: bytes, data=None, deadline: float = 0.0, check=None):
        """Queue ``data`` (a contiguous array, bytes or None) for ``peer``.

        Returns the zmq tracker of a zero-copy send (large arrays: call ``wait_sent`` or
        ``flush_coll`` before modifying them), else None. Raises TimeoutError at ``deadline``
        if the message cannot be queued: a bound PAIR refuses to queue until its peer has
        connected, which a peer that died during start-up never does. ``check()`` runs
        about every 100 ms while waiting and may raise (a peer that died mid-message
        blocks a PAIR socket just as well).
        """
        sock = self.data[peer]
        _send_frame(sock, hdr, zmq.SNDMORE, peer, deadline, check)
        if data is None:
            _send_frame(sock, b"", 0, peer, deadline, check)
            return None
        buf = _bytes(data) if isinstance(data, np.ndarray) else data
        if len(buf) >= _ZERO_COPY_MIN:
            tracker = _send_frame(sock, buf, 0, peer, deadline, check, copy=False, track=True)
            self.coll_trackers.append(tracker)
            return tracker
        _send_frame(sock, buf, 0, peer, deadline, check)
        return None

    def recv_coll(self, src: int, hdr: bytes, deadline: float, check=None, into=None):
        """The payload of the next collective message from ``src`` with header ``hdr``.

        Without ``into``: a zmq Frame (``.buffer`` is its bytes). With ``into`` (a writable
        contiguous array): the payload is copied into it and its byte count is returned (it
        differs from ``into.nbytes`` when the sender's array had another size). Returns None
        at ``deadline``; ``check()`` runs about every 100 ms while waiting and may raise.
        """
        queue = self.stash.get((src, hdr))
        if queue:
            frame = queue.popleft()
            if not queue:
                del self.stash[(src, hdr)]
            if into is None:
                return frame
            buf = frame.buffer
            if buf.nbytes == into.nbytes:
                _bytes(into)[:] = buf
            return buf.nbytes
        sock = self.data[src]
        while True:
            try:
                got = sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                if not sock.poll(int(min(left, 0.1) * 1000) + 1) and check is not None:
                    check()
                continue
            if got == hdr:
                if into is None:
                    return sock.recv(copy=False)
                return sock.recv_into(_bytes(into))
            self.stash.setdefault((src, got), collections.deque()).append(sock.recv(copy=False))

    @staticmethod
    def wait_sent(tracker, deadline: float) -> bool:
        """Wait until libzmq released one zero-copy send (``tracker`` None: it was copied)."""
        if tracker is None or tracker.done:
            return True
        try:
            tracker.wait(max(0.0, deadline - time.monotonic()))
        except zmq.NotDone:
            return False
        return True

    def flush_coll(self, deadline: float) -> bool:
        """Wait until libzmq released every zero-copy collective send; False at ``deadline``."""
        trackers = self.coll_trackers
        while trackers:
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise zmq.NotDone
                trackers[0].wait(left)
            except zmq.NotDone:
                return False
            trackers.pop(0)
        return True

    def post_recv(self, array, src: int | None, tag: int) -> _PendingRecv:
        """Register a receive into ``array``; completed by the receiver thread (or at once if stashed)."""
        pend = _PendingRecv(src, tag, array)
        with self.cond:
            for i, (s, t, payload) in enumerate(self.p2p_stash):
                if (src is None or s == src) and t == tag:
                    del self.p2p_stash[i]
                    self._fill(pend, s, payload)
                    return pend
            self.pending.append(pend)
        return pend

    def cancel_recv(self, pend: _PendingRecv) -> None:
        with self.cond:
            if pend in self.pending:
                self.pending.remove(pend)

    # ------------------------------------------------------------ sending (op threads)
    def send(self, peer: int, hdr: bytes, data=None, track: bool = True) -> None:
        """Queue ``data`` (a contiguous array or bytes) for ``peer``; never blocks.

        Large arrays are sent without a copy: call ``flush`` before modifying them.
        """
        sock = self.dealers[peer]
        with self.send_lock:
            if data is None:
                sock.send(hdr)
                return
            buf = _bytes(data) if isinstance(data, np.ndarray) else data
            if track and len(buf) >= _ZERO_COPY_MIN:
                sock.send(hdr, zmq.SNDMORE)
                tracker = sock.send(buf, copy=False, track=True)
                self.trackers.append(tracker)
            else:
                sock.send_multipart([hdr, buf], copy=True)

    def flush(self, deadline: float) -> bool:
        """Wait until libzmq released every zero-copy send buffer; False at ``deadline``."""
        with self.send_lock:
            trackers, self.trackers = self.trackers, []
        for i, tracker in enumerate(trackers):
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise zmq.NotDone
                tracker.wait(left)
            except zmq.NotDone:
                with self.send_lock:
                    self.trackers[:0] = trackers[i:]
                return False
        return True

    def query_progress(self, peers, wait: float) -> dict[int, tuple[int, int]]:
        """Ask ``peers`` which op they are at; returns the answers received within ``wait`` s."""
        with self.cond:
            for peer in peers:
                self.replies.pop(peer, None)
        for peer in peers:
            # The peer's receiver thread answers through its ROUTER, so the answer arrives on
            # our DEALER to that peer, which only this (op) thread reads.
            self.send(peer, header(QUERY))
        deadline = time.monotonic() + wait
        answers: dict[int, tuple[int, int]] = {}
        while len(answers) < len(peers) and time.monotonic() < deadline:
            for peer in peers:
                sock = self.dealers[peer]
                with self.send_lock:
                    if sock.poll(0):
                        frames = sock.recv_multipart()
                        kind, a, b, _ = _HDR.unpack(frames[-1])
                        if kind == REPLY:
                            answers[peer] = (a, b)
            if len(answers) < len(peers):
                time.sleep(0.005)
        return answers

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.thread.is_alive():
            self._stop_w.send(b"")
            self.thread.join(2)
        self._stop_w.close(0)
        for sock in [*self.dealers.values(), *self.data.values()]:
            # Let libzmq deliver what the last op queued (it keeps sending in the background
            # after close); 0 would drop it and leave a peer waiting for our data.
            sock.close(linger=2000)
        with self.cond:
            for pend in self.pending:
                pend.error = "the process group was destroyed"
                pend.done.set()
            self.pending.clear()
