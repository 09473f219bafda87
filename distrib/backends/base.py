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
      ``all_to_all``) have slow but correct defaults too, and ``send``/``recv`` wait for
      ``isend``/``irecv``, so a new backend needs only ``all_reduce``, ``broadcast``,
      ``all_gather``, ``reduce_scatter``, ``barrier``, ``isend`` and ``irecv``. Override the
      rest when the library has them (MPI: ``Reduce``, ``Gatherv``, ``Alltoallv``; NCCL:
      grouped send/recv). Data-movement ops may move bytes (``as_bytes``): any dtype works.
    * Reductions: ``distrib.reduce_op`` validates the op for the dtype before the call;
      ``reduce_op.reduce_in_rank_order``, ``ufunc`` and ``finish`` are the numpy kernels, and
      ``as_uint8_op`` the rule for libraries that reduce bools as uint8. AVG = SUM then ``/ size``.
    * Ordering and errors: ``ProcessGroup`` calls ``begin_op(name, seq)`` before every
      collective and ``end_op()`` after it succeeds, from one thread at a time, in the same
      order on every rank. Timeouts and dead peers are handled here, the same way for every
      backend (Note [Peer failures]): a backend writes its transport and calls the helpers.
      ``shutdown()`` must not block.
    * Optional: ``hot_all_reduce``, a ``HotAllReduce`` (Note [Hot all_reduce]).
    * Security: when ``distrib.security.auth_key()`` is set, refuse unauthenticated peers
      before unpickling anything (MPI and NCCL rely on the launcher's job isolation).
    * Under ``mpirun``, an uncaught exception on one rank must abort the job
      (``MPI.COMM_WORLD.Abort``) instead of leaving the others waiting.
    * Register the class in ``distrib/backends/__init__.py`` (``_BUILTIN``); the factory
      imports its module only when the backend is asked for.

Note [Peer failures]
    * A backend never blocks past ``deadline()``, the op's start plus the group's timeout; it
      stops waiting ``query_slack()`` earlier (a tenth of the timeout, at most 1 s) and spends
      that time finding out who is missing. The error is ``op_error(reason, missing)``: a
      DistBackendError naming the op, its sequence number and the missing ranks.
    * Who is missing: each rank keeps ``entered``/``finished``, the sequence numbers of the
      last op it began and the last it finished (``begin_op``/``end_op``); ``progress()`` is
      what it answers when a peer asks. A backend's ``query_progress`` asks the peers over a
      side channel that something other than the op thread serves (the zmq transport's
      receiver thread, the mpi watchdog), so a rank that is busy elsewhere still answers.
      ``timeout_reason`` turns the answers into the reason and the missing ranks: the peers
      that did not answer, or are behind this op. (NCCL gives no such channel: the nccl
      backend only learns, through the store, which ranks time out in the same op.)
    * Dead peers: ``exchange_peer_info`` (the ranks' address exchange through the store)
      records the pids of the peers on this host, and waiting loops call ``check_peers`` (or
      ``exited_peers``) every 50-100 ms, so that a rank whose process exited is named at once
      rather than at the timeout (a zombie is dead: Note [Zombies are dead] in
      ``distrib/_procs.py``). Peers on other hosts are found by the timeout.
"""

from __future__ import annotations

import json
import os
import pickle
import time

import numpy as np

from .._procs import alive, host_id
from ..errors import DistBackendError
from ..reduce_op import ReduceOp
from ..work import Work

__all__ = ["Backend", "HotAllReduce", "as_bytes", "size_mismatch_reason"]


def size_mismatch_reason(got: int, expected: int) -> str:
    """Why a collective failed when a peer's tensor holds ``got`` elements and ours ``expected``."""
    return (f"received {got} elements where {expected} were expected "
            "(ranks passed tensors of different sizes; DISTRIB_DEBUG=DETAIL says which)")


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
    # True for a backend whose ops only enqueue work on a device stream (nccl): ProcessGroup runs
    # every op in the caller's thread through ``enqueue(job, work)``, with the ``Work`` that
    # ``stream_work(name, seq, result)`` made (Note [NCCL streams] in nccl_backend.py).
    stream_ordered = False
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
        self.entered = self.finished = 0  # the last op begun and finished (Note [Peer failures])
        self.peer_pids: dict[int, int] = {}  # rank -> pid, for the peers on this host
        self._deadline = time.monotonic() + self.timeout

    # ------------------------------------------------------------ bookkeeping
    def begin_op(self, name: str, seq: int) -> None:
        """Called before each collective: names it for errors and starts its deadline."""
        self.op_name, self.op_seq = name, seq
        self.entered = seq
        self._deadline = time.monotonic() + self.timeout

    def end_op(self) -> None:
        """Called after each collective that finished without an error (progress bookkeeping)."""
        self.finished = self.entered

    def deadline(self) -> float:
        """The ``time.monotonic()`` by which the current op must finish."""
        return self._deadline

    # ------------------------------------------------------------ failures (Note [Peer failures])
    def progress(self) -> tuple[int, int]:
        """``(entered, finished)``: what this rank answers a peer's progress query."""
        return self.entered, self.finished

    def query_slack(self) -> float:
        """Seconds of an op's timeout kept back to ask the peers where they are."""
        return min(1.0, 0.1 * self.timeout)

    def exchange_peer_info(self, key: str, info: dict) -> list[dict]:
        """Publish ``info`` (plus this process's pid and host) under ``key`` in the group's store
        and return every rank's, by rank; remembers the pids of the peers on this host for
        ``check_peers``. Collective: blocks until every rank has published (the store's timeout).

        Raises:
            DistStoreError: a rank did not publish in time.
        """
        info = {**info, "pid": os.getpid(), "host": host_id()}
        self.store.set(f"{key}/{self.rank}", json.dumps(info))
        peers = [json.loads(self.store.get(f"{key}/{p}")) for p in range(self.size)]
        self.peer_pids = {p: v["pid"] for p, v in enumerate(peers) if p != self.rank and v["host"] == info["host"]}
        return peers

    def exited_peers(self, ranks=None) -> list[int]:
        """The peers on this host (among ``ranks``; all of them by default) whose process exited."""
        pids = self.peer_pids
        return [p for p in (pids if ranks is None else ranks) if p in pids and not alive(pids[p])]

    def exited_reason(self, dead) -> str:
        """The reason an op fails when the peers ``dead`` (from ``exited_peers``) exited."""
        return "peer process(es) exited: " + ", ".join(f"rank {p} (pid {self.peer_pids[p]})" for p in dead)

    def check_peers(self, ranks=None) -> None:
        """Called while waiting: fail the op if a peer on this host (among ``ranks``) exited.

        Raises:
            DistBackendError: naming the op and the exited ranks.
        """
        dead = self.exited_peers(ranks)
        if dead:
            raise self.op_error(self.exited_reason(dead), dead)

    def query_progress(self, peers: list[int], seconds: float) -> dict[int, tuple[int, int]]:
        """``{peer: (entered, finished)}`` for the ``peers`` that answer within ``seconds``, over
        the backend's side channel (Note [Peer failures]); needed by ``timeout_reason``."""
        raise NotImplementedError

    def timeout_reason(self, waiting_for=()) -> tuple[str, set[int]]:
        """After the current op timed out: the reason and the missing ranks, found by asking
        the peers where they are (``query_progress``, for ``query_slack()`` seconds). The
        peers that do not answer or are behind this op are missing, and so are ``waiting_for``
        (the ranks the op was waiting for when it gave up)."""
        peers = [p for p in range(self.size) if p != self.rank]
        answers = self.query_progress(peers, self.query_slack())
        missing, notes = set(waiting_for), []
        for p in peers:
            if p not in answers:
                missing.add(p)
                notes.append(f"rank {p} did not answer (dead, unreachable, or hung in code that holds the GIL)")
            elif answers[p][0] < self.op_seq:
                entered, finished = answers[p]
                missing.add(p)
                notes.append(f"rank {p} is in op seq {entered}" if entered > finished else
                             f"rank {p} has not called it (its last op: seq {entered})")
        if not notes:
            notes.append(f"waiting for rank(s) {sorted(waiting_for)}" if waiting_for else
                         "every peer is in this op, yet it did not complete")
        return f"timed out after {self.timeout:g} s ({'; '.join(notes)})", missing

    def op_error(self, reason: str, missing=(), op: tuple[str, int] | None = None) -> DistBackendError:
        """A DistBackendError naming the op (``(name, seq)``; the current one by default), its
        sequence number and the missing ranks."""
        who = f"; missing rank(s): {sorted(missing)}" if missing else ""
        name, seq = op or (self.op_name, self.op_seq)
        return DistBackendError(
            f"[{self.name} backend, rank {self.rank}/{self.size}] {name} (op seq {seq}) "
            f"failed: {reason}{who}"
        )

    def p2p_error(self, what: str, reason: str) -> DistBackendError:
        """A DistBackendError for a point-to-point op (which has no collective sequence number)."""
        return DistBackendError(f"[{self.name} backend, rank {self.rank}/{self.size}] {what} failed: {reason}")

    def check_peer_rank(self, peer: int, what: str) -> None:
        """Refuse a point-to-point ``peer`` that is not another rank of this group.

        Raises:
            ValueError: naming the op ``what``, the peer and this rank.
        """
        if not 0 <= peer < self.size or peer == self.rank:
            raise ValueError(f"{what}: invalid peer rank {peer} (this is rank {self.rank} of {self.size})")

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

    def isend(self, array, dst: int, tag: int = 0) -> Work:
        """Start sending ``array`` to rank ``dst``; the Work completes when ``array`` may be reused."""
        raise NotImplementedError

    def irecv(self, array, src: int | None, tag: int = 0) -> Work:
        """Start receiving into ``array`` from ``src`` (None: any rank); the Work's result is the
        source rank."""
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

    def send(self, array, dst: int, tag: int = 0) -> None:
        """Send ``array`` to rank ``dst`` and wait until it may be reused.

        Raises:
            DistBackendError: the send failed or did not complete within the timeout.
        """
        self.isend(array, dst, tag).wait()

    def recv(self, array, src: int | None, tag: int = 0) -> int:
        """Receive into ``array`` from ``src`` (None: any rank); returns the source rank.

        Raises:
            DistBackendError: the receive failed or did not complete within the timeout.
        """
        work = self.irecv(array, src, tag)
        work.wait()
        return work._result

    # ------------------------------------------------------------ object primitives
    # Pickled objects travel as uint8 arrays of this backend's transport: ``wire`` makes one
    # from a host array, ``host`` reads one back (host memory here; the nccl backend's device).
    def wire(self, host: np.ndarray):
        """``host`` as an array this backend's primitives take (itself for host backends)."""
        return host

    def host(self, array) -> np.ndarray:
        """An array of this backend's transport as a host array (itself for host backends)."""
        return array

    def broadcast_object(self, obj, root: int):
        data = _dumps(obj) if self.rank == root else None
        size = self.wire(np.array([0 if data is None else data.size], dtype=np.int64))
        self.broadcast(size, root)
        buf = self.wire(data.copy() if data is not None else np.empty(int(self.host(size)[0]), np.uint8))
        self.broadcast(buf, root)
        return obj if self.rank == root else _loads(self.host(buf))

    def all_gather_object(self, obj) -> list:
        data = _dumps(obj)
        sizes = self.wire(np.zeros(self.size, np.int64))
        self.all_gather(sizes, self.wire(np.array([data.size], np.int64)))
        sizes = self.host(sizes)
        width = int(sizes.max())
        padded = np.zeros(width, np.uint8)
        padded[: data.size] = data
        everything = self.wire(np.empty(width * self.size, np.uint8))
        self.all_gather(everything, self.wire(padded))
        blocks = self.host(everything).reshape(self.size, width)
        return [obj if r == self.rank else _loads(blocks[r, : sizes[r]]) for r in range(self.size)]

    def gather_object(self, obj, root: int):
        objects = self.all_gather_object(obj)
        return objects if self.rank == root else None

    def scatter_object(self, objects, root: int):
        chosen = self.broadcast_object(objects if self.rank == root else None, root)
        return chosen[self.rank]

    def send_object(self, obj, dst: int, tag: int = 0) -> None:
        data = _dumps(obj)
        self.send(self.wire(np.array([data.size], np.int64)), dst, tag)
        self.send(self.wire(data.copy()), dst, tag)

    def recv_object(self, src: int | None, tag: int = 0):
        """Returns ``(obj, source rank)``."""
        size = self.wire(np.zeros(1, np.int64))
        src = self.recv(size, src, tag)
        data = self.wire(np.empty(int(self.host(size)[0]), np.uint8))
        self.recv(data, src, tag)
        return _loads(self.host(data)), src


def as_bytes(array):
    """A flat uint8 view of C-contiguous ``array`` (numpy or CuPy), for ops that move bytes."""
    return array.reshape(-1).view(np.uint8)


def _empty_like_n(array, n: int):
    """An uninitialised flat array of ``array``'s library and dtype, ``n`` times as long."""
    return array.__class__((array.size * n,), dtype=array.dtype)
