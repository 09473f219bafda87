"""The ``nccl`` backend: ``cupy.cuda.nccl`` for CUDA tensors (through the ``tensor._nccl`` seam).

Note [NCCL backend]
    * The communicator is created lazily, at the group's first op, on the device that is
      current then (NCCL binds a communicator to one device; give each rank its own GPU).
      Rank 0 makes the unique id and publishes it through the group's store; every rank
      first checks in through the store (with the timeout), so a missing rank is an error
      instead of a hang inside ``ncclCommInitRank``.
    * Ops are enqueued on the current stream of the calling thread (for async ops, the
      group's worker thread: CuPy's default stream, which orders after the caller's work
      on blocking streams). The backend then waits for an event recorded after the op,
      polling it against the op's deadline and NCCL's asynchronous error state. On timeout
      it aborts the communicator (it cannot be used afterwards) and names the ranks that
      did not report, through the store, that they are waiting in the same op.
    * Reductions: SUM, PRODUCT, MIN, MAX; AVG is SUM then a division. NCCL has no bitwise
      reductions: BAND/BOR/BXOR raise ValueError naming the op. bool is reduced as uint8
      (SUM = any = MAX, PRODUCT = all = MIN). Data-movement ops move bytes (any dtype).
    * gather, scatter, all_to_all and point to point are NCCL send/recv inside
      ``groupStart``/``groupEnd``. ``isend``/``irecv`` are queued and launched together as one
      group when one of their Works is waited on (or the next collective starts), so the
      sends and receives of ``batch_isend_irecv`` cannot deadlock. NCCL has no wildcard
      receive: ``recv`` needs ``src``.
"""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np

from tensor import _nccl

