"""The fake NCCL's transport: a bootstrap root per unique id, then one TCP socket per pair of ranks.

Every connection has a reader thread that drains it into an inbox, so a send never blocks on
the peer (as NCCL's buffered sends do not), and messages between two ranks arrive in order,
which is how NCCL matches them: operations are issued in the same order on every rank.
"""

from __future__ import annotations

import os
import pickle
import secrets
import socket
import struct
import threading

_FRAME = struct.Struct("<Q")
_ID = struct.Struct("<4sHi16s")  # magic, root port, root pid, nonce
INIT_TIMEOUT = float(os.environ.get("DISTRIB_CUPY_STANDIN_NCCL_INIT_TIMEOUT", "300"))


class PeerGone(ConnectionError):
    """A peer closed its end (it exited, or destroyed or aborted its communicator)."""


def _send_obj(sock: socket.socket, obj) -> None:
    data = pickle.dumps(obj)
    sock.sendall(_FRAME.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise PeerGone("connection closed")
        got += k
    return buf


def _recv_obj(sock: socket.socket):
    (n,) = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
    return pickle.loads(_recv_exact(sock, n))


def new_unique_id() -> tuple:
    """Start a bootstrap root in this process (a daemon thread) and name it in 128 signed chars."""
    listener = socket.create_server(("127.0.0.1", 0))
    nonce = secrets.token_bytes(16)
    threading.Thread(target=_serve_root, args=(listener, nonce), daemon=True, name="fake-nccl-root").start()
    raw = _ID.pack(b"FNCL", listener.getsockname()[1], os.getpid(), nonce).ljust(128, b"\0")
    return tuple(b - 256 if b > 127 else b for b in raw)


def _serve_root(listener: socket.socket, nonce: bytes) -> None:
    """Collect every rank's address, then tell each the table (one communicator per id)."""
    listener.settimeout(INIT_TIMEOUT)
    clients, table, size = [], {}, None
    try:
        while size is None or len(table) < size:
            sock, _ = listener.accept()
            hello = _recv_obj(sock)
            if hello["nonce"] != nonce:
                sock.close()
                continue
            size = hello["size"] if size is None else size
            table[hello["rank"]] = hello
            clients.append(sock)
        for sock in clients:
            _send_obj(sock, table)
    except (OSError, PeerGone):
        pass
    finally:
        for sock in clients:
            sock.close()
        listener.close()


def parse_unique_id(comm_id: tuple) -> tuple[int, bytes]:
    """``(root port, nonce)`` of a unique id; ValueError if it is not one of ours."""
    raw = bytes((b + 256) % 256 for b in comm_id)
    magic, port, _pid, nonce = _ID.unpack(raw[:_ID.size])
    if magic != b"FNCL":
        raise ValueError("not a unique id from get_unique_id()")
    return port, nonce


class Mesh:
    """Connections to every other rank of one communicator, with an inbox per peer."""

    def __init__(self, comm_id: tuple, size: int, rank: int, info: dict) -> None:
        port, nonce = parse_unique_id(comm_id)
        self.size, self.rank = size, rank
        listener = socket.create_server(("127.0.0.1", 0), backlog=max(size, 1))
        listener.settimeout(INIT_TIMEOUT)
        root = socket.create_connection(("127.0.0.1", port), timeout=INIT_TIMEOUT)
        try:
            _send_obj(root, {"nonce": nonce, "size": size, "rank": rank,
                             "port": listener.getsockname()[1], **info})
            self.table = _recv_obj(root)
        finally:
            root.close()
        self.socks: dict[int, socket.socket] = {}
        self._connect(listener)
        self.send_locks = {p: threading.Lock() for p in self.socks}
        self.inbox: dict[int, list] = {p: [] for p in self.socks}
        self.gone: dict[int, str] = {}
        self.cond = threading.Condition()
        self.closed = False
        for peer, sock in self.socks.items():
            threading.Thread(target=self._read, args=(peer, sock), daemon=True, name=f"fake-nccl-rx{peer}").start()

    def _connect(self, listener: socket.socket) -> None:
        """Connect to every lower rank; accept every higher one."""
        try:
            for peer in range(self.rank):
                sock = socket.create_connection(("127.0.0.1", self.table[peer]["port"]), timeout=INIT_TIMEOUT)
                sock.sendall(_FRAME.pack(self.rank))
                self.socks[peer] = sock
            while len(self.socks) < self.size - 1:
                sock, _ = listener.accept()
                (peer,) = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
                self.socks[peer] = sock
        finally:
            listener.close()
        for sock in self.socks.values():
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _read(self, peer: int, sock: socket.socket) -> None:
        try:
            while True:
                (n,) = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
                data = _recv_exact(sock, n)
                with self.cond:
                    self.inbox[peer].append(data)
                    self.cond.notify_all()
        except (OSError, PeerGone) as exc:
            with self.cond:
                self.gone[peer] = str(exc) or type(exc).__name__
                self.cond.notify_all()

    def send(self, peer: int, data) -> None:
        """Send one message (bytes-like) to ``peer``; PeerGone if it cannot be delivered."""
        if self.closed:
            raise PeerGone("communicator closed")
        try:
            with self.send_locks[peer]:
                self.socks[peer].sendall(_FRAME.pack(len(data)))
                self.socks[peer].sendall(data)
        except OSError as exc:
            raise PeerGone(f"send to rank {peer}: {exc}") from None

    def recv(self, peer: int, stop) -> bytearray:
        """The next message from ``peer``; PeerGone if it left first, None once ``stop()`` is true."""
        with self.cond:
            while not self.inbox[peer]:
                if stop() or self.closed:
                    return None
                if peer in self.gone:
                    raise PeerGone(f"rank {peer}: {self.gone[peer]}")
                self.cond.wait(0.05)
            return self.inbox[peer].pop(0)

    def close(self) -> None:
        """Close every connection (the peers then see this rank gone)."""
        self.closed = True
        for sock in self.socks.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        with self.cond:
            self.cond.notify_all()
