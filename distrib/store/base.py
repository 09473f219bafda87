"""The ``Store`` interface and the in-memory table that HashStore and the TCPStore server share.

Values are bytes. ``add`` keeps a decimal integer in the value, as PyTorch does, so
``get`` of a counter returns e.g. ``b"3"``.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from ..errors import DistStoreError

__all__ = ["Store", "KVTable", "DEFAULT_TIMEOUT", "to_bytes", "to_seconds"]

DEFAULT_TIMEOUT = timedelta(seconds=300)


def to_bytes(value) -> bytes:
    """Store values are bytes; str is UTF-8 encoded, ints are written in decimal."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, int):
        return str(value).encode()
    raise TypeError(f"store values must be str or bytes, got {type(value).__name__}")


def to_seconds(timeout) -> float:
    """A timedelta or a number of seconds, as float seconds."""
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Store:
    """A key-value store shared by the ranks of a job.

    Subclasses implement ``_set``, ``_get_nowait``, ``_add``, ``_compare_set``, ``_wait``,
    ``_check``, ``_delete``, ``_num_keys``; this class adds argument checks and timeouts.
    """

    def __init__(self, timeout=DEFAULT_TIMEOUT) -> None:
        self._timeout = to_seconds(timeout)

    # ------------------------------------------------------------ timeouts
    @property
    def timeout(self) -> timedelta:
        """The default timeout of blocking calls (``get``, ``wait``)."""
        return timedelta(seconds=self._timeout)

    def set_timeout(self, timeout) -> None:
        """Change the default timeout of blocking calls."""
        self._timeout = to_seconds(timeout)

    def _timeout_error(self, keys, seconds) -> DistStoreError:
        return DistStoreError(
            f"{type(self).__name__}: timed out after {seconds:g} s waiting for key(s) {list(keys)}; "
            "help: check that every rank reached this point, or raise the timeout"
        )

    # ------------------------------------------------------------ API
    def set(self, key: str, value) -> None:
        """Set ``key`` to ``value`` (str or bytes), waking any rank blocked in ``get``."""
        self._set(_key(key), to_bytes(value))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the store's timeout for it to be set."""
        key = _key(key)
        self.wait([key])
        value = self._get_nowait(key)
        if value is None:  # deleted between wait and get
            raise DistStoreError(f"{type(self).__name__}: key {key!r} was deleted while being read")
        return value

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer at ``key`` (0 if unset) atomically; returns the new value."""
        return self._add(_key(key), int(amount))

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value`` (or is unset and
        ``expected_value`` is empty). Returns the value now stored (or ``expected_value`` if unset)."""
        return self._compare_set(_key(key), to_bytes(expected_value), to_bytes(desired_value))

    def wait(self, keys, timeout=None) -> None:
        """Block until every key in ``keys`` is set; DistStoreError after ``timeout``."""
        keys = [_key(k) for k in ([keys] if isinstance(keys, str) else keys)]
        seconds = self._timeout if timeout is None else to_seconds(timeout)
        if not self._wait(keys, seconds):
            raise self._timeout_error(keys, seconds)

    def check(self, keys) -> bool:
        """True if every key in ``keys`` is set (never blocks)."""
        keys = [_key(k) for k in ([keys] if isinstance(keys, str) else keys)]
        return self._check(keys)

    def delete_key(self, key: str) -> bool:
        """Delete ``key``; True if it existed."""
        return self._delete(_key(key))

    def num_keys(self) -> int:
        """The number of keys set."""
        return self._num_keys()

    def multi_get(self, keys) -> list[bytes]:
        """``[get(k) for k in keys]``."""
        return [self.get(k) for k in keys]

    def multi_set(self, keys, values) -> None:
        """``set`` each key to its value."""
        for k, v in zip(keys, values, strict=True):
            self.set(k, v)


def _key(key) -> str:
    if not isinstance(key, str):
        raise TypeError(f"store keys must be str, got {type(key).__name__}")
    return key


class KVTable:
    """A thread-safe dict of bytes with blocking waits: the state of HashStore and TCPStore."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.cond = threading.Condition()

    def set(self, key: str, value: bytes) -> None:
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def get(self, key: str) -> bytes | None:
        with self.cond:
            return self.data.get(key)

    def add(self, key: str, amount: int) -> int:
        with self.cond:
            old = self.data.get(key, b"0")
            try:
                value = int(old) + amount
            except ValueError:
                raise DistStoreError(f"add: key {key!r} holds {old[:32]!r}, not an integer") from None
            self.data[key] = str(value).encode()
            self.cond.notify_all()
            return value

    def compare_set(self, key: str, expected: bytes, desired: bytes) -> bytes:
        with self.cond:
            current = self.data.get(key)
            if current is None:
                if expected == b"":
                    self.data[key] = desired
                    self.cond.notify_all()
                    return desired
                return expected
            if current == expected:
                self.data[key] = desired
                self.cond.notify_all()
                return desired
            return current

    def check(self, keys) -> bool:
        with self.cond:
            return all(k in self.data for k in keys)

    def wait(self, keys, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        with self.cond:
            while not all(k in self.data for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
            return True

    def delete(self, key: str) -> bool:
        with self.cond:
            return self.data.pop(key, None) is not None

    def num_keys(self) -> int:
        with self.cond:
            return len(self.data)