from .. import reduce_op
from ..errors import DistBackendError, DistError
from ..work import Work, _seconds
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
    """Collectives on CUDA tensors through NCCL. See Note [NCCL backend] above."""

    name = "nccl"
    device_types = ("cuda",)
    help_in_wait = False  # ops are ordered on the worker thread's CUDA stream

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
        self.broken: str | None = None
        self._lock = threading.RLock()
        self._queued: list = []  # isend/irecv waiting to be launched as one group

    # ------------------------------------------------------------ communicator and waiting
    def _communicator(self, array):
        if self.broken is not None:
            raise self.op_error(f"the NCCL communicator was aborted after an earlier failure ({self.broken})")
        if isinstance(array, np.ndarray):
            raise TypeError(f"{self.op_name}: the nccl backend takes CUDA tensors only, got a CPU tensor. help: "
                            "init_process_group() with no backend uses nccl for CUDA tensors and zmq for CPU "
                            "ones; or move the tensor with .cuda()")
        if self.comm is None:
            self.device = _nccl.current_device()
            self._check_in()
            if self.rank == 0:  # the id pickles (bytes in CuPy 14, a tuple of ints before)
                self.store.set("nccl/uid", pickle.dumps(_nccl.unique_id()))
            uid = pickle.loads(self.store.get("nccl/uid"))
            self.comm = _nccl.communicator(self.size, uid, self.rank)
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

    def _wait_stream(self, stream: int, deadline: float, what: str | None = None) -> None:
        """Wait for the work queued on ``stream`` so far, by ``deadline``."""
        event = _nccl.record_event(stream)
        polls = 0
        while not _nccl.event_done(event):
            polls += 1
            if polls % 64 == 0:
                try:
                    self.comm.check_async_error()
                except Exception as exc:  # noqa: BLE001 - NcclError
                    raise self._fail(f"NCCL error: {exc}", what) from None
                if time.monotonic() > deadline:
                    raise self._timed_out(what)
            if polls > 1000:
                time.sleep(2e-5)

    def _fail(self, reason: str, what: str | None, missing=()) -> DistBackendError:
        self.broken = what or f"{self.op_name} (op seq {self.op_seq})"
        try:
            self.comm.abort()
        except Exception:  # noqa: BLE001 - already failing
            pass
        return self.p2p_error(what, reason) if what else self.op_error(reason, missing)

    def _timed_out(self, what: str | None) -> DistBackendError:
        if what is not None:
            return self._fail(f"timed out after {self.timeout:g} s", what)
        key = f"nccl/stuck/{self.op_seq}"
        self.store.set(f"{key}/{self.rank}", "1")
        end = time.monotonic() + self.query_slack()
        waiting = {self.rank}
        while time.monotonic() < end and len(waiting) < self.size:
            waiting |= {p for p in range(self.size) if self.store.check([f"{key}/{p}"])}
            time.sleep(0.01)
        missing = [p for p in range(self.size) if p not in waiting]
        return self._fail(f"timed out after {self.timeout:g} s (ranks not waiting in this op: {missing or 'none'})",
                          None, missing)

    def _collective(self, array, launch) -> None:
        """Run ``launch(comm, stream)`` on the current stream and wait for it by the op's deadline."""
        with self._lock:
            self._flush_p2p()
            comm = self._communicator(array)
            stream = _nccl.current_stream()
            try:
                launch(comm, stream)
            except Exception as exc:  # noqa: BLE001 - NcclError from the enqueue
                raise self._fail(f"NCCL error: {exc}", None) from None
            self._wait_stream(stream, self.deadline())

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
        flag = _nccl.empty(1, np.float32, _nccl.current_device() if self.device is None else self.device)
        flag.fill(0)
        self.all_reduce(flag, reduce_op.ReduceOp.SUM)

    # ------------------------------------------------------------ point to point
    def check_peer_rank(self, peer, what):
        if peer is None:
            raise ValueError(f"{what}: the nccl backend cannot receive from any source (NCCL has no wildcard "
                             "receive); pass src")
        super().check_peer_rank(peer, what)

    def _queue(self, kind, x, peer, tag) -> Work:
        self.check_peer_rank(peer, kind)
        work = _GroupedWork(self, kind, f"{kind} {'to' if kind == 'send' else 'from'} rank {peer} (tag {tag})",
                            peer if kind == "recv" else None)
        with self._lock:
            self._communicator(x)
            self._queued.append((kind, as_bytes(x), peer, work))
        return work

    def _flush_p2p(self) -> None:
        """Launch the queued sends and receives as one NCCL group on the current stream."""
        with self._lock:
            if not self._queued:
                return
            queued, self._queued = self._queued, []
            stream = _nccl.current_stream()
            sends = [(raw, peer) for kind, raw, peer, _ in queued if kind == "send"]
            recvs = [(raw, peer) for kind, raw, peer, _ in queued if kind == "recv"]
            try:
                self._grouped(self.comm, stream, sends, recvs)
            except Exception as exc:  # noqa: BLE001 - NcclError from the enqueue
                error = self._fail(f"NCCL error: {exc}", "send/recv group")
                for *_, work in queued:
                    work._complete(error)
                return
            for *_, work in queued:
                work._launched(stream)

    def isend(self, x, dst, tag=0):
        return self._queue("send", x, dst, tag)

    def irecv(self, x, src, tag=0):
        return self._queue("recv", x, src, tag)

    def shutdown(self):
        comm, self.comm = self.comm, None
        if comm is not None and self.broken is None:
            try:
                comm.destroy()
            except Exception:  # noqa: BLE001 - shutdown must not raise
                pass


class _GroupedWork(Work):
    """An isend/irecv: launched with the rest of its group on first wait, then waited by event."""

    def __init__(self, backend: NcclBackend, name: str, what: str, source) -> None:
        super().__init__(name)
        self._backend, self._what, self._result = backend, what, source
        self._stream = None

    def _launched(self, stream) -> None:
        self._stream = stream

    def wait(self, timeout=None) -> bool:
        be = self._backend
        if not self._future.done():
            be._flush_p2p()
            if self._stream is not None:
                seconds = be.timeout if timeout is None else _seconds(timeout)
                try:
                    be._wait_stream(self._stream, time.monotonic() + seconds, self._what)
                except DistBackendError as exc:
                    self._complete(exc)
                else:
                    self._complete()
        return super().wait(0)

    def is_completed(self) -> bool:
        return self._future.done()


def _ptr(array) -> int:
    return _nccl.data_ptr(array) if array.size else 0
