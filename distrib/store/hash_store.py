"""``HashStore``: an in-process store (threads of one process share it)."""

from __future__ import annotations

from .base import DEFAULT_TIMEOUT, KVTable, Store

__all__ = ["HashStore"]


class HashStore(Store):
    """A store in this process's memory, for threads and single-process tests.

    >>> s = HashStore(); s.set("a", "1"); s.add("a", 2)
    3
    """

    def __init__(self, timeout=DEFAULT_TIMEOUT) -> None:
        super().__init__(timeout)
        self._table = KVTable()

    def _set(self, key, value):
        self._table.set(key, value)

    def _get_nowait(self, key):
        return self._table.get(key)

    def _add(self, key, amount):
        return self._table.add(key, amount)

    def _compare_set(self, key, expected, desired):
        return self._table.compare_set(key, expected, desired)

    def _wait(self, keys, seconds):
        return self._table.wait(keys, seconds)

    def _check(self, keys):
        return self._table.check(keys)

    def _delete(self, key):
        return self._table.delete(key)

    def _num_keys(self):
        return self._table.num_keys()
