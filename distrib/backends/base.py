"""The backend interface: the communication primitives every backend implements.

Note [Backend design] (for authors of new backends, e.g. ``mpi`` and ``nccl``)
    * One backend instance serves one process group. ``ProcessGroup`` creates it with
      ``cls(store, rank, size, timeout, options)``: ``store`` is a PrefixStore private to
      the group (use it to exchange addresses or an NCCL unique id), ``rank``/``size`` are
      *group* ranks, ``timeout`` is in seconds, ``options`` a dict (``{"host": ...}``).
    * Primitives take **C-contiguous arrays** (numpy, or CuPy when ``"cuda"`` is in
      ``device_types``) and work **in place**. ``ProcessGroup``/``collectives.py`` deal with
      Tensors, lists of tensors, non-contiguous inputs, staging CUDA tensors through host
      memory for host-only backends, ordering, async ops and version counters. Flat
      outputs are rank-major: ``all_gather(output, input)`` gets ``output`` of
      ``size * input.size`` elements, block ``r`` holding rank ``r``'s input.
    * Array and object versions are paired (``broadcast``/``broadcast_object``, ...). The
      object versions below have default implementations that pickle into uint8 arrays and
      call the array versions; the derived collectives (``reduce``, ``gather``, ``scatter``,
      ``all_to_all``, ``isend``/``irecv``) have slow but correct defaults too, so a new
      backend needs only ``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``,
      ``barrier``, ``send`` and ``recv``. Override the rest when the library has them
      (MPI: ``Reduce``, ``Gatherv``, ``Alltoallv``; NCCL: grouped send/recv).
    * Reductions: ``distrib.reduce_op`` validates the op for the dtype before the call;
      ``reduce_op.combine``/``finish`` are the numpy kernels. AVG = SUM then ``/ size``.
    * Ordering and errors: ``ProcessGroup`` calls ``begin_op(name, seq)`` before every
      collective and ``end_op()`` after it succeeds, from one thread at a time, in the same
      order on every rank. A backend must never block past ``self.deadline()``; on timeout
      or a dead peer it raises
      ``self.op_error(reason, missing_ranks)``, a DistBackendError naming the op, its
      sequence number and the missing ranks. ``shutdown()`` must not block.
    * Optional: ``hot_all_reduce``, a ``HotAllReduce`` (Note [Hot all_reduce]).
    * Security: when ``distrib.security.auth_key()`` is set, refuse unauthenticated peers
      before unpickling anything (MPI and NCCL rely on the launcher's job isolation).
    * Under ``mpirun``, an uncaught exception on one rank must abort the job
      (``MPI.COMM_WORLD.Abort``) instead of leaving the others waiting.
    * Register the class in ``distrib/backends/__init__.py`` (``_BUILTIN``); the factory
      imports its module only when the backend is asked for.
"""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np

from ..errors import DistBackendError
from ..reduce_op import ReduceOp
from ..work import Work

__all__ = ["Backend", "HotAllReduce"]


def _dumps(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj, protocol=5), dtype=np.uint8)


def _loads(array: np.ndarray):
    return pickle.loads(np.ascontiguousarray(array).tobytes())


