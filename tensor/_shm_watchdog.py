"""Reference counts of named shared-memory segments, and the watchdog that survives a SIGKILL.

Used by the ``file_system`` sharing strategy (see ``tensor/_shared.py``). It imports only the
standard library, because it also runs as a standalone script:

    python tensor/_shm_watchdog.py <abstract socket name>

Note [named segments]
A named segment ``/dev/shm/distrib_*`` starts with an 8-byte reference count: the number of
processes that map it. Each change happens under ``flock`` on the file; whoever brings the count
to zero unlinks the name (mappings stay valid after an unlink; only new attaches fail).
A process that dies without releasing its references (SIGKILL, os._exit) would leak them, so
every process also tells a watchdog process which segments it holds, over a Unix socket:
``+path`` for a reference taken, ``-path`` for one released. When a client's connection closes, however
the client died, the watchdog releases what it still held. The watchdog runs in its own session
(a Ctrl-C or a process-group kill does not reach it) and exits when its last client is gone.
"""

from __future__ import annotations

import fcntl
import os
import selectors
import socket
import sys

HEADER_BYTES = 64  # the reference count, padded so that the data stays 64-byte aligned


def adjust_refcount(path: str, delta: int) -> int | None:
    """Add ``delta`` to the segment's reference count and unlink it at zero.

    Returns the new count, or None if the segment no longer exists.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        count = int.from_bytes(os.pread(fd, 8, 0).ljust(8, b"\0"), "little") + delta
        if count <= 0:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        else:
            os.pwrite(fd, count.to_bytes(8, "little"), 0)
        return count
    finally:
        os.close(fd)  # also drops the flock


def _serve(listener: socket.socket) -> None:
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    held: dict[socket.socket, dict[str, int]] = {}
    partial: dict[socket.socket, bytes] = {}
    connected_once = False
    while True:
        # The first client connects right after the watchdog reports ready; give up after a minute.
        events = selector.select(timeout=None if connected_once else 60.0)
        if not events and not connected_once:
            return
        for key, _ in events:
            if key.fileobj is listener:
                conn, _ = listener.accept()
                selector.register(conn, selectors.EVENT_READ)
                held[conn], partial[conn] = {}, b""
                connected_once = True
                continue
            conn = key.fileobj
            try:
                data = conn.recv(65536)
            except OSError:
                data = b""
            if not data:  # the client is gone: release what it still held
                for path, count in held.pop(conn).items():
                    for _ in range(count):
                        adjust_refcount(path, -1)
                selector.unregister(conn)
                conn.close()
                partial.pop(conn)
                continue
            *lines, partial[conn] = (partial[conn] + data).split(b"\n")
            names = held[conn]
            for line in lines:
                name = line[1:].decode()
                if line[:1] == b"+":
                    names[name] = names.get(name, 0) + 1
                elif names.get(name, 0) > 1:
                    names[name] -= 1
                else:
                    names.pop(name, None)
        if connected_once and not held:
            return


def main(argv: list[str]) -> int:
    """Daemonize (so that no one has to reap us), report ``ready`` on stdout, then serve."""
    address = "\0" + argv[1]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    if os.fork() != 0:
        os._exit(0)  # the parent returns at once; the watchdog is reparented to init
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_RDWR)
    for stream in (0, 1, 2):
        os.dup2(devnull, stream)
    _serve(listener)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
