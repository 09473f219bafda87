"""The coordinator of a multi-node job: the launchers meet on MASTER_ADDR:MASTER_PORT+1 and agree.

Not to be confused with ``distrib/rendezvous.py``, where the *workers* of a job find each
other. The node-rank-0 launcher runs a small TCP server (:class:`Coordinator`, threads);
every launcher, node 0 included, connects to it as a client (:class:`Channel`). Messages
are JSON (never pickle: nothing a peer sends is executed), framed by length and
authenticated.

Note [Rendezvous protocol]
    join    agent -> server  {node_rank, nproc, host}. When all nodes joined (N, or MIN:MAX
                             after a last call), the server replies to each:
    assign  server -> agent  {group_rank, group_world_size, rank_offset, world_size,
                              restart_count, run_id}. The agents start their workers.
    result  agent -> server  {ok, failures}: the local group finished, failed, or was stopped.
    stop    server -> agent  another node failed: stop your workers, then send a result.
    abort   agent -> server  this launcher got SIGINT/SIGTERM/SIGHUP: end the job, no restart.
    verdict server -> agent  ``done`` (exit 0), ``restart`` (rejoin with restart_count+1) or
                             ``fail`` {failures, exit_code, reason}.
    A dropped connection counts as a failure of that node.

Note [Rendezvous authentication]
    With ``DISTRIB_AUTH_KEY`` set (the same on every node), both sides prove knowledge of it
    by HMAC over two fresh nonces, and every later message carries an HMAC under a session
    key with a sequence number, so the key never crosses the wire and a peer without it is
    refused before anything it sends is parsed beyond the handshake. Without a key, node 0
    makes a fresh one for the job and hands it to the other nodes in ``assign`` (like
    torchrun, anyone who can reach the port can join; a notice says so).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import queue
import select
import socket
import struct
import threading
import time

__all__ = ["Channel", "Coordinator", "connect", "RendezvousError"]

_HEADER = struct.Struct("!I")
_MAC_SIZE = 32
_MAX_HANDSHAKE = 4096
_MAX_MESSAGE = 16 << 20
LAST_CALL = 2.0  # seconds to wait for more nodes once MIN have joined (MIN:MAX)


class RendezvousError(RuntimeError):
    """The rendezvous failed: unreachable server, bad key, timeout."""


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"|".join(parts), hashlib.sha256).digest()


def _keepalive(sock: socket.socket) -> None:
    """Notice a dead peer host within ~30 s, even when no message is due."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 4)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class Channel:
    """One authenticated, framed JSON connection (see Note [Rendezvous authentication])."""

    def __init__(self, sock: socket.socket, role: str) -> None:
        self.sock, self.role = sock, role
        self.peer_role = "server" if role == "client" else "client"
        self.session = b""
        self.sent = self.received = 0
        self.buffer = b""
        self.inbox: list[dict] = []
        self.limit = _MAX_HANDSHAKE
        sock.settimeout(30.0)  # bounds sendall; reads happen only after select() says readable

    def fileno(self) -> int:
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
        payload = json.dumps(message).encode()
        tag = _mac(self.session, self.role.encode(), str(self.sent).encode(), payload)
        self.sent += 1
        self._send_raw(tag + payload)

    def _open(self, frame: bytes) -> dict:
        tag, payload = frame[:_MAC_SIZE], frame[_MAC_SIZE:]
        expected = _mac(self.session, self.peer_role.encode(), str(self.received).encode(), payload)
        if not hmac.compare_digest(tag, expected):
            raise RendezvousError(f"rendezvous: a message from the {self.peer_role} failed authentication")
        self.received += 1
        return json.loads(payload)

    def poll(self) -> None:
        """Read what the socket has into the inbox (call when select() says it is readable).

        Raises ConnectionError when the peer closed the connection.
        """
        self.inbox.extend(self._open(frame) for frame in self._pump())

    def take(self) -> list[dict]:
        """The messages received so far, oldest first, emptying the inbox."""
        messages, self.inbox = self.inbox, []
        return messages

    # ---- handshake
    def handshake(self, key: bytes | None, timeout: float = 30.0) -> None:
        """Mutual proof of ``key`` over fresh nonces; sets the session key for later messages."""
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

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def connect(host: str, port: int, key: bytes | None, deadline: float, give_up=lambda: False) -> Channel:
    """Connect to the rendezvous server, retrying until ``deadline`` (it may start later)."""
    last = None
    while time.monotonic() < deadline and not give_up():
        try:
            sock = socket.create_connection((host, port), timeout=min(5.0, max(0.1, deadline - time.monotonic())))
        except OSError as exc:
            last = exc
            time.sleep(0.05)
            continue
        _keepalive(sock)
        channel = Channel(sock, "client")
        channel.handshake(key)
        return channel
    raise RendezvousError(f"could not reach the rendezvous server at {host}:{port} (the node-rank-0 launcher) "
                          f"in time: {last}")


