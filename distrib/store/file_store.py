"""``FileStore``: a store in a file on a filesystem every rank can see.

The file is an append-only log of records (``S`` set / ``D`` delete, key, value)
guarded by ``fcntl`` locks; each store replays what it has not seen yet. The last
of the ``world_size`` instances to close removes the file, as PyTorch's does.
"""

from __future__ import annotations

import fcntl
import os
import struct
import time

from ..errors import DistStoreError
from .base import DEFAULT_TIMEOUT, Store

__all__ = ["FileStore"]

_HEADER = struct.Struct("<cII")
_CLOSED = "__distrib_filestore_closed"


class FileStore(Store):
    """A store backed by the file ``file_name``.

    >>> import tempfile, os
    >>> s = FileStore(os.path.join(tempfile.mkdtemp(), "store"), 1); s.add("n", 5)
    5
    """

    def __init__(self, file_name: str, world_size: int = -1, timeout=DEFAULT_TIMEOUT) -> None:
        super().__init__(timeout)
        self.path, self.world_size = os.fspath(file_name), world_size
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise DistStoreError(f"FileStore: cannot open {self.path!r}: {exc.strerror}") from exc
        self._data: dict[str, bytes] = {}
        self._offset = 0
        self._closed = False

    # ------------------------------------------------------------ the log
    def _locked(self, exclusive: bool):
        store = self

        class _Lock:
            def __enter__(self):
                fcntl.flock(store._fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                store._replay()

            def __exit__(self, *exc):
                fcntl.flock(store._fd, fcntl.LOCK_UN)

        return _Lock()

    def _replay(self) -> None:
        size = os.fstat(self._fd).st_size
        if size < self._offset:  # the file was truncated/recreated: start over
            self._data, self._offset = {}, 0
        if size == self._offset:
            return
        blob = os.pread(self._fd, size - self._offset, self._offset)
        pos = 0
        while pos + _HEADER.size <= len(blob):
            kind, klen, vlen = _HEADER.unpack_from(blob, pos)
            end = pos + _HEADER.size + klen + vlen
            if end > len(blob):
                break
            key = blob[pos + _HEADER.size: pos + _HEADER.size + klen].decode()
            if kind == b"S":
                self._data[key] = blob[pos + _HEADER.size + klen: end]
            else:
                self._data.pop(key, None)
            pos = end
        self._offset += pos

    def _append(self, kind: bytes, key: str, value: bytes = b"") -> None:
        k = key.encode()
        record = _HEADER.pack(kind, len(k), len(value)) + k + value
        os.pwrite(self._fd, record, self._offset)
        self._offset += len(record)
        if kind == b"S":
            self._data[key] = value
        else:
            self._data.pop(key, None)

    # ------------------------------------------------------------ primitives
    def _set(self, key, value):
        with self._locked(True):
            self._append(b"S", key, value)

    def _get_nowait(self, key):
        with self._locked(False):
            return self._data.get(key)

    def _add(self, key, amount):
        with self._locked(True):
            old = self._data.get(key, b"0")
            try:
                value = int(old) + amount
            except ValueError:
                raise DistStoreError(f"add: key {key!r} holds {old[:32]!r}, not an integer") from None
            self._append(b"S", key, str(value).encode())
            return value

    def _compare_set(self, key, expected, desired):
        with self._locked(True):
            current = self._data.get(key)
            if (current is None and expected == b"") or current == expected:
                self._append(b"S", key, desired)
                return desired
            return expected if current is None else current

    def _check(self, keys):
        with self._locked(False):
            return all(k in self._data for k in keys)

    def _wait(self, keys, seconds):
        # Polling with a growing pause: a file offers no cross-process wake-up.
        deadline, pause = time.monotonic() + seconds, 0.0005
        while not self._check(keys):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.02)
        return True

    def _delete(self, key):
        with self._locked(True):
            existed = key in self._data
            if existed:
                self._append(b"D", key)
            return existed

    def _num_keys(self):
        with self._locked(False):
            return sum(1 for k in self._data if k != _CLOSED)

    # ------------------------------------------------------------ cleanup
    def close(self) -> None:
        """Release this instance; the last one of ``world_size`` removes the file."""
        if self._closed:
            return
        self._closed = True
        try:
            closed = self._add(_CLOSED, 1)
            if self.world_size > 0 and closed >= self.world_size:
                with self._locked(True):
                    os.unlink(self.path)
        except OSError:
            pass
        finally:
            os.close(self._fd)

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            self.close()
