"""The threads that run native split regions, and how work passes to them (Note [Native
regions] in native.py).

The caller runs slice 0 of a region and ``get_num_threads() - 1`` workers run the others.
Per region the caller stores each worker's arguments in ``jobs`` and calls its own slice
function with ``post=True``: that function, without the GIL, publishes the region's
sequence number and wakes the workers asleep (``native.post``). A worker in
``native.idle`` sees it, takes the GIL (free: the caller runs natively), calls its slice
function, drops its references to the region's arrays and reports it done in ``native.idle``
again. The caller's slice function ends polling for the workers' reports (``native.finish``);
if one is late (preempted, or woken late) the caller then sleeps in short steps.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from .. import _threads
from . import native

__all__ = ["quiet", "run"]

_LINGER_US = 2000  # a worker's poll for the next region when one follows soon
_TAIL_US = 10  # after the last region: a short poll, then asleep on the futex
_JOIN_US = 500  # the caller's poll for the workers, then short sleeps


class _Pool:
    def __init__(self, workers: int) -> None:
        self.flags = np.zeros(native.flag_count(workers), np.int64)
        self.jobs: list = [None] * workers
        self.errors: list = [None] * workers
        self.seq = 0
        self.closed = False
        self.spins_per_us = _spins_per_us(self.flags)
        self.linger_spins = int(_LINGER_US * self.spins_per_us)
        for worker in range(workers):
            threading.Thread(target=self._work, args=(worker,), daemon=True, name=f"distrib-region-{worker}").start()

    def _work(self, worker: int) -> None:
        flags, seq, spins = self.flags, 0, 0
        while True:
            native.idle(flags, worker, seq, spins, self.linger_spins)
            seq += 1
            if self.closed:
                return
            fn, args, spins = self.jobs[worker]
            try:
                fn(*args)
            except BaseException as error:  # noqa: BLE001 - raised in the caller's thread
                self.errors[worker] = error
            del fn, args  # the region's arrays must not outlive it while this thread waits

    def run(self, fn, args: list, linger: bool) -> None:
        self.seq += 1
        spins = self.linger_spins if linger else int(_TAIL_US * self.spins_per_us)
        for worker, worker_args in enumerate(args[1:]):
            self.jobs[worker] = (fn, (self.flags, False, self.seq, 0, *worker_args), spins)
        joined = False
        try:
            joined = fn(self.flags, True, self.seq, int(_JOIN_US * self.spins_per_us), *args[0])
        finally:
            if native.load_flag(self.flags, native.GO) < self.seq:  # it failed before posting
                native.post(self.flags, self.seq)
            if not joined:
                self._join()
            self.jobs = [None] * len(self.jobs)
        errors, self.errors = [e for e in self.errors if e is not None], [None] * len(self.jobs)
        if errors:
            raise errors[0]

    def _join(self) -> None:
        flags, seq = self.flags, self.seq
        for worker in range(len(self.jobs)):
            done = native.done_flag(worker)
            if not native.wait_until(flags, done, seq, int(_JOIN_US * self.spins_per_us)):
                while native.load_flag(flags, done) < seq:
                    time.sleep(50e-6)

    def close(self) -> None:
        self.closed = True
        self.seq += 1
        native.post(self.flags, self.seq)


def _spins_per_us(flags) -> float:
    spins = 20000
    native.wait_until(flags, native.GO, 1, 1)  # loaded or compiled before the clock starts
    start = time.perf_counter()
    native.wait_until(flags, native.GO, 1, spins)
    return spins / max(1e-3, (time.perf_counter() - start) * 1e6)


_pool: _Pool | None = None


def _forget_pool_after_fork() -> None:
    global _pool
    _pool = None


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def run(fn, args: list, linger: bool) -> bool:
    """Run ``fn(flags, post, seq, spins, *args[t])`` for each thread ``t``, the first in this
    thread (``post`` True: it publishes the region, then polls ``spins`` times for the others
    and returns whether all are done: ``native.finish``);
    False (nothing run) when another thread holds the cores. ``linger``: another region
    follows soon, so the workers poll for it (Note [Native regions]). Raises what a slice
    raises, once all have finished."""
    global _pool
    lock = _threads.split_lock()
    if not lock.acquire(blocking=False):
        return False
    try:
        if _pool is None or len(_pool.jobs) != len(args) - 1:
            if _pool is not None:
                _pool.close()
            _pool = _Pool(len(args) - 1)
        _pool.run(fn, args, linger)
    finally:
        lock.release()
    return True


def quiet() -> None:
    """Stop the workers polling for a next region: other parallel work wants the cores."""
    if _pool is not None:
        _pool.flags[native.QUIET] = 1


_threads.before_parallel_work.append(quiet)
