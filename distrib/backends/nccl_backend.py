"""The ``nccl`` backend: ``cupy.cuda.nccl`` for CUDA tensors (through the ``tensor._nccl`` seam).

Note [NCCL backend]
    * The communicator is created lazily, at the group's first op, on the device that is
      current then (NCCL binds a communicator to one device; give each rank its own GPU).
      Rank 0 makes the unique id and publishes it through the group's store; every rank
      first checks in through the store (with the timeout), so a missing rank is an error
      instead of a hang inside ``ncclCommInitRank``.
    * Reductions: SUM, PRODUCT, MIN, MAX; AVG is SUM then a division. NCCL has no bitwise
      reductions: BAND/BOR/BXOR raise ValueError naming the op. bool is reduced as uint8
      (SUM = any = MAX, PRODUCT = all = MIN). Data-movement ops move bytes (any dtype).
    * gather, scatter, all_to_all and point to point are NCCL send/recv inside
      ``groupStart``/``groupEnd``. ``isend``/``irecv`` are queued and launched together as one
      group when one of their Works is waited on (or the next collective starts), so the
      sends and receives of ``batch_isend_irecv`` cannot deadlock. NCCL has no wildcard
      receive: ``recv`` needs ``src``.

Note [NCCL streams]
    As PyTorch's ProcessGroupNCCL does, an op never makes the host wait for the GPU:
    * Each group has its own non-blocking stream on its device, so communication overlaps
      the computation on the caller's stream (DDP's buckets are reduced while backward
      runs). ``ProcessGroup`` runs every op in the caller's thread (``stream_ordered``): it
      only enqueues. ``enqueue`` records an event on the caller's current stream, makes the
      group's stream wait for it (the hand-off: the op reads what the caller wrote), then
      runs the op and its post-processing (AVG's division, copies out of a staging buffer)
      with the group's stream current, and records the op's end event there.
    * ``Work.wait()`` makes the caller's current stream wait for the end event (the hand-off
      back): no host synchronisation. A synchronous op is an async op plus ``wait()``.
      ``Work.wait(timeout)``, ``barrier`` and object collectives (which read their sizes on
      the host) do wait on the host, by the op's deadline.
    * A watchdog thread watches the ops in flight: an op past its deadline, or NCCL's
      asynchronous error (a peer left), aborts the communicator and fails the op's Work with
      a DistBackendError naming the op (after a timeout, through the store, the ranks that
      were not waiting in it). Later ops and waits raise it; a host wait raises it at once.
      (PyTorch's watchdog takes the process down instead; here the next call into the
      group reports it.)
    * Isend/irecv record the hand-off event when they are called, and wait for it when
      their group is launched.
    * CuPy's memory pool has no ``record_stream``: an array the op uses, allocated on the
      caller's stream, must not be freed and handed out again there while the op still
      runs. So the backend keeps each queued Work, and the Work its op's job (whose closure
      holds the arrays), until the op's end event is seen done.
"""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np

from tensor import _nccl

from .. import reduce_op
from ..errors import DistBackendError, DistError
from ..work import Work
from ._nccl_work import Launch, StreamWork, Watchdog, poll
from .base import Backend, as_bytes

__all__ = ["NcclBackend", "nccl_reduction"]

_UINT8 = _nccl.DTYPES[np.dtype(np.uint8)]
_OPS = {"SUM": "SUM", "AVG": "SUM", "PRODUCT": "PROD", "MIN": "MIN", "MAX": "MAX"}


def nccl_reduction(op, dtype) -> tuple[np.dtype, int, int]:
    """``(dtype to reduce as, NCCL datatype code, NCCL op code)`` for ``op`` on ``dtype``.

    Raises:
        ValueError: the op or dtype has no NCCL equivalent (the message names it).
    """
    dtype = np.dtype(dtype)
    if op.name in ("BAND", "BOR", "BXOR"):
        raise ValueError(f"ReduceOp.{op.name} is not supported by the nccl backend: NCCL has no bitwise "
                         "reductions. help: reduce on the CPU with backend='zmq' or 'mpi'")
    if dtype.kind == "b":
        return np.dtype(np.uint8), _UINT8, _nccl.OPS[_OPS[reduce_op.as_uint8_op(op).name]]
    if dtype.kind == "c":
        if op.name not in ("SUM", "AVG"):
            raise ValueError(f"ReduceOp.{op.name} on {dtype.name} is not supported by the nccl backend "
                             "(complex numbers are reduced as pairs of reals: SUM and AVG only)")
        real = np.dtype(f"f{dtype.itemsize // 2}")
        return real, _nccl.DTYPES[real], _nccl.OPS["SUM"]
    if dtype not in _nccl.DTYPES:
        raise ValueError(f"the nccl backend cannot reduce {dtype.name} tensors (NCCL has no such type)")
    return dtype, _nccl.DTYPES[dtype], _nccl.OPS[_OPS[op.name]]


