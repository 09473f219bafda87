"""Process groups: the world, ``new_group``, rank translation, and the op executor.

Every collective of a group runs through its ``Executor`` in call order: a synchronous
op runs in the caller's thread once earlier async ops are done; an async op is queued
for the group's worker thread and returns a ``Work`` at once, so communication overlaps
with the caller's computation. Each op gets the next sequence number of its group,
which errors and the debug mode report.

Note [Worker device]
    CUDA's current device is per thread, and a new thread starts on device 0 whatever the
    main thread chose. So a queued async op carries the device that was current when it was
    issued (``tensor._backend.with_current_device``) and runs with it current, in the worker
    thread or in a thread helping in wait: its communicator, events and kernels land on the
    rank's device, as they would in the caller's thread.
"""

from __future__ import annotations

import collections
import hashlib
import threading
import warnings

from tensor import _backend as array_backend
from tensor.profiler import _recorder

from . import debug
from ._profiling import timed_transfer
from .availability import get_default_backend_for_device
from .backends import backend_class
from .errors import DistError, ProcessGroupStateError
from .store import PrefixStore
from .work import Work, _seconds

__all__ = ["ProcessGroup", "GroupMember", "new_group", "world"]


class Executor:
    """Runs a group's ops one at a time, in the order they were issued.

    Note [Helping wait]: a thread that waits for an async op whose turn has come but which
    the worker thread has not picked up yet runs it itself (and the ops queued before it).
    DDP waits for its last gradient bucket right after launching it; running it in the
    waiting thread saves two thread hand-offs per step, each a scheduler wake-up that costs
    tens of microseconds on a loaded or virtualised machine, and the GIL ping-pong between
    the two threads. Backends whose ops must stay on the worker thread opt out with
    ``help_in_wait = False``; a ``stream_ordered`` one (NCCL) has no worker thread at all.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.waiting = 0  # threads in cond.wait(): leave() skips the costly notify_all without them
        self.queue: collections.deque = collections.deque()
        self.active = False
        self.seq = 0  # the sequence number of the group's latest op
        self.thread: threading.Thread | None = None
        self.stopped = False

    def run(self, job) -> None:
        self.enter()
        self._run_active(job)

    def enter(self) -> None:
        """Wait until the ops issued earlier are done, then mark the caller's op active."""
        with self.lock:
            while self.queue or self.active:
                self._wait()
            self.active = True

    def leave(self) -> None:
        """End the active op: clear ``active`` and wake the waiters."""
        with self.lock:
            self.active = False
            if self.waiting:
                self.cond.notify_all()

    def _wait(self) -> None:
        """``cond.wait()``, counted in ``waiting`` (the caller holds the lock)."""
        self.waiting += 1
        try:
            self.cond.wait()
        finally:
            self.waiting -= 1

    def _run_active(self, job) -> None:
        """Run ``job`` (``active`` is set), then end it."""
        try:
            job()
        finally:
            self.leave()

    def submit(self, job) -> None:
        with self.lock:
            if self.stopped:
                raise DistError(f"process group {self.name} was destroyed")
            self.queue.append(job)
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name=f"distrib-{self.name}", daemon=True)
                self.thread.start()
            if self.waiting:
                self.cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self.lock:
                while (not self.queue or self.active) and not self.stopped:
                    self._wait()
                if self.stopped and not self.queue:
                    return
                job = self.queue.popleft()
                self.active = True
            self._run_active(job)

    def help_until(self, done: threading.Event) -> None:
        """Run queued ops in the calling thread, in order, until ``done`` is set; return early
        when the worker thread is running one (see Note [Helping wait])."""
        while not done.is_set():
            with self.lock:
                if self.active or not self.queue:
                    return
                job = self.queue.popleft()
                self.active = True
            self._run_active(job)

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            self.cond.notify_all()


