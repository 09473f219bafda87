"""The ``mpi`` backend: mpi4py buffer methods (no pickling) on one MPI communicator per group.

Note [MPI backend]
    * Launch with ``mpiexec -n N python train.py``: ``init_process_group("mpi")`` takes rank
      and size from the MPI environment (see ``distrib.rendezvous``). Each group gets its own
      communicator, made with ``Comm.Create_group`` from the members' ``COMM_WORLD`` ranks
      (exchanged through the group's store), so only the members take part.
    * Every collective but the small synchronous all_reduce below is the capital-letter,
      nonblocking call (``Iallreduce``, ``Ibcast``, ``Iallgather``, ``Ireduce_scatter_block``,
      ``Ireduce``, ``Igather``, ``Iscatter``, ``Ialltoallv``, ``Ibarrier``; ``Isend``/``Irecv``
      for point to point), completed by a ``Test`` loop that watches the op's deadline:
      MPI's blocking calls cannot time out, so a missing rank would hang them. The loop
      spins for a few polls only (MPI progresses only inside MPI calls), then yields the CPU
      after every poll, as MPICH's own blocking waits do; after a few seconds it also naps
      between polls. Yielding early matters: on a busy host the ranks often share a core,
      and a rank that spins keeps its peer off the CPU for a whole time slice per message
      step (a 1 MB all_reduce then took 2 ms, not 0.2 ms, when the loop first spun for 1 ms).
    * Note [Blocking all_reduce]: ``dist.all_reduce(t)`` on the default group, synchronous,
      below the ring threshold, on a dtype and op MPI reduces natively (not AVG), is MPI's
      blocking ``Allreduce``, run inline by ``collectives.all_reduce`` (Note [Hot all_reduce]
      in ``base.py``). At 4 KB the nonblocking call and its ``Test`` loop cost 0.2-0.3 us
      more than the blocking one, 10% of the op; the Python layers of the general path
      another 2 us. The price: such an op cannot raise on timeout. The backend's watchdog
      thread (Note [MPI watchdog] in ``_mpi_watchdog.py``) prints the error the op would have
      raised (op, sequence number, missing ranks) and ends the job with ``MPI_Abort`` at the
      timeout, or at once when a peer process on this host exits, as PyTorch's NCCL watchdog
      does. ``DISTRIB_MPI_BLOCKING=0`` turns the path off: every op then raises
      ``DistBackendError`` in the caller.
    * ``all_reduce`` reduces in place (``MPI_IN_PLACE``) in the caller's contiguous array:
      a scratch buffer would cost a copy back (70 us per MB here), more than any algorithm
      difference MPICH has between its in-place and out-of-place forms.
    * Note [MPI ring all_reduce]: from 256 KiB, when every rank is on this host, all_reduce is
      our own ring reduce-scatter + all-gather over ``Isend``/``Irecv`` (on the side
      communicator, so user messages never match it), reducing with numpy into the caller's array
      and receiving into one 1 MiB scratch buffer the backend keeps (segments travel in
      1 MiB pieces, each reduced while the next one arrives). MPICH's shared-memory
      Allreduce takes 2x as long at 64 MB (18 ms against 8.5 ms here; it appears to pay for a
      fresh temporary buffer per call) and 0-20% longer at 1-4 MB; below 256 KiB its
      latency wins. Across hosts the MPI library's own algorithms (which know the network)
      stay in charge. ``DISTRIB_MPI_RING_MIN_BYTES`` sets the threshold (also across hosts);
      a huge value turns the ring off.
    * On timeout the rank asks its peers, over a second communicator, which op they are in;
      each peer's watchdog thread answers. Ranks that do not answer, or answer with an older
      op, are named as missing. Peers on this host are also checked for being alive every
      50 ms, so a dead rank is named at once (when ``mpiexec`` does not kill the job first,
      which MPICH's does by default). Both as for every backend: Note [Peer failures] in
      ``base.py``.
    * An MPI communicator cannot recover from an abandoned collective. After a failure the
      backend refuses further ops, and the process ends with ``MPI_Abort`` instead of
      ``MPI_Finalize`` (which would wait forever for the abandoned op).
    * The first ``mpi`` backend of a process whose ``COMM_WORLD`` has more than one rank
      installs a ``sys.excepthook`` that prints the traceback and then calls
      ``MPI.COMM_WORLD.Abort(1)``: an uncaught exception on one rank ends the whole job
      instead of leaving the others waiting in a collective.
    * Reductions map to MPI ops (``AVG`` is ``SUM`` then a division). bool is reduced as
      uint8 (SUM = any = MAX, PRODUCT = all = MIN). A dtype the MPI library has no datatype
      for is reduced by a user-defined op on a contiguous byte type. Data-movement ops move
      bytes, so every dtype works.
    * Counts above ``DISTRIB_MPI_MAX_COUNT`` (default INT_MAX) are split into several calls
      for MPI libraries without MPI-4 large counts; object collectives are built on the
      buffer ops, so pickles above 2 GiB work too.
    * CUDA-aware MPI (``DISTRIB_MPI_CUDA_AWARE=1``, or ``MPIX_Query_cuda_support()``, or the
      usual environment hints) makes the backend take CUDA arrays directly (mpi4py reads
      their ``__cuda_array_interface__``) after synchronising their device; otherwise CUDA
      tensors are staged through host memory by ``collectives.py``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
import time
import zlib

import numpy as np

from tensor import _backend as array_backend

from .. import reduce_op
from ..errors import DistBackendError
from ._mpi_p2p import RequestWork
from ._mpi_setup import (
    Datatypes,
    Stall,
    abort_at_exit,
    blocking_enabled,
    cuda_aware,
    install_abort_hook,
    mpi_module,
    ring_threshold,
)
from ._mpi_watchdog import Watchdog
from .base import Backend, HotAllReduce, as_bytes

__all__ = ["MpiBackend", "cuda_aware", "install_abort_hook"]

_QUERY, _REPLY = 11, 12  # tags on the side communicator: progress queries
_RING_REDUCE_TAG, _RING_GATHER_TAG = 21, 22  # and the ring all_reduce
# Bytes per ring message, and the size of the receive buffer the backend keeps. A segment
# travels in pieces, each reduced as it lands while the next one arrives: at 64 MB, 1 MiB
# pieces took 8.5 ms and whole 32 MB segments 11.4 ms; smaller pieces cost more calls.
_RING_PIECE_BYTES = 1 << 20
_YIELD_AFTER = 16  # polls before the poll loop yields the CPU after each poll
_CLOCK_EVERY = 16  # polls between clock checks (a yield may take a time slice when the core is shared)
_NAP_AFTER = 5.0  # s of waiting before it also sleeps between polls
_CHECK_EVERY = 0.05  # s between checks that the peers on this host are alive


class MpiBackend(Backend):
    """Collectives through mpi4py. See Note [MPI backend] above."""

    name = "mpi"
    device_types = ("cpu",)

    @classmethod
    def library_available(cls) -> bool:
        return importlib.util.find_spec("mpi4py") is not None  # importing mpi4py.MPI would initialise MPI

    def __init__(self, store, rank, size, timeout, options=None) -> None:
        super().__init__(store, rank, size, timeout, options)
        mpi = self.mpi = mpi_module()
        if mpi.Query_thread() < mpi.THREAD_MULTIPLE:
            raise DistBackendError("the mpi backend needs MPI initialised with MPI_THREAD_MULTIPLE (async ops run "
                                   "on a worker thread); do not set mpi4py.rc.thread_level lower")
        install_abort_hook(mpi)
        self.broken: str | None = None
        self.max_count = int(os.environ.get("DISTRIB_MPI_MAX_COUNT", (1 << 31) - 1))
        blocking = blocking_enabled() and size > 1
        self.types = Datatypes(mpi)
        self._serve_lock = threading.Lock()
        self._pending_replies: list = []
        self._abandoned: list = []  # requests MPI still owns after a failure
        self.comm, self.side = self._communicators(self._world_ranks())
        self.cuda_aware = cuda_aware(mpi)
        if self.cuda_aware:
            self.device_types = ("cpu", "cuda")
        self.ring_min = ring_threshold(same_host=len(self.peer_pids) == size - 1, cuda_aware=self.cuda_aware)
        self._scratch = np.empty(0, np.uint8)  # the ring's receive buffer, kept: fresh pages cost faults
        # MPI's blocking Allreduce as the hot path (Note [Hot all_reduce] in base.py), for the
        # (ReduceOp, dtype) pairs an all_reduce has checked and MPI reduces natively.
        self.hot = HotAllReduce({}, self.comm.Allreduce, mpi.IN_PLACE, self._hot_failure)
        if blocking:
            self.hot_all_reduce = self.hot
        self.watchdog = Watchdog(self) if size > 1 else None

    def _world_ranks(self) -> list[int]:
        """Every group rank's ``COMM_WORLD`` rank, exchanged through the store (which also
        records the pids of the peers on this host).

        Raises:
            DistBackendError: the ranks of the group are not all in this MPI job.
        """
        world = self.mpi.COMM_WORLD
        world_ranks = None
        if world.Get_size() >= self.size:  # else every rank knows at once that this cannot work
            world_ranks = [p["world"] for p in self.exchange_peer_info("mpi", {"world": world.Get_rank()})]
        if world_ranks is None or len(set(world_ranks)) != self.size:
            raise DistBackendError(
                f"[mpi backend] the {self.size} ranks of this group are not all in one MPI job (this process's "
                f"MPI_COMM_WORLD has {world.Get_size()} rank(s); the ranks' COMM_WORLD ranks: "
                f"{world_ranks or 'not exchanged'}). help: start every rank "
                f"with one `mpiexec -n {self.size} python script.py`, or use backend='zmq'")
        return world_ranks

    def _communicators(self, world_ranks: list[int]) -> tuple:
        """The group's communicator, made from its members' ``COMM_WORLD`` ranks (only they take
        part), and a duplicate for our own traffic, never mixed with the user's: progress
        queries and the ring all_reduce's messages, each kind under its own tags.

        Raises:
            DistBackendError: MPI ranked this process differently from the group.
        """
        world = self.mpi.COMM_WORLD
        tag = zlib.crc32(str(getattr(self.store, "prefix", "")).encode()) & 0x3FFF
        group = world.Get_group().Incl(world_ranks)
        try:
            comm = world.Create_group(group, tag)
        finally:
            group.Free()
        side = comm.Dup()
        if comm.Get_rank() != self.rank:
            raise DistBackendError(f"[mpi backend] communicator rank {comm.Get_rank()} != group rank {self.rank}")
        return comm, side

    # ------------------------------------------------------------ bookkeeping
    def begin_op(self, name, seq):
        super().begin_op(name, seq)
        if self.broken is not None:
            raise self.op_error(f"the MPI communicator is unusable after an earlier failure ({self.broken})")

    def progress(self):
        hot = self.hot  # the hot path's ops count too: sequence numbers only grow
        return max(self.entered, hot.started), max(self.finished, hot.finished)

    def _fail(self, error: DistBackendError) -> DistBackendError:
        self.broken = f"{self.op_name} (op seq {self.op_seq})"
        self.hot.disable()  # the general path now reports the failure
        abort_at_exit(self.mpi)
        return error

    def _ready(self, *arrays) -> None:
        """Wait for the device work that produces CUDA arrays (only when MPI reads device memory)."""
        if self.cuda_aware:
            for x in arrays:
                if x is not None and not isinstance(x, np.ndarray):
                    backend, index = array_backend.backend_for_array(x)
                    backend.synchronize(index)

    def _chunks(self, count: int):
        m = self.max_count
        return [(0, count)] if count <= m else [(lo, min(lo + m, count)) for lo in range(0, count, m)]

    # ------------------------------------------------------------ waiting with a deadline
    def _run(self, start, *args) -> None:
        """Start a collective (``start(*args)`` returns its request) and complete it by the op's
        deadline, or fail naming the missing ranks."""
        request = None
        try:
            request = start(*args)
            test = request.Test
            for _ in range(_YIELD_AFTER):  # a small op completes here, without _complete's setup
                if test():
                    return
        except self.mpi.Exception as exc:
            raise self._mpi_failure(exc, [request]) from None
        self._complete([request])

    def _complete(self, requests: list) -> None:
        """Wait for every request by the op's deadline, or fail naming the missing ranks."""
        slack = self.query_slack()
        try:
            for request in requests:
                self._poll(request, None, self.deadline() - slack, self.timeout)
        except Stall as stall:
            self._abandoned.extend(requests)
            if stall.missing is None:
                stall = self.find_missing()
            raise self._fail(self.op_error(stall.reason, stall.missing)) from None
        except self.mpi.Exception as exc:
            raise self._mpi_failure(exc, requests) from None

    def _mpi_failure(self, exc, requests: list) -> DistBackendError:
        """The op's error for an MPI exception; its requests stay with MPI."""
        self._abandoned.extend(r for r in requests if r is not None)
        return self._fail(self.op_error(f"MPI error: {exc}"))

    def _poll(self, request, status, deadline: float, seconds: float) -> None:
        """Test ``request`` until it completes; raises Stall at ``deadline`` (the end of a
        ``seconds``-long wait) or when a peer dies."""
        start = now = last_check = time.monotonic()
        polls = 0
        test, yield_cpu = request.Test, os.sched_yield
        while not test(status):
            polls += 1
            if polls <= _YIELD_AFTER:
                continue
            yield_cpu()
            if polls % _CLOCK_EVERY:
                continue
            now = time.monotonic()
            if now - last_check > _CHECK_EVERY:
                last_check = now
                dead = self.dead_peers()
                if dead is not None:
                    raise dead
            if now > deadline:
                raise Stall(f"timed out after {seconds:g} s")
            if now - start > _NAP_AFTER:
                time.sleep(1e-4)

    def dead_peers(self) -> Stall | None:
        """A Stall naming the peer processes on this host that have exited, or None."""
        dead = self.exited_peers()
        return Stall(self.exited_reason(dead), dead) if dead else None

    def serve(self) -> None:
        """Answer other ranks' progress queries (from the watchdog thread, and from this rank's
        own query loop when it timed out too)."""
        if not self._serve_lock.acquire(blocking=False):
            return
        try:
            status = self.mpi.Status()
            while self.side.Iprobe(self.mpi.ANY_SOURCE, _QUERY, status):
                src = status.Get_source()
                query = np.empty(1, np.int64)
                self.side.Recv(query, src, _QUERY)
                reply = np.array(self.progress(), np.int64)
                self._pending_replies.append((self.side.Isend(reply, src, _REPLY), reply))
            self._pending_replies = [(r, b) for r, b in self._pending_replies if not r.Test()]
        finally:
            self._serve_lock.release()

    def query_progress(self, peers, seconds):
        """Asked over the side communicator; answered by the peers' ``serve``."""
        queries = [self.side.Isend(np.array([self.op_seq], np.int64), p, _QUERY) for p in peers]
        answers = {p: np.zeros(2, np.int64) for p in peers}
        requests = {p: self.side.Irecv(answers[p], p, _REPLY) for p in peers}
        deadline = time.monotonic() + seconds
        while requests and time.monotonic() < deadline:
            for p in [p for p, r in requests.items() if r.Test()]:
                del requests[p]
            self.serve()
            os.sched_yield()
        for r in requests.values():
            r.Cancel()
        self._abandoned.extend([*queries, *requests.values()])
        return {p: tuple(int(v) for v in a) for p, a in answers.items() if p not in requests}

    def find_missing(self) -> Stall:
        """After a timeout: the Stall naming the peers that are not in this op (Note [Peer
        failures] in ``base.py``)."""
        return Stall(*self.timeout_reason())

    # ------------------------------------------------------------ collectives
    def all_reduce(self, x, op):
        if self.size > 1:
            if self.cuda_aware:
                self._ready(x)
            mpi_op = self.types.native_op(x.dtype, op)
            if mpi_op is not None and x.nbytes < self.ring_min and x.size <= self.max_count:
                if op.name != "AVG" and isinstance(x, np.ndarray):  # CUDA arrays need _ready first
                    self.hot.ops[(op, x.dtype, np.ndarray)] = (self._hot_limit(x.dtype), self.types.datatype(x.dtype),
                                                               mpi_op)
                self._run(self.comm.Iallreduce, self.mpi.IN_PLACE, x, mpi_op)
            elif x.nbytes >= self.ring_min:
                self._ring_all_reduce(x, op)
            else:
                for lo, hi in self._chunks(x.size):
                    buf, mpi_op = self.types.reduction(x[lo:hi], op)
                    self._run(self.comm.Iallreduce, self.mpi.IN_PLACE, buf, mpi_op)
        if op.name == "AVG":
            reduce_op.finish(op, x, self.size)

    def _hot_limit(self, dtype: np.dtype) -> float:
        """The element count from which an all_reduce of ``dtype`` leaves the hot path: the
        ring's threshold, or the largest count one MPI call takes."""
        ring = self.ring_min / dtype.itemsize  # inf where the ring is off
        return self.max_count + 1 if math.isinf(ring) else min(math.ceil(ring), self.max_count + 1)

    def _hot_failure(self, exc, seq: int) -> DistBackendError:
        """The error of hot-path all_reduce ``seq`` whose MPI call raised ``exc``."""
        self.op_name, self.op_seq = "all_reduce", seq
        self.hot.finished = seq  # no longer in flight: the watchdog must not end the job over it
        return self._mpi_failure(exc, [])

    def _ring_all_reduce(self, x, op) -> None:
        """Ring reduce-scatter, then ring all-gather, in place on flat ``x`` (Note [MPI ring
        all_reduce]). Each segment is reduced once, along the ring, then copied to every rank:
        all ranks get bitwise the same result. Segments travel in messages of at most
        ``_RING_PIECE_BYTES`` bytes (and ``max_count``), each reduced as it lands."""
        n, me, f = self.size, self.rank, reduce_op.ufunc(op, x.dtype)
        right, left = (me + 1) % n, (me - 1) % n
        b = [x.size * j // n for j in range(n + 1)]
        per = max(1, min(_RING_PIECE_BYTES, self.max_count) // x.itemsize)  # elements per message
        nbytes = min(-(-x.size // n), per) * x.itemsize
        if self._scratch.size < nbytes:
            self._scratch = np.empty(nbytes, np.uint8)
        for step in range(n - 1):
            send, recv = (me - step) % n, (me - step - 1) % n
            sends = self._post(self.side.Isend, x[b[send]: b[send + 1]], right, _RING_REDUCE_TAG, per)
            seg = x[b[recv]: b[recv + 1]]
            try:
                for lo in range(0, seg.size, per):
                    piece = seg[lo: lo + per]
                    theirs = self._scratch[: piece.nbytes].view(x.dtype)
                    self._complete(self._post(self.side.Irecv, theirs, left, _RING_REDUCE_TAG, per))
                    f(piece, theirs, out=piece)
            except DistBackendError:
                self._abandoned.extend(sends)  # still MPI's: keep them (and their buffers) alive
                raise
            self._complete(sends)
        for step in range(n - 1):
            send, recv = (me + 1 - step) % n, (me - step) % n
            requests = self._post(self.side.Isend, x[b[send]: b[send + 1]], right, _RING_GATHER_TAG, per)
            requests += self._post(self.side.Irecv, x[b[recv]: b[recv + 1]], left, _RING_GATHER_TAG, per)
            self._complete(requests)

    def _post(self, start, x, peer: int, tag: int, per: int) -> list:
        """``start`` (Isend or Irecv) for each run of ``per`` elements of ``x``: the requests."""
        requests = []
        try:
            for lo in range(0, x.size, per):  # the same runs as the peer's (an empty segment: none)
                requests.append(start(as_bytes(x[lo: lo + per]), peer, tag))
        except self.mpi.Exception as exc:
            raise self._mpi_failure(exc, requests) from None
        return requests

    def broadcast(self, x, root):
        if self.size == 1:
            return
        self._ready(x)
        raw = as_bytes(x)
        for lo, hi in self._chunks(raw.size):
            self._run(self.comm.Ibcast, raw[lo:hi], root)

    def reduce(self, x, root, op):
        if self.size > 1:
            self._ready(x)
            for lo, hi in self._chunks(x.size):
                buf, mpi_op = self.types.reduction(x[lo:hi], op)
                if self.rank == root:
                    self._run(self.comm.Ireduce, self.mpi.IN_PLACE, buf, mpi_op, root)
                else:
                    self._run(self.comm.Ireduce, buf, None, mpi_op, root)
        if self.rank == root:
            reduce_op.finish(op, x, self.size)

    def all_gather(self, output, x):
        self._ready(output, x)
        src, out = as_bytes(x), as_bytes(output)
        chunks = self._chunks(src.size)
        if len(chunks) == 1:
            self._run(self.comm.Iallgather, src, out)
            return
        blocks = out.reshape(self.size, -1)
        for lo, hi in chunks:
            tmp = src[lo:hi].__class__((self.size * (hi - lo),), dtype=np.uint8)
            self._run(self.comm.Iallgather, src[lo:hi], tmp)
            blocks[:, lo:hi] = tmp.reshape(self.size, -1)

    def reduce_scatter(self, output, x, op):
        if self.size == 1:
            output[...] = x.reshape(output.shape)
        else:
            self._ready(output, x)
            send, _ = self.types.reduction(x.reshape(-1), op)
            recv, mpi_op = self.types.reduction(output.reshape(-1), op)
            self._run(self.comm.Ireduce_scatter_block, send, recv, mpi_op)
        reduce_op.finish(op, output, self.size)

    def gather(self, output, x, root):
        self._ready(output, x)
        out = as_bytes(output) if self.rank == root else None
        self._run(self.comm.Igather, as_bytes(x), out, root)

    def scatter(self, output, x, root):
        self._ready(output, x)
        src = as_bytes(x) if self.rank == root else None
        self._run(self.comm.Iscatter, src, as_bytes(output), root)

    def all_to_all(self, output, x, output_counts, input_counts):
        self._ready(output, x)
        k = np.dtype(x.dtype).itemsize

        def spec(array, counts):
            counts = [int(c) * k for c in counts]
            displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
            return [as_bytes(array), (counts, displs)]

        self._run(self.comm.Ialltoallv, spec(x, input_counts), spec(output, output_counts))

    def barrier(self):
        if self.size > 1:
            self._run(self.comm.Ibarrier)

    # ------------------------------------------------------------ point to point
    # A point-to-point op is a generator of steps: each yields the (request, status) pairs to
    # complete before it goes on. Every chunk of a send, and of a receive from a known rank, is
    # posted at once (MPI keeps messages between two ranks in order), so that ranks that both
    # send and receive large tensors cannot wait on each other.
    def _send_steps(self, x, dst, tag):
        raw = as_bytes(x)
        yield [(self.comm.Isend(raw[lo:hi], dst, tag), None) for lo, hi in self._chunks(raw.size)]

    def _recv_steps(self, x, src, tag):
        raw, chunks = as_bytes(x), self._chunks(as_bytes(x).size)
        posted = []
        if src is None:  # the first chunk tells the source; the rest come from it
            status = self.mpi.Status()
            lo, hi = chunks[0]
            yield [(self.comm.Irecv(raw[lo:hi], self.mpi.ANY_SOURCE, tag), status)]
            src, posted, chunks = status.Get_source(), [(status, lo, hi)], chunks[1:]
        step = []
        for lo, hi in chunks:
            status = self.mpi.Status()
            step.append((self.comm.Irecv(raw[lo:hi], src, tag), status))
            posted.append((status, lo, hi))
        if step:
            yield step
        for status, lo, hi in posted:
            got = status.Get_count(self.mpi.BYTE)
            if got != hi - lo:
                raise ValueError(f"received {got} bytes from rank {src} where {hi - lo} were expected; the "
                                 "ranks passed tensors of different sizes")
        return src  # noqa: B901 -- the caller reads the source rank from StopIteration.value

    def isend(self, x, dst, tag=0):
        self.check_peer_rank(dst, "send")
        self._ready(x)
        return RequestWork(self, "send", f"send to rank {dst} (tag {tag})", self._send_steps(x, dst, tag))

    def irecv(self, x, src, tag=0):
        if src is not None:
            self.check_peer_rank(src, "recv")
        self._ready(x)
        who = "any rank" if src is None else f"rank {src}"
        return RequestWork(self, "recv", f"recv from {who} (tag {tag})", self._recv_steps(x, src, tag))

    def shutdown(self):
        if getattr(self, "watchdog", None) is not None:
            self.watchdog.stop()  # before the communicators go: it calls MPI
        if getattr(self, "hot", None) is not None:
            self.hot.disable()
        if self.broken is not None:
            return  # the communicators still have abandoned ops: leave them to MPI_Abort
        for comm in (getattr(self, "side", None), getattr(self, "comm", None)):
            if comm is not None:
                try:
                    comm.Free()
                except Exception:  # noqa: BLE001 - shutdown must not raise or block
                    pass
        self.side = self.comm = None
