"""``collectives.all_reduce``'s hot path (Note [Hot all_reduce] in ``distrib/backends/base.py``),
in one process: a stand-in ``HotAllReduce`` on a 1-rank group records what reaches it.

The mpi backend's own hot path (MPI's blocking Allreduce) runs under mpiexec in
``test_mpi_backend.py``; its watchdog in ``test_mpi_failures.py``.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import distrib as dist
import tensor
from distrib.backends.base import HotAllReduce
from distrib.process_group import world

pytestmark = pytest.mark.timeout(60)

SUM = dist.ReduceOp.SUM


@pytest.fixture
def calls() -> list:
    """(array, arg) of each call that reached the stand-in hot path of this test's ``hot``."""
    return []


@pytest.fixture
def hot(monkeypatch, calls):
    """A 1-rank zmq world whose default group has a stand-in hot path for float32 SUM below 1024
    elements; it records each call in ``calls``."""
    dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)

    def reduce(in_place, spec, op_arg):
        array, count, datatype = spec
        assert (in_place, count, datatype) == ("in-place", array.size, "float-type")
        calls.append((array, op_arg))
        array *= 2  # visible: the real op on one rank would leave the values as they are

    def fail(exc, seq):
        return dist.DistBackendError(f"op {seq} failed: {exc}")

    record = HotAllReduce({(SUM, np.dtype(np.float32), np.ndarray): (1024, "float-type", "the-op")}, reduce, "in-place",
                          fail)
    record.executor = dist.group.WORLD._executor
    monkeypatch.setattr(world, "hot_all_reduce", record)
    try:
        yield record
    finally:
        dist.destroy_process_group()


def test_the_hot_path_runs_the_call_as_the_groups_next_op(hot, calls):
    pg = dist.group.WORLD
    t = tensor.ones(100)
    seq, version = pg.seq, t._version
    assert dist.all_reduce(t) is None
    assert len(calls) == 1 and calls[0][0] is t._data and calls[0][1] == "the-op"
    assert t.tolist() == [2.0] * 100
    assert pg.seq == seq + 1 and hot.started == hot.finished == seq + 1
    assert t._version == version + 1  # autograd sees the in-place write


@pytest.mark.parametrize("case", ["float64", "avg", "too-large", "strided", "explicit-group", "async"])
def test_the_hot_path_declines_what_it_does_not_cover(hot, calls, case):
    t = {"float64": tensor.ones(100, dtype=tensor.float64), "too-large": tensor.ones(1024),  # 4096 bytes
         "strided": tensor.ones(10, 20).t()}.get(case, tensor.ones(100))
    kwargs = {"avg": {"op": dist.ReduceOp.AVG}, "explicit-group": {"group": dist.group.WORLD},
              "async": {"async_op": True}}.get(case, {})
    work = dist.all_reduce(t, **kwargs)
    if work is not None:
        work.wait()
    assert calls == []
    assert t.tolist() == tensor.ones(*t.shape).tolist()  # the general path: one rank's all_reduce
    assert hot.started == hot.finished == 0


def test_the_hot_path_waits_its_turn_behind_an_async_op(hot, calls):
    pg = dist.group.WORLD
    release, order = threading.Event(), []

    def slow(backend):
        release.wait(10)
        order.append("async")

    work = pg.run("slow", slow, async_op=True)
    t = tensor.ones(100)
    caller = threading.Thread(target=lambda: (dist.all_reduce(t), order.append("sync")))
    caller.start()
    caller.join(0.3)
    assert caller.is_alive() and order == []  # the sync op waits for the async one
    release.set()
    caller.join(10)
    work.wait()
    assert order == ["async", "sync"]
    assert calls == []  # it declined and took the general path, in order


def test_a_failing_call_raises_the_backends_error(hot):
    def broken(in_place, spec, op_arg):
        raise RuntimeError("library said no")

    hot.reduce = broken
    seq = dist.group.WORLD.seq
    with pytest.raises(dist.DistBackendError, match=f"op {seq + 1} failed: library said no"):
        dist.all_reduce(tensor.ones(100))


def test_the_same_array_again_skips_the_lookup(hot, calls, monkeypatch):
    lookups = []
    real_lookup = HotAllReduce.lookup
    monkeypatch.setattr(HotAllReduce, "lookup", lambda self, x, op: lookups.append(x) or real_lookup(self, x, op))
    a, b = tensor.ones(100), tensor.ones(100)
    for t in (a, a, b, a, a):
        dist.all_reduce(t)
    assert lookups == [a._data, b._data, a._data]
    assert [x is t._data for (x, _), t in zip(calls, (a, a, b, a, a), strict=True)] == [True] * 5
    dist.all_reduce(a, op=dist.ReduceOp.MAX)  # another op: looked up, and not covered
    assert len(lookups) == 4 and len(calls) == 5
    hot.disable()
    dist.all_reduce(a)
    assert len(calls) == 5 and hot.last == (None, None, None, None)