class NcclBackend(Backend):
    """Collectives on CUDA tensors through NCCL. See Notes [NCCL backend] and [NCCL streams] above."""

    name = "nccl"
    device_types = ("cuda",)
    stream_ordered = True

    @classmethod
    def library_available(cls) -> bool:
        try:
            _nccl.nccl_module()
        except RuntimeError:
            return False
        return True

    def __init__(self, store, rank, size, timeout, options=None) -> None:
        super().__init__(store, rank, size, timeout, options)
        self.nccl = _nccl.nccl_module()  # fails here, naming the reason, where NCCL is unusable
        self.comm = None
        self.device: int | None = None
        self.stream = None  # the group's stream (Note [NCCL streams])
        self.broken: str | None = None
        self.failure: DistBackendError | None = None
        self.watchdog: Watchdog | None = None
        self._lock = threading.RLock()
        self._works: list[StreamWork] = []  # queued, not yet seen done (the watchdog fails them)
        self._queued: list = []  # isend/irecv waiting to be launched as one group

    # ------------------------------------------------------------ streams (Note [NCCL streams])
    def stream_work(self, name: str, seq: int, result=None) -> StreamWork:
        """The Work of the group's next op (``ProcessGroup.run`` passes it to ``enqueue``)."""
        return StreamWork(self, name, seq, result)

    def enqueue(self, job, work: StreamWork) -> None:
        """Run ``job`` (the op and its post-processing) on the group's stream, after the work
        queued so far on the caller's stream; ``work`` gets the op's end event, or its error."""
        try:
            with _nccl.on_device(self._own_device()):
                stream = self._stream()
                _nccl.stream_wait(stream, _nccl.record_event(_nccl.current_stream(self.device)))
                with stream:
                    job()
                end = _nccl.record_event(stream)
        except BaseException as exc:  # noqa: BLE001 - delivered through Work.wait
            work._failed(self.failure or exc)
            return
        with self._lock:
            if self.failure is not None:
                work._failed(self.failure)
                return
            self._works = [w for w in self._works if not w.is_completed()]
            self._works.append(work)
        work._enqueued(end, job)

    def order_after(self, work: StreamWork, seconds: float | None) -> None:
        """``work.wait(timeout)``: the caller's current stream waits for the op's end event, and
        with ``seconds`` the host too (``work.failure`` is set if the op failed)."""
        if seconds is not None and not self._poll(work.end, time.monotonic() + seconds):
            if work.failure is None:
                raise DistBackendError(f"Work.wait timed out after {seconds:g} s: {work.what or work.name} "
                                       f"(seq {work.seq}) is still running on the nccl backend")
        if work.failure is None:
            with _nccl.on_device(self.device):
                _nccl.stream_wait(_nccl.current_stream(self.device), work.end)

    def _own_device(self) -> int:
        """The group's device: the current one at its first op."""
        if self.device is None:
            self.device = _nccl.current_device()
        return self.device

    def _stream(self):
        """The group's stream, made on its device at the first op (the caller has it current)."""
        if self.stream is None:
            self.stream = _nccl.new_stream(self.device)
        return self.stream

    def _poll(self, event, until: float) -> bool:
        """Wait on the host for ``event`` until ``until``; whether it is done. Raises the
        group's failure (the watchdog's) as soon as there is one."""
        def check():
            if self.failure is not None:
                raise self.failure

        return poll(event, until, check)

    # ------------------------------------------------------------ communicator and failures
    def _communicator(self, array):
        if self.failure is not None:
            raise self.failure
        if self.broken is not None:
            raise self.op_error(f"the NCCL communicator was aborted after an earlier failure ({self.broken})")
        if isinstance(array, np.ndarray):
            raise TypeError(f"{self.op_name}: the nccl backend takes CUDA tensors only, got a CPU tensor. help: "
                            "init_process_group() with no backend uses nccl for CUDA tensors and zmq for CPU "
                            "ones; or move the tensor with .cuda()")
        if self.comm is None:
            self._own_device()
            self._check_in()
            if self.rank == 0:  # the id pickles (bytes in CuPy 14, a tuple of ints before)
                self.store.set("nccl/uid", pickle.dumps(_nccl.unique_id()))
            uid = pickle.loads(self.store.get("nccl/uid"))
            with _nccl.on_device(self.device):
                try:
                    self.comm = _nccl.communicator(self.size, uid, self.rank)
                except Exception as exc:  # noqa: BLE001 - NcclError
                    raise self.op_error(
                        f"NCCL could not make the communicator on cuda:{self.device} ({exc}). help: NCCL "
                        "needs one GPU per rank (tensor.cuda.set_device(rank % device_count()) with as "
                        "many GPUs as ranks); processes that share a GPU can use backend='zmq'") from None
            self.watchdog = Watchdog(self.device, self.comm, self._watchdog_failure,
                                     f"nccl-watchdog-rank{self.rank}")
        device = _nccl.array_device(array)
        if device != self.device:
            raise ValueError(f"{self.op_name}: the tensor is on cuda:{device} but this rank's NCCL communicator "
                             f"is on cuda:{self.device} (one device per rank; set it before the first op)")
        return self.comm

    def wire(self, host):
        # Objects travel in device memory, on the communicator's device (the current one before
        # the first op), as PyTorch's object collectives on NCCL do.
        return _nccl.to_device(host, _nccl.current_device() if self.device is None else self.device)

    def host(self, array):
        # The op's size or bytes are needed on the host now: wait for it, by its deadline.
        self._wait_here(self._launch_watch(None))
        return _nccl.to_host(array)

    def _check_in(self) -> None:
        """Every rank reports through the store before NCCL's (untimed) communicator setup."""
        self.store.set(f"nccl/ready/{self.rank}", "1")
        keys = [f"nccl/ready/{p}" for p in range(self.size)]
        try:
            self.store.wait(keys, self.timeout)
        except DistError as exc:  # DistStoreError on timeout
            missing = [p for p in range(self.size) if not self.store.check([keys[p]])]
            raise self.op_error(f"ranks did not join the NCCL communicator within {self.timeout:g} s ({exc})",
                                missing) from None

    def _launch_watch(self, what: str | None, deadline: float | None = None) -> Launch:
        """Watch the work queued so far on the group's stream (the op just launched)."""
        with _nccl.on_device(self.device):  # an event belongs to its stream's device
            event = _nccl.record_event(self.stream)
        launch = Launch(event, self.deadline() if deadline is None else deadline, (self.op_name, self.op_seq), what)
        self.watchdog.watch(launch)
        return launch

    def _wait_here(self, launch: Launch) -> None:
        """Wait on the host for ``launch`` by its deadline (barrier, object collectives)."""
        if not self._poll(launch.event, launch.deadline):
            self._watchdog_failure(launch, None, True)
            raise self.failure

    def _watchdog_failure(self, launch: Launch, reason: str | None, timed_out: bool) -> None:
        """``launch`` failed (an NCCL error, or its deadline passed): abort the communicator and
        fail every queued Work with a DistBackendError naming the op."""
        missing: list[int] = []
        if timed_out:
            reason = f"timed out after {self.timeout:g} s"
            if launch.what is None:
                missing = self._not_waiting(launch.op[1])
                reason += f" (ranks not waiting in this op: {missing or 'none'})"
        self._fail(reason, launch.what, missing, launch.op)

    def _not_waiting(self, seq: int) -> list[int]:
        """After op ``seq`` timed out: the ranks that did not say, through the store, that they
        time out in it too (NCCL gives no other way to ask)."""
        key = f"nccl/stuck/{seq}"
        self.store.set(f"{key}/{self.rank}", "1")
        end = time.monotonic() + self.query_slack()
        waiting = {self.rank}
        while time.monotonic() < end and len(waiting) < self.size:
            waiting |= {p for p in range(self.size) if self.store.check([f"{key}/{p}"])}
            time.sleep(0.01)
        return [p for p in range(self.size) if p not in waiting]

    def _fail(self, reason: str, what: str | None, missing=(), op=None) -> DistBackendError:
        """Abort the communicator after the failure of ``op`` (or point-to-point ``what``); the
        error, which every queued Work not yet done gets too."""
        with self._lock:
            if self.failure is not None:
                return self.failure
            error = self.p2p_error(what, reason) if what else self.op_error(reason, missing, op)
            name, seq = op or (self.op_name, self.op_seq)
            self.broken = what or f"{name} (op seq {seq})"
            self.failure = error
            pending = [w for w in self._works if not w.is_completed()]
            self._works = []
        for work in pending:
            work._failed(error)
        try:
            self.comm.abort()
        except Exception:  # noqa: BLE001 - already failing
            pass
        return error

    def _collective(self, array, launch) -> None:
        """Run ``launch(comm, stream)`` on the group's stream and give it to the watchdog."""
        with self._lock:
            self._flush_p2p()
            comm = self._communicator(array)
            try:
                launch(comm, _nccl.stream_handle(self.stream))
            except Exception as exc:  # noqa: BLE001 - NcclError from the enqueue
                raise self._fail(f"NCCL error: {exc}", None) from None
            self._launch_watch(None)

    # ------------------------------------------------------------ collectives
    def all_reduce(self, x, op):
        as_dtype, dt, nop = nccl_reduction(op, x.dtype)
        buf = x.view(as_dtype)
        self._collective(x, lambda c, s: c.allReduce(_ptr(buf), _ptr(buf), buf.size, dt, nop, s))
        reduce_op.finish(op, x, self.size)

    def broadcast(self, x, root):
        raw = as_bytes(x)
        self._collective(x, lambda c, s: c.broadcast(_ptr(raw), _ptr(raw), raw.size, _UINT8, root, s))

    def reduce(self, x, root, op):
        as_dtype, dt, nop = nccl_reduction(op, x.dtype)
        buf = x.view(as_dtype)
        self._collective(x, lambda c, s: c.reduce(_ptr(buf), _ptr(buf), buf.size, dt, nop, root, s))
        if self.rank == root:
            reduce_op.finish(op, x, self.size)

    def all_gather(self, output, x):
        src, out = as_bytes(x), as_bytes(output)
        self._collective(x, lambda c, s: c.allGather(_ptr(src), _ptr(out), src.size, _UINT8, s))

    def reduce_scatter(self, output, x, op):
        as_dtype, dt, nop = nccl_reduction(op, x.dtype)
        send, recv = x.reshape(-1).view(as_dtype), output.reshape(-1).view(as_dtype)
        self._collective(x, lambda c, s: c.reduceScatter(_ptr(send), _ptr(recv), recv.size, dt, nop, s))
        reduce_op.finish(op, output, self.size)

    def _grouped(self, c, s, sends, recvs) -> None:
        """NCCL send/recv of ``(bytes, peer)`` pairs as one group."""
        _nccl.group_start()
        try:
            for raw, peer in sends:
                c.send(_ptr(raw), raw.size, _UINT8, peer, s)
            for raw, peer in recvs:
                c.recv(_ptr(raw), raw.size, _UINT8, peer, s)
        finally:
            _nccl.group_end()

    def gather(self, output, x, root):
        src = as_bytes(x)
        if self.rank != root:
            self._collective(x, lambda c, s: self._grouped(c, s, [(src, root)], []))
            return
        blocks = as_bytes(output).reshape(self.size, -1)
        blocks[root] = src
        recvs = [(blocks[p], p) for p in range(self.size) if p != root]
        self._collective(x, lambda c, s: self._grouped(c, s, [], recvs))

    def scatter(self, output, x, root):
        out = as_bytes(output)
        if self.rank != root:
            self._collective(output, lambda c, s: self._grouped(c, s, [], [(out, root)]))
            return
        blocks = as_bytes(x).reshape(self.size, -1)
        out[...] = blocks[root]
        sends = [(blocks[p], p) for p in range(self.size) if p != root]
        self._collective(output, lambda c, s: self._grouped(c, s, sends, []))

    def all_to_all(self, output, x, output_counts, input_counts):
        k = np.dtype(x.dtype).itemsize
        src, out = as_bytes(x), as_bytes(output)
        ins = np.concatenate([[0], np.cumsum(input_counts)]).astype(int) * k
        outs = np.concatenate([[0], np.cumsum(output_counts)]).astype(int) * k
        me = self.rank
        out[outs[me]: outs[me + 1]] = src[ins[me]: ins[me + 1]]
        sends = [(src[ins[p]: ins[p + 1]], p) for p in range(self.size) if p != me and ins[p + 1] > ins[p]]
        recvs = [(out[outs[p]: outs[p + 1]], p) for p in range(self.size) if p != me and outs[p + 1] > outs[p]]
        self._collective(x, lambda c, s: self._grouped(c, s, sends, recvs))

    def barrier(self):
        # As PyTorch's: the host waits until every rank has reached it (by the op's deadline).
        flag = _nccl.empty(1, np.float32, self._own_device())
        flag.fill(0)
        self.all_reduce(flag, reduce_op.ReduceOp.SUM)
        self._wait_here(self._launch_watch(None))

    # ------------------------------------------------------------ point to point
    def check_peer_rank(self, peer, what):
        if peer is None:
            raise ValueError(f"{what}: the nccl backend cannot receive from any source (NCCL has no wildcard "
                             "receive); pass src")
        super().check_peer_rank(peer, what)

    def _queue(self, kind, x, peer, tag) -> Work:
        self.check_peer_rank(peer, kind)
        what = f"{kind} {'to' if kind == 'send' else 'from'} rank {peer} (tag {tag})"
        work = _GroupedWork(self, kind, what, peer if kind == "recv" else None)
        with self._lock:
            self._communicator(x)
            with _nccl.on_device(self.device):  # the hand-off from the caller's stream, now
                ready = _nccl.record_event(_nccl.current_stream(self.device))
            self._queued.append((kind, as_bytes(x), peer, work, ready))
        return work

    def _flush_p2p(self) -> None:
        """Launch the queued sends and receives as one NCCL group on the group's stream."""
        with self._lock:
            if not self._queued:
                return
            queued, self._queued = self._queued, []
            with _nccl.on_device(self.device):
                stream = self._stream()
                for *_, ready in queued:
                    _nccl.stream_wait(stream, ready)
                sends = [(raw, peer) for kind, raw, peer, *_ in queued if kind == "send"]
                recvs = [(raw, peer) for kind, raw, peer, *_ in queued if kind == "recv"]
                try:
                    self._grouped(self.comm, _nccl.stream_handle(stream), sends, recvs)
                except Exception as exc:  # noqa: BLE001 - NcclError from the enqueue
                    error = self._fail(f"NCCL error: {exc}", "send/recv group")
                    for _, _, _, work, _ in queued:
                        work._failed(error)
                    return
                launch = self._launch_watch("send/recv group", time.monotonic() + self.timeout)
            for _, _, _, work, _ in queued:
                self._works.append(work)
                work._enqueued(launch.event, queued)

    def isend(self, x, dst, tag=0):
        return self._queue("send", x, dst, tag)

    def irecv(self, x, src, tag=0):
        return self._queue("recv", x, src, tag)

    def shutdown(self):
        comm, self.comm = self.comm, None
        if self.watchdog is not None:
            self.watchdog.stop()
        if comm is not None and self.broken is None:
            try:
                comm.destroy()
            except Exception:  # noqa: BLE001 - shutdown must not raise
                pass


class _GroupedWork(StreamWork):
    """An isend/irecv: launched with the rest of its group at the first wait (or collective)."""

    def __init__(self, backend: NcclBackend, name: str, what: str, source) -> None:
        super().__init__(backend, name, -1, source, what)

    def wait(self, timeout=None) -> bool:
        """Launch the queued group if needed, then ``StreamWork.wait``."""
        if self.end is None and self.failure is None:
            self._backend._flush_p2p()
        return super().wait(timeout)


def _ptr(array) -> int:
    return _nccl.data_ptr(array) if array.size else 0
