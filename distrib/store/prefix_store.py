"""``PrefixStore``: a namespace inside another store (each process group gets one)."""

from __future__ import annotations

from .base import Store, _key

__all__ = ["PrefixStore"]


class PrefixStore(Store):
    """Every key is stored in ``store`` as ``prefix + "/" + key``.

    >>> from distrib.store import HashStore
    >>> base = HashStore(); PrefixStore("pg1", base).set("k", "v"); base.get("pg1/k")
    b'v'
    """

    def __init__(self, prefix: str, store: Store) -> None:
        super().__init__(store.timeout)
        self.prefix, self.underlying_store = prefix, store

    def _k(self, key: str) -> str:
        return f"{self.prefix}/{_key(key)}"

    @property
    def timeout(self):
        return self.underlying_store.timeout

    def set_timeout(self, timeout) -> None:
        self.underlying_store.set_timeout(timeout)

    def set(self, key, value):
        self.underlying_store.set(self._k(key), value)

    def get(self, key):
        return self.underlying_store.get(self._k(key))

    def add(self, key, amount):
        return self.underlying_store.add(self._k(key), amount)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._k(key), expected_value, desired_value)

    def wait(self, keys, timeout=None):
        keys = [keys] if isinstance(keys, str) else keys
        self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def check(self, keys):
        keys = [keys] if isinstance(keys, str) else keys
        return self.underlying_store.check([self._k(k) for k in keys])

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self):
        return self.underlying_store.num_keys()
