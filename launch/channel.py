"""The wire between the launchers of a multi-node job: framed, authenticated JSON, and heartbeats.

Messages are JSON (never pickle: nothing a peer sends is executed), each framed by its
length and authenticated. :class:`Channel` is one connection, used by the coordinator
(``launch/coordinator.py``, the server side) and by every launcher (:func:`connect`).

Note [Rendezvous authentication]
    With ``DISTRIB_AUTH_KEY`` set (the same on every node), both sides prove knowledge of it
    by HMAC over two fresh nonces, and every later message carries an HMAC under a session
    key with a sequence number, so the key never crosses the wire and a peer without it is
    refused before anything it sends is parsed beyond the handshake. Without a key, node 0
    makes a fresh one for the job and hands it to the other nodes in ``assign`` (like
    torchrun, anyone who can reach the port can join; a notice says so).

Note [Heartbeats]
    TCP alone does not notice a partition in useful time: a connection with unacknowledged
    data is not probed by keepalive, and its retransmissions go on for about 15 minutes, so
    two launchers that each sent a message across a dead link waited for each other that
    long. So each end sends ``heartbeat`` every ``--heartbeat-interval`` seconds and counts
    any frame from the other end as a sign of life; a peer silent for ``LOST_AFTER``
    intervals is lost. A launcher beats from a thread of its own (it keeps beating while it
    stops its workers), the coordinator from its coordinating thread (a wedged coordinator
    falls silent). Heartbeats never reach an inbox.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import select
import socket
import struct
import threading
import time

__all__ = ["Channel", "connect", "RendezvousError", "HeartbeatSender", "LOST_AFTER"]

_HEADER = struct.Struct("!I")
_MAC_SIZE = 32
_MAX_HANDSHAKE = 4096
_MAX_MESSAGE = 16 << 20
_HEARTBEAT = {"op": "heartbeat"}
LOST_AFTER = 3  # heartbeat intervals of silence after which a peer is lost (Note [Heartbeats])


class RendezvousError(RuntimeError):
    """The rendezvous failed: unreachable server, bad key, timeout."""


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"|".join(parts), hashlib.sha256).digest()


class Channel:
    """One authenticated, framed JSON connection (see Note [Rendezvous authentication]).

    ``send_timeout`` bounds one ``send``: a peer that takes no data for that long is as
    good as lost (``send`` raises ``TimeoutError``, an ``OSError``).
    """

    def __init__(self, sock: socket.socket, role: str, send_timeout: float = 30.0) -> None:
        self.sock, self.role = sock, role
        self.peer_role = "server" if role == "client" else "client"
        self.session = b""
        self.sent = self.received = 0
        self.buffer = b""
        self.inbox: list[dict] = []
        self.limit = _MAX_HANDSHAKE
        self.heard = time.monotonic()  # when the last frame arrived
        self._send_lock = threading.Lock()  # the heartbeat thread sends too
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(send_timeout)  # bounds sendall; reads happen only after select() says readable

    def fileno(self) -> int:
        """The socket's file descriptor, for select()."""
        return self.sock.fileno()

    # ---- framing
    def _send_raw(self, payload: bytes) -> None:
        self.sock.sendall(_HEADER.pack(len(payload)) + payload)

    def _frames(self) -> list[bytes]:
        frames = []
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if size > self.limit:
                raise RendezvousError(f"rendezvous: a {size}-byte message from the {self.peer_role} is too large")
            if len(self.buffer) < _HEADER.size + size:
                break
            frames.append(self.buffer[_HEADER.size:_HEADER.size + size])
            self.buffer = self.buffer[_HEADER.size + size:]
        return frames

    def _pump(self) -> list[bytes]:
        """Read what is available; raises ConnectionError on EOF."""
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError(f"the rendezvous {self.peer_role} closed the connection")
        self.buffer += data
        return self._frames()

    def _recv_raw(self, deadline: float) -> bytes:
        frames = self._frames()
        while not frames:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"rendezvous: no reply from the {self.peer_role} in time")
            if select.select([self.sock], [], [], remaining)[0]:
                frames = self._pump()
        if len(frames) > 1:  # keep the rest for later
            self.buffer = b"".join(_HEADER.pack(len(f)) + f for f in frames[1:]) + self.buffer
        return frames[0]

    # ---- messages
    def send(self, message: dict) -> None:
        """Send one message. Raises OSError (TimeoutError after ``send_timeout``)."""
        payload = json.dumps(message).encode()
        with self._send_lock:
            tag = _mac(self.session, self.role.encode(), str(self.sent).encode(), payload)
            self.sent += 1
            self._send_raw(tag + payload)

    def heartbeat(self) -> None:
        """Send a heartbeat (see Note [Heartbeats]). Raises OSError."""
        self.send(_HEARTBEAT)

    def _open(self, frame: bytes) -> dict:
        tag, payload = frame[:_MAC_SIZE], frame[_MAC_SIZE:]
        expected = _mac(self.session, self.peer_role.encode(), str(self.received).encode(), payload)
        if not hmac.compare_digest(tag, expected):
            raise RendezvousError(f"rendezvous: a message from the {self.peer_role} failed authentication")
        self.received += 1
        return json.loads(payload)

    def poll(self) -> None:
        """Read what the socket has into the inbox (call when select() says it is readable).

        Any frame refreshes :attr:`heard`; heartbeats go no further. Raises ConnectionError
        when the peer closed the connection, RendezvousError on a forged or oversized frame.
        """
        frames = self._pump()
        if frames:
            self.heard = time.monotonic()
        for frame in frames:
            message = self._open(frame)
            if message != _HEARTBEAT:
                self.inbox.append(message)

    def poll_ready(self) -> None:
        """:meth:`poll` if the socket is readable now, without blocking."""
        if select.select([self.sock], [], [], 0)[0]:
            self.poll()

    def silence(self) -> float:
        """Seconds since the last frame from the peer."""
        return time.monotonic() - self.heard

    def take(self) -> list[dict]:
        """The messages received so far, oldest first, emptying the inbox."""
        messages, self.inbox = self.inbox, []
        return messages

    # ---- handshake
    def handshake(self, key: bytes | None, timeout: float = 30.0) -> None:
        """Mutual proof of ``key`` over fresh nonces; sets the session key for later messages.

        Raises RendezvousError when the keys differ, OSError when the peer is slow or gone.
        """
        deadline = time.monotonic() + timeout
        secret = key or b""
        if self.role == "server":
            server_nonce = os.urandom(16).hex()
            self._send_raw(json.dumps({"nonce": server_nonce, "auth": key is not None}).encode())
            hello = json.loads(self._recv_raw(deadline))
            client_nonce = str(hello.get("nonce", ""))
            proof = _mac(secret, b"client", server_nonce.encode(), client_nonce.encode()).hex()
            if not hmac.compare_digest(str(hello.get("proof", "")), proof):
                self._send_raw(json.dumps({"error": "authentication failed"}).encode())
                raise RendezvousError("a launcher with a different DISTRIB_AUTH_KEY tried to join")
            self._send_raw(json.dumps(
                {"proof": _mac(secret, b"server", server_nonce.encode(), client_nonce.encode()).hex()}).encode())
        else:
            hello = json.loads(self._recv_raw(deadline))
            server_nonce, client_nonce = str(hello.get("nonce", "")), os.urandom(16).hex()
            if hello.get("auth") and key is None:
                raise RendezvousError("the rendezvous server requires DISTRIB_AUTH_KEY: set the same value on "
                                      "every node")
            self._send_raw(json.dumps({"nonce": client_nonce, "proof": _mac(
                secret, b"client", server_nonce.encode(), client_nonce.encode()).hex()}).encode())
            reply = json.loads(self._recv_raw(deadline))
            proof = _mac(secret, b"server", server_nonce.encode(), client_nonce.encode()).hex()
            if not hmac.compare_digest(str(reply.get("proof", "")), proof):
                raise RendezvousError("the rendezvous server refused this launcher: DISTRIB_AUTH_KEY must be the "
                                      "same on every node (or unset on all)")
        self.session = _mac(secret, b"session", server_nonce.encode(), client_nonce.encode())
        self.limit = _MAX_MESSAGE
        self.heard = time.monotonic()

    def shutdown(self) -> None:
        """Shut the connection down in both directions; a thread blocked reading it wakes to EOF."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        """Close the socket (errors ignored: it may be gone already)."""
        try:
            self.sock.close()
        except OSError:
            pass


def connect(host: str, port: int, key: bytes | None, deadline: float, give_up=lambda: False,
            send_timeout: float = 30.0) -> Channel:
    """Connect to the coordinator and authenticate, retrying until ``deadline`` (it may start later,
    or be across a link that is down for now).

    Raises RendezvousError when the deadline passes or the keys differ.
    """
    last = None
    while time.monotonic() < deadline and not give_up():
        remaining = deadline - time.monotonic()
        try:
            # a short connect timeout: a SYN lost while the link was down is retried at once
            sock = socket.create_connection((host, port), timeout=min(2.0, max(0.1, remaining)))
        except OSError as exc:
            last = exc
            time.sleep(0.05)
            continue
        channel = Channel(sock, "client", send_timeout)
        try:
            channel.handshake(key, timeout=min(30.0, max(1.0, remaining)))
        except OSError as exc:  # ValueError (bad JSON) and RendezvousError (bad key) are not retried
            channel.close()
            last = exc
            continue
        return channel
    raise RendezvousError(f"could not reach the rendezvous server at {host}:{port} (the node-rank-0 launcher) "
                          f"in time: {last}")


class HeartbeatSender:
    """A daemon thread that sends a heartbeat on ``channel`` every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, channel: Channel, interval: float) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(channel, interval), daemon=True,
                                        name="distrib-heartbeat")
        self._thread.start()

    def _beat(self, channel: Channel, interval: float) -> None:
        while not self._stopped.wait(interval):
            try:
                channel.heartbeat()
            except OSError:  # the connection is gone: the reader notices and says why
                return

    def stop(self) -> None:
        """Stop beating; returns once the thread is gone (at most one send timeout)."""
        self._stopped.set()
        self._thread.join()
