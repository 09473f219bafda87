"""``TCPStore``: a store served over ZeroMQ by one process (rank 0 or the launcher).

The server is a ROUTER socket on a background thread holding a ``KVTable``.
Requests are ``[request id, op, args...]`` frames; ``get`` and ``wait`` for keys not
yet set are parked on the server and answered when the keys appear, so waiting costs
no polling. Each client thread has its own DEALER socket. With ``DISTRIB_AUTH_KEY``
set, server and clients use CURVE (see Note [Auth key] in ``distrib/security.py``).
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time

import zmq

from .. import security
from ..errors import DistNetworkError, DistStoreError
from .base import DEFAULT_TIMEOUT, KVTable, Store

__all__ = ["TCPStore"]

_WORKERS = "__distrib_tcpstore_workers"


def _resolve(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError as exc:
        raise DistNetworkError(f"TCPStore: cannot resolve host {host!r}: {exc}") from exc


class _Server:
    """The store's server thread. ``bind`` raises DistNetworkError naming host, port and reason."""

    def __init__(self, host: str, port: int, key: bytes | None) -> None:
        ctx = security.context()
        self.sock = ctx.socket(zmq.ROUTER)
        self.sock.linger = 0
        security.secure_server(self.sock, key)
        address = _resolve(host)
        try:
            if port == 0:
                self.port = self.sock.bind_to_random_port(f"tcp://{address}", 20000, 60000, 500)
            else:
                self.sock.bind(f"tcp://{address}:{port}")
                self.port = port
        except zmq.ZMQError as exc:
            self.sock.close(0)
            raise DistNetworkError(
                f"TCPStore: failed to bind the server to {host}:{port} ({address}): {exc.strerror}; "
                "help: pick another MASTER_PORT, or port 0 for a free one"
            ) from exc
        self.table = KVTable()
        self.waiting: list[tuple[bytes, bytes, list[str], bytes]] = []  # (identity, id, keys, op)
        self._stop_r = ctx.socket(zmq.PAIR)
        self._stop_w = ctx.socket(zmq.PAIR)
        endpoint = f"inproc://distrib-store-stop-{id(self)}"
        self._stop_r.bind(endpoint)
        self._stop_w.connect(endpoint)
        self.thread = threading.Thread(target=self._loop, name="distrib-TCPStore-server", daemon=True)
        self.thread.start()

    def _reply(self, ident, rid, *frames) -> None:
        self.sock.send_multipart([ident, rid, *frames])

    def _serve_waiting(self) -> None:
        still = []
        for ident, rid, keys, op in self.waiting:
            if self.table.check(keys):
                value = self.table.get(keys[0]) if op == b"get" else b""
                if value is None:
                    still.append((ident, rid, keys, op))
                    continue
                self._reply(ident, rid, b"ok", value)
            else:
                still.append((ident, rid, keys, op))
        self.waiting = still

    def _handle(self, ident: bytes, rid: bytes, op: bytes, args: list[bytes]) -> None:
        t = self.table
        if op == b"set":
            t.set(args[0].decode(), args[1])
            self._reply(ident, rid, b"ok")
            self._serve_waiting()
        elif op in (b"get", b"wait"):
            keys = [a.decode() for a in args]
            if t.check(keys):
                self._reply(ident, rid, b"ok", t.get(keys[0]) if op == b"get" else b"")
            else:
                self.waiting.append((ident, rid, keys, op))
        elif op == b"add":
            value = t.add(args[0].decode(), int(args[1]))
            self._reply(ident, rid, b"ok", str(value).encode())
            self._serve_waiting()
        elif op == b"cas":
            value = t.compare_set(args[0].decode(), args[1], args[2])
            self._reply(ident, rid, b"ok", value)
            self._serve_waiting()
        elif op == b"check":
            self._reply(ident, rid, b"ok", b"1" if t.check([a.decode() for a in args]) else b"0")
        elif op == b"del":
            self._reply(ident, rid, b"ok", b"1" if t.delete(args[0].decode()) else b"0")
        elif op == b"num":
            with t.cond:
                count = sum(1 for k in t.data if not k.startswith(_WORKERS))
            self._reply(ident, rid, b"ok", str(count).encode())
        elif op == b"cancel":  # a client gave up waiting: forget its parked request
            self.waiting = [w for w in self.waiting if not (w[0] == ident and w[1] == args[0])]
        else:
            self._reply(ident, rid, b"err", b"unknown op " + op[:32])

    def _loop(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self._stop_r, zmq.POLLIN)
        while True:
            events = dict(poller.poll())
            if self._stop_r in events:
                break
            frames = self.sock.recv_multipart()
            if len(frames) < 3:
                continue  # malformed: ignore
            try:
                self._handle(frames[0], frames[1], frames[2], frames[3:])
            except (IndexError, ValueError, UnicodeDecodeError, DistStoreError) as exc:
                self._reply(frames[0], frames[1], b"err", str(exc).encode())
        self.sock.close(0)
        self._stop_r.close(0)

    def stop(self) -> None:
        if self.thread.is_alive():
            self._stop_w.send(b"")
            self.thread.join(5)
        self._stop_w.close(0)