class ProcessGroup:
    """A set of ranks and the backend that connects them. Get one from ``new_group``."""

    def __init__(self, backend_name: str, ranks: list[int], global_rank: int, store, timeout: float,
                 name: str, options: dict | None = None) -> None:
        self.ranks = list(ranks)
        self.group_name = name
        self._rank = self.ranks.index(global_rank)
        self.store = store
        self.timeout = timeout
        self.backend_name = None if backend_name is None else str(backend_name).lower()
        self.options = dict(options or {})
        # backend=None means "nccl for CUDA tensors, zmq otherwise"; the CUDA one starts lazily.
        self._by_device: dict[str, object] = {}
        self.backend = self._create(get_default_backend_for_device("cpu") if backend_name is None else
                                    implementation_name(self.backend_name))
        self._executor = Executor(name)
        self._debug = debug.mode() == "DETAIL"
        # the backend's HotAllReduce (Note [Hot all_reduce] in backends/base.py); none in the
        # debug mode, which compares every op across ranks first
        self.hot_all_reduce = None if self._debug else self.backend.hot_all_reduce
        if self.hot_all_reduce is not None:
            self.hot_all_reduce.executor = self._executor

    def _create(self, name: str):
        sub = self.store if not self._by_device else PrefixStore(name, self.store)
        backend = backend_class(name)(sub, self._rank, len(self.ranks), self.timeout, self.options)
        for device_type in backend.device_types:
            self._by_device.setdefault(device_type, backend)
        return backend

    def backend_for(self, tensor) -> object:
        """The backend that runs ops on ``tensor`` (creating the CUDA one on first use)."""
        device = getattr(tensor, "device", None)
        device_type = getattr(device, "type", "cpu")  # non-tensors fail the argument check later
        backend = self._by_device.get(device_type)
        if backend is None:
            if self.backend_name is not None:
                return self.backend  # it stages other devices through host memory
            backend = self._create(get_default_backend_for_device(device_type))
        return backend

    @property
    def seq(self) -> int:
        """The sequence number of the group's latest op."""
        return self._executor.seq

    def next_seq(self) -> int:
        """Number the group's next op (ops are numbered 1, 2, ... in call order)."""
        self._executor.seq += 1
        return self._executor.seq

    def rank(self) -> int:
        """This process's rank in the group."""
        return self._rank

    def size(self) -> int:
        """The number of ranks in the group."""
        return len(self.ranks)

    def name(self) -> str:
        """The backend name, as ``get_backend`` reports it (as it was asked for: "gloo" when
        the zmq backend serves a script written for PyTorch's gloo)."""
        return self.backend_name or "zmq"

    @property
    def destroyed(self) -> bool:
        """Whether ``destroy_process_group`` shut the group down."""
        return self._executor.stopped

    def __repr__(self) -> str:
        return f"ProcessGroup({self.group_name}, backend={self.backend_name}, ranks={self.ranks})"

    def run(self, name: str, fn, *, async_op: bool, result=None, signature=None, backend=None) -> Work | None:
        """Run ``fn(backend)`` as the group's next op; a Work if ``async_op``, else None.

        ``signature`` (what the debug mode compares across ranks) defaults to the op name.
        """
        seq = self.next_seq()
        if self._debug:
            debug.check_consistency(self, name, seq, signature or {})
        backend = backend or self.backend
        if _recorder.current is not None:  # tensor.profiler: the transfer as one event
            fn = timed_transfer(fn, self, name, seq, result, async_op)

        def job():
            backend.begin_op(name, seq)
            fn(backend)
            backend.end_op()

        if backend.stream_ordered:  # it only enqueues: run here, in order (Note [NCCL streams])
            work = backend.stream_work(name, seq, result)
            self._executor.run(lambda: backend.enqueue(job, work))
            if async_op:
                return work
            work.wait()  # orders the caller's stream after the op; the host does not wait
            return None
        if not async_op:
            self._executor.run(job)
            return None
        work = Work(name, seq, result)
        if backend.help_in_wait:
            work._future._help = self._executor.help_until

        def async_job():
            try:
                job()
            except BaseException as exc:  # noqa: BLE001 - delivered through Work.wait
                work._complete(exc)
            else:
                work._complete()

        # The worker thread starts on CUDA device 0: give it the caller's device (Note [Worker device]).
        self._executor.submit(array_backend.with_current_device(async_job))
        return work

    def run_sync(self, name: str, backend, fn, *args) -> None:
        """``run`` for a synchronous op outside the debug mode, with fewer layers: ``fn(*args)``
        (a bound backend primitive) as the group's next op, in the caller's thread. The hot
        path of ``all_reduce``: after a large message the interpreter's working set is out of
        the CPU caches, so every Python frame costs microseconds there."""
        if backend.stream_ordered:
            self.run(name, lambda b: fn(*args), async_op=False, backend=backend)
            return
        seq = self.next_seq()
        if _recorder.current is not None:  # tensor.profiler: the transfer as one event
            fn = timed_transfer(fn, self, name, seq, args)
        executor = self._executor
        executor.enter()
        try:
            backend.begin_op(name, seq)
            fn(*args)
            backend.end_op()
        finally:
            executor.leave()

    def shutdown(self) -> None:
        self._executor.stop()
        for backend in {id(b): b for b in self._by_device.values()}.values():
            backend.shutdown()


