"""Stores: one table of cases run against HashStore, FileStore, TCPStore and PrefixStore."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

import distrib as dist
from distrib.store import FileStore, HashStore, PrefixStore, TCPStore


def _tcp(tmp_path):
    return TCPStore("127.0.0.1", 0, world_size=1, is_master=True, timeout=timedelta(seconds=5))


MAKERS = {
    "hash": lambda tmp_path: HashStore(),
    "file": lambda tmp_path: FileStore(str(tmp_path / "store"), 1),
    "tcp": _tcp,
    "prefix": lambda tmp_path: PrefixStore("job", HashStore()),
}


@pytest.fixture(params=list(MAKERS))
def store(request, tmp_path):
    s = MAKERS[request.param](tmp_path)
    yield s
    if hasattr(s, "close"):
        s.close()


def test_set_get_bytes_and_str(store):
    store.set("a", "hello")
    store.set("b", b"\x00\xff")
    assert (store.get("a"), store.get("b")) == (b"hello", b"\x00\xff")


def test_add_is_a_counter(store):
    assert [store.add("n", 1), store.add("n", 5), store.add("n", -2)] == [1, 6, 4]
    assert store.get("n") == b"4"


@pytest.mark.parametrize(("initial", "expected", "desired", "result", "stored"), [
    (None, "", "new", b"new", b"new"),        # unset and expecting empty: sets
    (None, "x", "new", b"x", None),           # unset, expecting something: unchanged
    ("old", "old", "new", b"new", b"new"),    # match: swaps
    ("old", "other", "new", b"old", b"old"),  # mismatch: returns the current value
])
def test_compare_set(store, initial, expected, desired, result, stored):
    if initial is not None:
        store.set("k", initial)
    assert store.compare_set("k", expected, desired) == result
    assert store.check(["k"]) == (stored is not None)
    if stored is not None:
        assert store.get("k") == stored


def test_check_delete_and_num_keys(store):
    assert store.num_keys() == 0
    store.set("x", "1")
    store.set("y", "2")
    assert store.check(["x", "y"]) and not store.check(["x", "z"])
    assert store.num_keys() == 2
    assert store.delete_key("x") is True and store.delete_key("x") is False
    assert store.num_keys() == 1


def test_get_times_out_with_store_error(store):
    store.set_timeout(timedelta(seconds=0.2))
    with pytest.raises(dist.DistStoreError, match=r"timed out after 0.2 s waiting for key\(s\) \['(job/)?missing'\]"):
        store.get("missing")


def test_wait_times_out_naming_keys(store):
    store.set("here", "1")
    with pytest.raises(dist.DistStoreError, match="gone"):
        store.wait(["here", "gone"], timedelta(seconds=0.1))


def test_blocking_get_wakes_when_another_thread_sets(store):
    results = []
    reader = threading.Thread(target=lambda: results.append(store.get("late")))
    reader.start()
    store.set("late", "value")
    reader.join(10)
    assert results == [b"value"]


def test_bad_key_type_is_refused(store):
    with pytest.raises(TypeError, match="store keys must be str, got int"):
        store.set(1, "x")


def test_prefix_store_namespaces_keys():
    base = HashStore()
    PrefixStore("a", base).set("k", "1")
    PrefixStore("b", base).set("k", "2")
    assert (base.get("a/k"), base.get("b/k")) == (b"1", b"2")


def test_tcp_store_port_zero_picks_a_free_port_and_clients_share_it():
    master = TCPStore("127.0.0.1", 0, world_size=2, is_master=True, wait_for_workers=False, timeout=5)
    client = TCPStore("127.0.0.1", master.port, world_size=2, timeout=5)
    try:
        assert master.port > 0
        client.set("from_client", "1")
        assert master.get("from_client") == b"1"
        assert master.add("c", 2) == 2 and client.add("c", 3) == 5
    finally:
        client.close()
        master.close()


def test_tcp_store_bind_failure_names_host_port_and_reason():
    first = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=5)
    try:
        with pytest.raises(dist.DistNetworkError,
                           match=rf"127\.0\.0\.1:{first.port}.*Address already in use"):
            TCPStore("127.0.0.1", first.port, is_master=True, wait_for_workers=False, timeout=5)
    finally:
        first.close()


def test_tcp_store_master_waits_for_workers_then_times_out_naming_count():
    with pytest.raises(dist.DistStoreError, match="1 of 2 connected"):
        TCPStore("127.0.0.1", 0, world_size=2, is_master=True, timeout=0.3)


def test_tcp_store_without_server_fails_within_timeout():
    from tests.distrib._harness import free_port

    with pytest.raises(dist.DistStoreError, match="no answer from the server"):
        TCPStore("127.0.0.1", free_port(), timeout=0.3)


def test_file_store_is_shared_through_the_file(tmp_path):
    a, b = FileStore(str(tmp_path / "f"), 2), FileStore(str(tmp_path / "f"), 2)
    a.set("k", "v")
    assert b.get("k") == b"v" and b.add("n", 2) == 2 and a.add("n", 1) == 3
    a.close()
    b.close()
    assert not (tmp_path / "f").exists(), "the last of world_size stores removes the file"