class Coordinator:
    """The coordinator run by the node-rank-0 launcher (see Note [Rendezvous protocol])."""

    def __init__(self, host: str, port: int, key: bytes | None, min_nodes: int, max_nodes: int,
                 max_restarts: int, run_id: str, job_key: str, timeout: float, notice) -> None:
        self.key, self.min_nodes, self.max_nodes = key, min_nodes, max_nodes
        self.max_restarts, self.run_id, self.job_key, self.timeout = max_restarts, run_id, job_key, timeout
        self.notice = notice
        self.events: queue.Queue = queue.Queue()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind((host, port))
        except OSError as exc:
            self.listener.close()
            raise RendezvousError(f"the rendezvous server could not listen on {host}:{port}: {exc} "
                                  f"(is --master-addr this host, and is port {port} free?)") from exc
        self.listener.listen(64)
        self.channels: dict[int, Channel] = {}
        self.closing = False
        self.threads = [threading.Thread(target=self._accept, daemon=True, name="distrib-rdzv-accept"),
                        threading.Thread(target=self._coordinate, daemon=True, name="distrib-rdzv-coordinator")]

    def start(self) -> Coordinator:
        for thread in self.threads:
            thread.start()
        return self

    def join(self, timeout: float) -> None:
        self.threads[1].join(timeout)
        self.closing = True
        self.listener.close()

    # ---- connections
    def _accept(self) -> None:
        ids = 0
        while not self.closing:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            ids += 1
            threading.Thread(target=self._serve, args=(ids, sock), daemon=True, name=f"distrib-rdzv-{ids}").start()

    def _serve(self, conn_id: int, sock: socket.socket) -> None:
        _keepalive(sock)
        channel = Channel(sock, "server")
        try:
            channel.handshake(self.key, timeout=10.0)
        except (OSError, ValueError, RendezvousError) as exc:
            self.notice(f"rendezvous: refused a connection: {exc}")
            channel.close()
            return
        self.channels[conn_id] = channel
        try:
            while True:
                select.select([channel.sock], [], [])
                channel.poll()
                for message in channel.take():
                    self.events.put((conn_id, message))
        except (OSError, ValueError, RendezvousError):
            self.events.put((conn_id, None))

    def _send(self, conn_id: int, message: dict) -> None:
        channel = self.channels.get(conn_id)
        if channel is not None:
            try:
                channel.send(message)
            except OSError:
                pass

    # ---- the coordinator
    def _coordinate(self) -> None:
        restart_count = 0
        while True:
            members, verdict = self._gather()
            if verdict is not None:  # the rendezvous itself failed
                return self._finish(verdict, set(self.channels))
            outcome = self._run_round(members, restart_count)
            if outcome is None:
                return self._finish({"op": "done"}, members)
            if outcome.get("abort") or restart_count >= self.max_restarts:
                return self._finish(outcome["verdict"], set(self.channels))
            restart_count += 1
            for conn_id in members:
                self._send(conn_id, {"op": "restart", "restart_count": restart_count})

    def _gather(self):
        """Wait for the nodes of one round: ({conn_id: join}, None), or (None, a fail verdict)."""
        joined: dict[int, dict] = {}
        start, quorum_at = time.monotonic(), None
        while True:
            if len(joined) >= self.max_nodes or (quorum_at and time.monotonic() - quorum_at >= LAST_CALL):
                return joined, None
            waited = time.monotonic() - start
            if waited >= self.timeout:
                return None, {"op": "fail", "exit_code": 1, "failures": [],
                              "reason": f"rendezvous timed out after {self.timeout:.0f} s: {len(joined)} of "
                                        f"{self.min_nodes} node(s) joined"}
            try:
                conn_id, message = self.events.get(timeout=min(self.timeout - waited, LAST_CALL))
            except queue.Empty:
                continue
            if message is None:
                joined.pop(conn_id, None)
                self.channels.pop(conn_id, None)
            elif message.get("op") == "join":
                fixed = self.min_nodes == self.max_nodes
                if fixed and any(j["node_rank"] == message["node_rank"] for j in joined.values()):
                    self._send(conn_id, {"op": "fail", "exit_code": 1, "failures": [],
                                         "reason": f"two launchers have --node-rank {message['node_rank']}"})
                    continue
                joined[conn_id] = dict(message, arrival=len(joined))
                if len(joined) >= self.min_nodes and quorum_at is None:
                    quorum_at = time.monotonic()
            elif message.get("op") == "abort":
                return None, {"op": "fail", "exit_code": int(message.get("exit_code", 1)), "failures": [],
                              "reason": message.get("reason", "a launcher was stopped")}

    def _run_round(self, members: dict[int, dict], restart_count: int):
        """Assign ranks and wait for every node's result: None if all succeeded, else the failure outcome."""
        order = sorted(members, key=lambda c: (members[c]["node_rank"], members[c]["arrival"]))
        world_size = sum(int(members[c]["nproc"]) for c in order)
        offset = 0
        for group_rank, conn_id in enumerate(order):
            self._send(conn_id, {"op": "assign", "group_rank": group_rank, "group_world_size": len(order),
                                 "rank_offset": offset, "world_size": world_size, "restart_count": restart_count,
                                 "run_id": self.run_id, "auth_key": self.job_key})
            offset += int(members[conn_id]["nproc"])
        waiting, stopped, failures, abort, reason = set(order), set(), [], None, ""
        while waiting:
            conn_id, message = self.events.get()
            if conn_id not in waiting:
                if message is None:
                    self.channels.pop(conn_id, None)
                continue
            op = None if message is None else message.get("op")
            if op in (None, "result", "abort"):
                waiting.discard(conn_id)
            if op is None:
                info = members[conn_id]
                self.channels.pop(conn_id, None)
                reason = reason or f"lost node {info['node_rank']} ({info['host']}): its launcher exited"
            elif op == "result" and not message.get("ok"):
                failures.extend(message.get("failures", []))
            elif op == "abort":
                abort = abort or message
            else:
                continue
            if failures or abort or reason:
                for other in waiting - stopped:
                    self._send(other, {"op": "stop"})
                    stopped.add(other)
        if not (failures or abort or reason):
            return None
        if abort:
            verdict = {"op": "fail", "exit_code": int(abort.get("exit_code", 1)), "failures": failures,
                       "reason": abort.get("reason", "")}
        else:
            first = min(failures, key=lambda f: (f["time"] or 0, f["rank"])) if failures else None
            code = first and (128 - first["returncode"] if first["returncode"] < 0 else first["returncode"])
            verdict = {"op": "fail", "exit_code": code or 1, "failures": failures, "reason": reason}
        return {"abort": abort is not None, "verdict": verdict}

    def _finish(self, verdict: dict, conn_ids) -> None:
        for conn_id in list(conn_ids):
            self._send(conn_id, verdict)