class HotAllReduce:
    """A backend's fast path for small synchronous all_reduces.

    Note [Hot all_reduce]
        * ``dist.all_reduce(t)`` on the default group, synchronous, is the most frequent call
          of all, and at 4 KB the MPI library needs 2.2-2.4 us for it: each Python frame
          between the caller and the library adds about 4%, even a ``functools.partial`` 3%.
          So a backend may describe a call that needs no Python of its own, and
          ``collectives.all_reduce`` runs it inline, without ``begin_op``/``end_op``, when the
          group has no op in flight.
        * ``ops[(op, array.dtype, type(array))] = (limit, datatype, op_arg)`` for what takes
          the path: a backend adds an entry once its general path has checked the op for the
          dtype, and ``disable()`` turns the path off. ``array`` must also be C-contiguous,
          with fewer than ``limit`` elements.
        * ``reduce(in_place, (array, array.size, datatype), op_arg)``: a C-level callable
          that all-reduces ``array`` in place, in mpi4py's terms (``in_place`` is
          ``MPI.IN_PLACE``; the explicit count and datatype spare mpi4py the parsing of the
          array's format, 50 ns).
        * ``last``: the array and op of the previous call, with the arguments ``lookup`` made
          for them. Reducing the same array again (a metric, a reused buffer, a benchmark)
          skips ``lookup`` and its checks: an array object keeps its memory, dtype and layout
          (``tensor`` never changes them in place), and ``last`` holds it, so its identity
          cannot pass to another array. A new array costs one ``lookup`` call, about 3%.
          ``last`` is one tuple, replaced whole, so a racing thread never sees half of it.
        * ``started``/``finished``: the op sequence numbers that ``collectives`` writes before
          and after the call. A ``reduce`` without a timeout of its own is watched through
          them (the mpi backend's watchdog, Note [MPI watchdog]).
        * ``fail(exc, seq)``: the DistBackendError to raise when ``reduce`` raised ``exc``.
        * ``executor``: the group's op executor (its op order and sequence numbers), set by
          ``ProcessGroup``.
    """

    __slots__ = ("ops", "reduce", "in_place", "fail", "started", "finished", "executor", "last")

    def __init__(self, ops: dict, reduce, in_place, fail) -> None:
        self.ops, self.reduce, self.in_place, self.fail = ops, reduce, in_place, fail
        self.started = self.finished = 0
        self.executor = None
        self.last = _NO_CALL

    def lookup(self, array, op) -> tuple:
        """``(spec, op_arg)`` for ``reduce`` to all-reduce ``array`` with ``op``, remembered in
        ``last``; ``(None, None)`` where the path does not apply."""
        limit, datatype, op_arg = self.ops.get((op, array.dtype, array.__class__)) or _NOT_COVERED
        n = array.size
        if n < limit and array.flags.c_contiguous:
            self.last = (array, op, (array, n, datatype), op_arg)
            return self.last[2:]
        return None, None

    def disable(self) -> None:
        """Turn the path off (after a failure, or at shutdown); ``collectives`` then takes the
        general one."""
        self.ops.clear()
        self.last = _NO_CALL


_NOT_COVERED = (0, None, None)  # HotAllReduce.ops' (limit, datatype, op_arg) for what it does not cover
_NO_CALL = (None, None, None, None)  # HotAllReduce.last before any call


