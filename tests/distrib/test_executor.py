"""The op executor of a process group (``distrib.process_group.Executor``): ops run one at a
time in issue order, and a thread waiting for a queued op runs it itself (Note [Helping wait])."""

from __future__ import annotations

import threading

from distrib.process_group import Executor
from distrib.work import Work


def _queued(executor: Executor, n: int):
    """``n`` jobs queued without starting the worker thread; each records (index, thread)."""
    ran, works = [], []
    for i in range(n):
        work = Work(f"op{i}", i)

        def job(i=i, work=work):
            ran.append((i, threading.get_ident()))
            work._complete()

        executor.queue.append(job)
        works.append(work)
    return ran, works


def test_a_waiting_thread_runs_the_queued_ops_in_order_up_to_its_own():
    executor = Executor("test")
    ran, works = _queued(executor, 3)
    works[1]._future._help = executor.help_until
    assert works[1].wait(timeout=5)
    me = threading.get_ident()
    assert ran == [(0, me), (1, me)]  # op 2 stays queued for the worker
    assert len(executor.queue) == 1 and not executor.active


def test_help_stops_while_another_thread_runs_an_op():
    executor = Executor("test")
    ran, works = _queued(executor, 1)
    executor.active = True  # the worker thread is inside an op
    executor.help_until(works[0]._future._event)
    assert ran == [] and len(executor.queue) == 1


def test_a_future_without_help_just_waits():
    work = Work("op", 0)
    threading.Timer(0.05, work._complete).start()
    assert work.get_future().wait(timeout=5) is None
