"""The wire between the DataLoader and one worker: a ``SOCK_SEQPACKET`` Unix socket pair.

Message boundaries are kept by the kernel, a file descriptor can ride along with a message
(``SCM_RIGHTS``: how a new shared-memory batch buffer reaches the main process), and a peer
that dies (however it dies) shows up as end-of-file. A message bigger than one packet is sent
as several; the first byte of each packet says whether more follow.

Note [shared-memory batch buffers]
A worker collates each batch straight into one of its *batch buffers*: anonymous
``memfd_create`` segments (nothing in ``/dev/shm`` to leak, even on SIGKILL), allocated up front
with ``posix_fallocate`` (so a full tmpfs is an error, not a SIGBUS; see Note [no SIGBUS] in
``tensor/_shared.py``). The first time a buffer is used, its descriptor goes to the main process
with the result; after that a result message is only the buffer's number and, per leaf tensor,
its offset, shape and dtype: a few hundred bytes whatever the batch size.

The main process maps each buffer once and makes the batch's tensors views of it. When the last
view of a batch is garbage collected, a ``weakref.finalize`` puts the buffer on a free list, which
travels back to its worker with the next task; the worker reuses free buffers, so in steady state
no memory is allocated, mapped or faulted in. A batch the user keeps simply keeps its buffer: the
worker makes another one. Batch buffers are plain ``mmap``s, not ``tensor._shared`` segments, so
``is_shared()`` is False for a batch and sending one to another process copies it (into a segment
of its own) instead of handing out memory that its worker is going to reuse.
"""

from __future__ import annotations

import os
import socket

from tensor import _shared

PACKET = 1 << 16
_MORE, _LAST = b"\x01", b"\x00"


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair: (main's end, worker's end)."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, payload: bytes, fds: tuple = ()) -> None:
    """Send one message (with ``fds`` attached to its first packet)."""
    if len(payload) < PACKET:
        if fds:
            socket.send_fds(sock, [_LAST, payload], list(fds))
        else:
            sock.sendall(_LAST + payload)
        return
    view = memoryview(payload)
    for start in range(0, len(view), PACKET):
        flag = _MORE if start + PACKET < len(view) else _LAST
        if start == 0 and fds:
            socket.send_fds(sock, [flag, view[start:start + PACKET]], list(fds))
        else:
            sock.sendmsg([flag, view[start:start + PACKET]])


def recv(sock: socket.socket) -> tuple[bytes | None, list[int]]:
    """Receive one message and its descriptors; ``(None, [])`` at end-of-file (the peer is gone)."""
    parts, fds = [], []
    while True:
        data, new_fds, _, _ = _shared.fd_call(socket.recv_fds, sock, PACKET + 1, 4)
        fds.extend(new_fds)
        if not data:
            for fd in fds:
                os.close(fd)
            return None, []
        parts.append(data)
        if data[:1] == _LAST:
            break
    if len(parts) == 1:
        return parts[0][1:], fds
    return b"".join(p[1:] for p in parts), fds
