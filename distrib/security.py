"""Authentication of stores and transports: ZeroMQ CURVE keys derived from ``DISTRIB_AUTH_KEY``.

Note [Auth key]
    The launcher sets one random ``DISTRIB_AUTH_KEY`` per job. Every server socket
    (the TCPStore server, each rank's transport endpoint) runs CURVE with a key
    pair derived from it by HMAC-SHA256, and a ZAP handler that admits only clients
    whose public key is the one derived for clients. A peer without the key can
    neither complete the CURVE handshake (it does not know the server's public
    key) nor pass the ZAP check, so its messages never reach our code: nothing it
    sends is unpickled. The key itself never crosses the wire. Same-host shared
    memory segments are created with mode 0600 and unlinked once mapped.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading

import zmq
from zmq.utils import z85

__all__ = ["auth_key", "context", "secure_server", "secure_client"]

_lock = threading.Lock()
_state: dict = {}
_DOMAIN = "distrib"


def auth_key() -> bytes | None:
    """The job's shared secret from ``DISTRIB_AUTH_KEY`` (None when unset or empty)."""
    value = os.environ.get("DISTRIB_AUTH_KEY", "")
    return value.encode() if value else None


def context() -> zmq.Context:
    """The ZeroMQ context shared by the stores and transports of this process (fork-safe)."""
    with _lock:
        ctx = _state.get("ctx")
        if ctx is None or _state.get("pid") != os.getpid() or ctx.closed:
            ctx = zmq.Context(io_threads=1)
            _state.clear()
            _state.update(ctx=ctx, pid=os.getpid())
        return ctx


def _derive(key: bytes, role: str) -> tuple[bytes, bytes]:
    secret = hmac.new(key, b"distrib-curve-v1-" + role.encode(), hashlib.sha256).digest()
    secret_z85 = z85.encode(secret)
    return zmq.curve_public(secret_z85), secret_z85


class _ClientKeyCheck:
    def __init__(self, allowed: bytes) -> None:
        self.allowed = allowed

    def callback(self, domain, key) -> bool:
        return hmac.compare_digest(bytes(key), self.allowed)


def _ensure_authenticator(key: bytes) -> None:
    ctx = context()
    with _lock:
        if _state.get("auth_key") == key:
            return
        from zmq.auth.thread import ThreadAuthenticator  # noqa: PLC0415 - only with a key set

        old = _state.pop("authenticator", None)
        if old is not None:
            old.stop()
        authenticator = ThreadAuthenticator(ctx)
        authenticator.start()
        authenticator.configure_curve_callback(_DOMAIN, _ClientKeyCheck(_derive(key, "client")[0]))
        _state.update(authenticator=authenticator, auth_key=key)


def secure_server(sock: zmq.Socket, key: bytes | None) -> None:
    """Make ``sock`` a CURVE server admitting only clients holding ``key`` (no-op without a key)."""
    if key is None:
        return
    _ensure_authenticator(key)
    public, secret = _derive(key, "server")
    sock.curve_secretkey = secret
    sock.curve_publickey = public
    sock.curve_server = True
    sock.zap_domain = _DOMAIN.encode()


def secure_client(sock: zmq.Socket, key: bytes | None) -> None:
    """Make ``sock`` a CURVE client of servers keyed by ``key`` (no-op without a key)."""
    if key is None:
        return
    public, secret = _derive(key, "client")
    sock.curve_publickey = public
    sock.curve_secretkey = secret
    sock.curve_serverkey = _derive(key, "server")[0]