class Backend:
    """Abstract communicator of one process group. See Note [Backend design] above."""

    name = "base"
    device_types: tuple[str, ...] = ("cpu",)
    # Whether a thread waiting for an async op may run it (Note [Helping wait] in process_group.py).
    help_in_wait = True
    hot_all_reduce: HotAllReduce | None = None  # Note [Hot all_reduce]

    @classmethod
    def library_available(cls) -> bool:
        """Whether the library this backend needs is installed (checked without initialising it)."""
        return True

    def __init__(self, store, rank: int, size: int, timeout: float, options: dict | None = None) -> None:
        self.store, self.rank, self.size = store, rank, size
        self.timeout = float(timeout)
        self.options = dict(options or {})
        self.op_name, self.op_seq = "init", 0
        self._deadline = time.monotonic() + self.timeout

    # ------------------------------------------------------------ bookkeeping
    def begin_op(self, name: str, seq: int) -> None:
        """Called before each collective: names it for errors and starts its deadline."""
        self.op_name, self.op_seq = name, seq
        self._deadline = time.monotonic() + self.timeout

    def end_op(self) -> None:
        """Called after each collective that finished without an error (progress bookkeeping)."""

    def deadline(self) -> float:
        """The ``time.monotonic()`` by which the current op must finish."""
        return self._deadline

    def op_error(self, reason: str, missing=()) -> DistBackendError:
        """A DistBackendError naming the current op, its sequence number and the missing ranks."""
        who = f"; missing rank(s): {sorted(missing)}" if missing else ""
        return DistBackendError(
            f"[{self.name} backend, rank {self.rank}/{self.size}] {self.op_name} (op seq {self.op_seq}) "
            f"failed: {reason}{who}"
        )

    def p2p_error(self, what: str, reason: str) -> DistBackendError:
        """A DistBackendError for a point-to-point op (which has no collective sequence number)."""
        return DistBackendError(f"[{self.name} backend, rank {self.rank}/{self.size}] {what} failed: {reason}")

    def shutdown(self) -> None:
        """Release sockets, memory and threads. Must not block."""

    # ------------------------------------------------------------ array primitives
    def alloc_comm_buffer(self, nbytes: int) -> np.ndarray | None:
        """Zeroed host memory of ``nbytes`` for tensors this group will reduce often (DDP's
        gradient buckets) that the backend reduces faster than others (the zmq backend's
        shared memory, which its peers read directly), or None where it has none. Collective:
        every rank asks for the same sizes in the same order."""
        return None

    def all_reduce(self, array, op: ReduceOp) -> None:
        raise NotImplementedError

    def broadcast(self, array, root: int) -> None:
        raise NotImplementedError

    def all_gather(self, output, input) -> None:
        raise NotImplementedError

    def reduce_scatter(self, output, input, op: ReduceOp) -> None:
        raise NotImplementedError

    def barrier(self) -> None:
        raise NotImplementedError

    def send(self, array, dst: int, tag: int = 0) -> None:
        raise NotImplementedError

    def recv(self, array, src: int | None, tag: int = 0) -> int:
        """Receive into ``array`` from ``src`` (None: any rank); returns the source rank."""
        raise NotImplementedError

    # ------------------------------------------------------------ derived, with defaults
    def reduce(self, array, root: int, op: ReduceOp) -> None:
        """The reduction lands in ``array`` on ``root``; other ranks' arrays are left unchanged."""
        work = array if self.rank == root else array.copy()
        self.all_reduce(work, op)

    def gather(self, output, input, root: int) -> None:
        """``output`` (root only, else None) gets every rank's input, rank-major."""
        full = output if output is not None else _empty_like_n(input, self.size)
        self.all_gather(full, input)

    def scatter(self, output, input, root: int) -> None:
        """Rank ``r`` gets block ``r`` of ``input`` (given on ``root`` only)."""
        full = input if self.rank == root else _empty_like_n(output, self.size)
        self.broadcast(full, root)
        output[...] = full.reshape(self.size, -1)[self.rank].reshape(output.shape)

    def all_to_all(self, output, input, output_counts, input_counts) -> None:
        """Rank ``r`` sends ``input_counts[j]`` elements to rank ``j`` and receives
        ``output_counts[j]`` from ``j``, in rank order in flat ``input``/``output``."""
        pieces = np.split(np.asarray(input), np.cumsum(input_counts)[:-1])
        received = self.all_gather_object(pieces)
        out = [received[j][self.rank] for j in range(self.size)]
        output[...] = np.concatenate(out).reshape(output.shape) if out else output

    def isend(self, array, dst: int, tag: int = 0) -> Work:
        return self._in_thread("isend", self.send, array, dst, tag)

    def irecv(self, array, src: int | None, tag: int = 0) -> Work:
        return self._in_thread("irecv", self.recv, array, src, tag)

    def _in_thread(self, name, fn, *args) -> Work:
        work = Work(name)

        def run():
            try:
                work._result = fn(*args)
                work._complete()
            except BaseException as exc:  # noqa: BLE001 - delivered through the Work
                work._complete(exc)

        threading.Thread(target=run, name=f"distrib-{name}", daemon=True).start()
        return work

    # ------------------------------------------------------------ object primitives
    def broadcast_object(self, obj, root: int):
        size = np.array([len(_dumps(obj)) if self.rank == root else 0], dtype=np.int64)
        self.broadcast(size, root)
        data = _dumps(obj).copy() if self.rank == root else np.empty(int(size[0]), np.uint8)
        self.broadcast(data, root)
        return obj if self.rank == root else _loads(data)

    def all_gather_object(self, obj) -> list:
        data = _dumps(obj)
        sizes = np.zeros(self.size, np.int64)
        self.all_gather(sizes, np.array([data.size], np.int64))
        width = int(sizes.max())
        padded = np.zeros(width, np.uint8)
        padded[: data.size] = data
        everything = np.empty(width * self.size, np.uint8)
        self.all_gather(everything, padded)
        blocks = everything.reshape(self.size, width)
        return [obj if r == self.rank else _loads(blocks[r, : sizes[r]]) for r in range(self.size)]

    def gather_object(self, obj, root: int):
        objects = self.all_gather_object(obj)
        return objects if self.rank == root else None

    def scatter_object(self, objects, root: int):
        chosen = self.broadcast_object(objects if self.rank == root else None, root)
        return chosen[self.rank]

    def send_object(self, obj, dst: int, tag: int = 0) -> None:
        data = _dumps(obj)
        self.send(np.array([data.size], np.int64), dst, tag)
        self.send(data.copy(), dst, tag)

    def recv_object(self, src: int | None, tag: int = 0):
        """Returns ``(obj, source rank)``."""
        size = np.zeros(1, np.int64)
        src = self.recv(size, src, tag)
        data = np.empty(int(size[0]), np.uint8)
        self.recv(data, src, tag)
        return _loads(data), src


def _empty_like_n(array, n: int):
    """An uninitialised flat array of ``array``'s library and dtype, ``n`` times as long."""
    return array.__class__((array.size * n,), dtype=array.dtype)