class _GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``GroupMember.NON_GROUP_MEMBER``."""

    NON_GROUP_MEMBER = object()

    @property
    def WORLD(self):  # noqa: N802 - PyTorch's name
        return world.default_pg


GroupMember = _GroupMember()


_GLOO_NAMES = ("gloo", "cpu:gloo")  # PyTorch's CPU backend, which zmq stands in for


def implementation_name(backend: str) -> str:
    """The registered backend that runs a group asked for with ``backend`` (lowercase): zmq
    for PyTorch's "gloo" and "cpu:gloo", so scripts written for PyTorch keep working."""
    return "zmq" if backend in _GLOO_NAMES else backend


class _World:
    """The state ``init_process_group`` sets up and ``destroy_process_group`` clears."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        self.default_pg: ProcessGroup | None = None
        self.store = None
        self.rank, self.size = -1, -1
        self.groups: list[ProcessGroup] = []
        self.group_count = 0
        self.local_group_counts: dict[tuple, int] = {}  # per member list: use_local_synchronization groups
        # the ranks of the latest group this rank is not in: what rank queries on
        # GroupMember.NON_GROUP_MEMBER answer, as in PyTorch
        self.non_member_ranks: list[int] | None = None
        self.options: dict = {}
        self.owned_store = None
        self.hot_all_reduce = None  # the default group's (Note [Hot all_reduce] in backends/base.py)


world = _World()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A group of ``ranks`` (global ranks; all when None). Every rank must call it, in the same order.

    Returns the group on members and ``GroupMember.NON_GROUP_MEMBER`` on the others. With
    ``use_local_synchronization=True`` only the members need to call it (in the same order
    among themselves), as in PyTorch. ``backend`` "gloo" is served by zmq (``get_backend``
    still says "gloo").

    Raises:
        ValueError: duplicate ranks, or ranks outside the world.

    >>> import distrib as dist                                  # doctest: +SKIP
    >>> evens = dist.new_group([0, 2])                          # doctest: +SKIP
    """
    if world.default_pg is None:
        raise ProcessGroupStateError(
            "new_group: the default process group is not initialized; call init_process_group first")
    ranks = list(range(world.size)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks {ranks} contain duplicates")
    bad = [r for r in ranks if not 0 <= r < world.size]
    if bad:
        raise ValueError(f"new_group: rank(s) {bad} are not in the world of size {world.size}")
    name = _local_group_name(ranks) if use_local_synchronization else _next_group_name()
    if world.rank not in ranks:
        world.non_member_ranks = ranks
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(backend if backend is not None else world.default_pg.backend_name, ranks, world.rank,
                      PrefixStore(name, world.store),
                      world.default_pg.timeout if timeout is None else _seconds(timeout), name,
                      world.options)
    world.groups.append(pg)
    return pg


def _next_group_name() -> str:
    """The store prefix of the next group every rank creates (they all count it)."""
    world.group_count += 1
    return f"pg{world.group_count}"


def _local_group_name(ranks: list[int]) -> str | None:
    """The store prefix of a ``use_local_synchronization`` group of ``ranks``: only its members
    count it (None elsewhere), so it cannot shift the names of the groups every rank creates."""
    if world.rank not in ranks:
        return None
    key = tuple(ranks)
    world.local_group_counts[key] = count = world.local_group_counts.get(key, 0) + 1
    return f"pg_local_{hashlib.sha1(str(key).encode()).hexdigest()[:16]}_{count}"


def resolve(group, op_name: str) -> ProcessGroup | None:
    """The group an op runs on (None when this rank is not a member: the op is skipped)."""
    if world.default_pg is None:
        raise ProcessGroupStateError(f"{op_name}: the default process group is not initialized; "
                                     "call distrib.init_process_group first")
    if group is None:
        return world.default_pg
    if group is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"{op_name}: this rank is not in the group; the call does nothing", stacklevel=3)
        return None
    return check_group(group, op_name)


def check_group(group, op_name: str) -> ProcessGroup:
    """``group`` if it is a live ProcessGroup.

    Raises:
        ValueError: it is not a group from ``new_group`` (PyTorch's error type here).
        ProcessGroupStateError: it was destroyed (a ValueError and a DistError).
    """
    if not isinstance(group, ProcessGroup):
        raise ValueError(f"{op_name}: group must be a ProcessGroup from new_group, got {group!r}")
    if group.destroyed:
        raise ProcessGroupStateError(f"{op_name}: process group {group.group_name} was destroyed")
    return group
