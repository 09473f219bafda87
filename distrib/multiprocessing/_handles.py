"""Handing shared segments to other processes: the sender's handle server and the receiver's side.

Note [handles]
A pickled shared tensor carries a *handle*: the segment's identity, its size, and a random
16-byte key under which the sender keeps the segment alive ("pending") until the receiver says
it is done. So ``q.put(tensor.randn(...))`` works even though the sender drops its tensor at once.

The receiver first looks the identity up in the segments it already maps (the weak-valued cache
in ``tensor/_shared.py``). On a hit, nothing else is needed: this is what makes sending an
already shared tensor O(1), a few microseconds, however big it is; and views of one segment
received separately share memory again, as they did in the sender. On a miss it opens the
segment: by name (``file_system``), or by asking the sender's server for the file descriptor,
which comes back over a Unix socket with SCM_RIGHTS (``file_descriptor``). Either way it then
sends the sender a one-datagram release for the key.

The server is one daemon thread per process, on an abstract Unix datagram socket (Linux; no file
to clean up). Keys are unguessable, so only a holder of the pickle can fetch the descriptor.
A handle that is pickled but never unpickled keeps its segment alive until the sender exits, as
PyTorch's pending descriptors do.
"""

from __future__ import annotations

import array
import os
import secrets
import socket
import threading
import time

from tensor import _shared

from .._procs import alive

_FETCH, _RELEASE, _REPLY_OK, _REPLY_MISSING = b"F", b"R", b"Y", b"N"
FETCH_TIMEOUT = float(os.environ.get("DISTRIB_SHM_FETCH_TIMEOUT", "60"))


class _Server:
    """The sender side: pending segments by key, and the thread that serves fetches and releases."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.address = f"\0distrib-handles-{self.pid}-{secrets.token_hex(8)}".encode()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(self.address)
        self.pending: dict[bytes, object] = {}
        threading.Thread(target=self._serve, name="distrib-handle-server", daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                message, reply_to = self.sock.recvfrom(64)
            except OSError:
                return
            kind, key = message[:1], message[1:]
            if kind == _RELEASE:
                self.pending.pop(key, None)
            elif kind == _FETCH:
                segment = self.pending.get(key)
                try:
                    if segment is None:
                        self.sock.sendto(_REPLY_MISSING, reply_to)
                    else:  # (socket.send_fds ignores its address argument before Python 3.12)
                        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [segment.fd]))]
                        self.sock.sendmsg([_REPLY_OK], rights, 0, reply_to)
                except OSError:
                    pass  # the fetcher gave up and closed its socket


_server_lock = threading.Lock()
_server: _Server | None = None
_release_socket: list = [None, None]  # [pid, socket]


def server() -> _Server:
    """This process's handle server, started on first use (and again in a fork child)."""
    global _server
    with _server_lock:
        if _server is None or _server.pid != os.getpid():
            _server = _Server()
        return _server


def keep_alive(obj) -> tuple[bytes, bytes, int]:
    """Hold ``obj`` until a receiver releases it; returns ``(server address, key, pid)``."""
    srv = server()
    key = secrets.token_bytes(16)
    srv.pending[key] = obj
    return srv.address, key, srv.pid


def release(address: bytes, key: bytes, pid: int) -> None:
    """Tell the sender we are done with ``key`` (best effort: it may have exited)."""
    if pid == os.getpid():
        server().pending.pop(key, None)
        return
    if _release_socket[0] != os.getpid():
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        sock.settimeout(5.0)  # a full queue blocks briefly rather than dropping the release
        _release_socket[:] = [os.getpid(), sock]
    try:
        _release_socket[1].sendto(_RELEASE + key, address)
    except OSError:
        pass


def _after_fork_in_child() -> None:
    global _server, _server_lock
    _server_lock = threading.Lock()  # another thread may have held it at the fork
    if _server is not None:
        _server.sock.close()  # our copy of the parent's socket; its thread and keys stay there
        _server = None


os.register_at_fork(after_in_child=_after_fork_in_child)


def _sender_gone(pid: int) -> RuntimeError:
    return RuntimeError(
        f"the process that sent this shared tensor (pid {pid}) exited before this process received "
        "it, so its memory is gone. help: keep the producer alive until every consumer has received "
        "its tensors (e.g. wait on an acknowledgement, or join the consumers first).")


def open_fd(address: bytes, key: bytes, pid: int, fd_number: int, ident: tuple) -> int:
    """A descriptor of the sender's segment ``ident``, which it keeps open as ``fd_number``.

    The fast way reopens it through ``/proc/<pid>/fd`` (a few microseconds, and the sender need
    not be scheduled); where that is not allowed (another pid namespace, ptrace restrictions) the
    sender's server hands it over (``fetch_fd``). The pending key keeps the sender's descriptor
    open until we release it, and the identity check rules out a reused pid or descriptor number.
    """
    try:
        fd = _shared.fd_call(os.open, f"/proc/{pid}/fd/{fd_number}", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return fetch_fd(address, key, pid)
    if _shared.memfd_ident(fd) == tuple(ident):
        return fd
    os.close(fd)
    return fetch_fd(address, key, pid)


def fetch_fd(address: bytes, key: bytes, pid: int) -> int:
    """Receive the descriptor the sender keeps under ``key``.

    Raises:
        RuntimeError: if the sender exited, no longer holds the key, or does not answer in
            ``DISTRIB_SHM_FETCH_TIMEOUT`` seconds; or (naming the fixes) when this process is out
            of file descriptors.
    """
    sock = _shared.fd_call(socket.socket, socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
    try:
        sock.bind(b"")  # autobind: an abstract address for the reply
        deadline = time.monotonic() + FETCH_TIMEOUT
        while True:
            try:
                sock.sendto(_FETCH + key, address)
            except (ConnectionRefusedError, FileNotFoundError):
                raise _sender_gone(pid) from None
            sock.settimeout(0.5)
            try:
                message, fds, flags, _ = socket.recv_fds(sock, 16, 1)
            except TimeoutError:
                if not alive(pid):
                    raise _sender_gone(pid) from None
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the process that sent this shared tensor (pid {pid}) did not hand "
                                       f"over its memory within {FETCH_TIMEOUT:.0f} s") from None
                continue
            if fds:
                return fds[0]
            if message == _REPLY_MISSING:
                raise RuntimeError(f"the process that sent this shared tensor (pid {pid}) no longer holds "
                                   "it: was the same message received twice?")
            if flags & socket.MSG_CTRUNC:  # the descriptor did not fit under RLIMIT_NOFILE
                exc = OSError(24, "Too many open files")
                if not _shared._raise_nofile_limit():
                    raise _shared.too_many_files_error(exc)
    finally:
        sock.close()