class TCPStore(Store):
    """A store served by the master over TCP (ZeroMQ).

    Args:
        host_name: the server's host; the master binds to this address only.
        port: the server's port; 0 picks a free one, read it back from ``.port``.
        world_size: the number of clients; with ``wait_for_workers`` the master waits for them all.
        is_master: run the server in this process.
        timeout: the default timeout of blocking calls and of connecting.

    >>> s = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    >>> s.set("k", "v"); s.get("k")
    b'v'
    """

    def __init__(self, host_name: str, port: int, world_size: int | None = None, is_master: bool = False,
                 timeout=DEFAULT_TIMEOUT, wait_for_workers: bool = True, multi_tenant: bool = False,
                 master_listen_fd=None, use_libuv: bool = True) -> None:
        super().__init__(timeout)
        self.host, self.world_size = host_name, world_size
        self._key = security.auth_key()
        self._server = _Server(host_name, int(port), self._key) if is_master else None
        self.port = self._server.port if self._server else int(port)
        self._endpoint = f"tcp://{_resolve(host_name)}:{self.port}"
        self._local = threading.local()
        self._sockets: list = []
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._closed = False
        joined = int(self._request(b"add", _WORKERS.encode(), b"1", what="connect"))
        self._request(b"set", f"{_WORKERS}/{joined}".encode(), b"")
        if is_master and wait_for_workers and world_size:
            self._wait_for_workers(world_size)

    def _wait_for_workers(self, world_size: int) -> None:
        keys = [f"{_WORKERS}/{i}" for i in range(1, world_size + 1)]
        if not self._wait(keys, self._timeout):
            joined = int(self._request(b"get", _WORKERS.encode()))
            raise DistStoreError(
                f"TCPStore: timed out after {self._timeout:g} s waiting for workers: "
                f"{joined} of {world_size} connected to {self.host}:{self.port}"
            )

    # ------------------------------------------------------------ transport
    def _socket(self) -> zmq.Socket:
        sock = getattr(self._local, "sock", None)
        if sock is None or self._pid != os.getpid():
            sock = security.context().socket(zmq.DEALER)
            sock.linger = 0
            security.secure_client(sock, self._key)
            sock.connect(self._endpoint)
            self._local.sock = sock
            with self._lock:
                self._sockets.append(sock)
        return sock

    def _request(self, op: bytes, *args: bytes, timeout: float | None = None, what: str = ""):
        if self._closed:
            raise DistStoreError("TCPStore: the store is closed")
        sock = self._socket()
        rid = str(next(self._ids)).encode()
        sock.send_multipart([rid, op, *args])
        seconds = self._timeout if timeout is None else timeout
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sock.poll(max(1, int(left * 1000))):
                if op in (b"get", b"wait"):
                    sock.send_multipart([str(next(self._ids)).encode(), b"cancel", rid])
                    return None
                hint = " (with DISTRIB_AUTH_KEY set, every rank needs the same key)" if self._key else ""
                raise DistStoreError(
                    f"TCPStore: no answer from the server at {self.host}:{self.port} within {seconds:g} s "
                    f"({what or op.decode()}); help: check that the master is running and reachable{hint}"
                )
            frames = sock.recv_multipart()
            if frames[0] != rid:
                continue  # a late answer to a request that timed out
            if frames[1] != b"ok":
                raise DistStoreError(f"TCPStore: {op.decode()} failed: {frames[2].decode(errors='replace')}")
            return frames[2] if len(frames) > 2 else b""

    # ------------------------------------------------------------ primitives
    def _set(self, key, value):
        self._request(b"set", key.encode(), value)

    def get(self, key):
        value = self._request(b"get", key.encode(), timeout=self._timeout)
        if value is None:
            raise self._timeout_error([key], self._timeout)
        return value

    def _get_nowait(self, key):
        if not self._check([key]):
            return None
        return self.get(key)

    def _add(self, key, amount):
        return int(self._request(b"add", key.encode(), str(amount).encode()))

    def _compare_set(self, key, expected, desired):
        return self._request(b"cas", key.encode(), expected, desired)

    def _wait(self, keys, seconds):
        return self._request(b"wait", *[k.encode() for k in keys], timeout=seconds) is not None

    def _check(self, keys):
        return self._request(b"check", *[k.encode() for k in keys]) == b"1"

    def _delete(self, key):
        return self._request(b"del", key.encode()) == b"1"

    def _num_keys(self):
        return int(self._request(b"num"))

    # ------------------------------------------------------------ cleanup
    def close(self) -> None:
        """Close the client sockets and, on the master, stop the server."""
        if self._closed:
            return
        self._closed = True
        if self._pid == os.getpid():
            with self._lock:
                for sock in self._sockets:
                    sock.close(0)
            if self._server is not None:
                self._server.stop()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()
