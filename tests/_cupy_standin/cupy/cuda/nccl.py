"""``cupy.cuda.nccl``: a fake NCCL that really moves data between the processes of a communicator.

Each communicator belongs to the device current when it is made; two ranks on one device (of
one host) is NCCL's "Duplicate GPU" error. An operation checks its buffers (device pointers of
the communicator's device) and stream, then is queued: it runs on the communicator's progress
thread once the work before it on its stream is done, and later work on that stream (and
events recorded there) waits for it. A peer that leaves while an operation needs it sets the
asynchronous error (``check_async_error``) and the operation hangs, as in NCCL, until
``abort()``. Transport: ``_nccl_mesh``.
"""

from __future__ import annotations

import queue
import socket
import threading

import numpy as np

from .. import _address, _state
from . import _nccl_mesh
from . import stream as _stream

available = True
NCCL_UNIQUE_ID_BYTES = 128
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = range(5)
(NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_UINT32, NCCL_INT64, NCCL_UINT64, NCCL_FLOAT16, NCCL_FLOAT32,
 NCCL_FLOAT64, NCCL_BFLOAT16) = range(10)
NCCL_CHAR, NCCL_INT, NCCL_HALF, NCCL_FLOAT, NCCL_DOUBLE = NCCL_INT8, NCCL_INT32, NCCL_FLOAT16, NCCL_FLOAT32, \
    NCCL_FLOAT64
_DTYPES = {NCCL_INT8: np.int8, NCCL_UINT8: np.uint8, NCCL_INT32: np.int32, NCCL_UINT32: np.uint32,
           NCCL_INT64: np.int64, NCCL_UINT64: np.uint64, NCCL_FLOAT16: np.float16, NCCL_FLOAT32: np.float32,
           NCCL_FLOAT64: np.float64}
_REDUCE = {NCCL_SUM: np.add, NCCL_PROD: np.multiply, NCCL_MAX: np.maximum, NCCL_MIN: np.minimum,
           NCCL_AVG: np.add}
_NAMES = {0: "NCCL_ERROR_SUCCESS", 1: "NCCL_ERROR_UNHANDLED_CUDA_ERROR", 2: "NCCL_ERROR_SYSTEM_ERROR",
          3: "NCCL_ERROR_INTERNAL_ERROR", 4: "NCCL_ERROR_INVALID_ARGUMENT", 5: "NCCL_ERROR_INVALID_USAGE",
          6: "NCCL_ERROR_REMOTE_ERROR"}
_TEXTS = {1: "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
          2: "unhandled system error (run with NCCL_DEBUG=INFO for details)", 3: "internal error",
          4: "invalid argument (run with NCCL_DEBUG=WARN for details)",
          5: "invalid usage (run with NCCL_DEBUG=WARN for details)",
          6: "remote process exited or there was a network error"}


class NcclError(RuntimeError):
    """A failed NCCL call (``status``: ncclResult_t); ``detail`` is what NCCL_DEBUG=WARN would say."""

    def __init__(self, status: int, detail: str = "") -> None:
        self.status = status
        super().__init__(f"{_NAMES[status]}: {_TEXTS[status]}" + (f" ({detail})" if detail else ""))

    def __reduce__(self):
        return (type(self), (self.status,))


def get_version() -> int:
    """The NCCL version the stand-in claims (2.18.5)."""
    return 21805


def get_build_version() -> int:
    """The NCCL version the stand-in claims (2.18.5)."""
    return 21805


def get_unique_id() -> tuple:
    """A new id (a tuple of 128 ints, as in CuPy 13): a bootstrap root now listens in this process."""
    _state.check_usable()
    return _nccl_mesh.new_unique_id()


class _Group(threading.local):
    def __init__(self) -> None:
        self.depth = 0
        self.calls: list = []  # (communicator, step, stream, deps) issued inside the group


_group = _Group()


def groupStart() -> None:
    """Start (or nest) a group: its calls are launched together at the outermost ``groupEnd``."""
    _group.depth += 1


def groupEnd() -> None:
    """Launch the calls issued since the outermost ``groupStart``: sends first, so that a group
    of sends and receives between two ranks cannot deadlock."""
    if _group.depth == 0:
        raise NcclError(5, "groupEnd without groupStart")
    _group.depth -= 1
    if _group.depth:
        return
    calls, _group.calls = _group.calls, []
    by_comm: dict = {}
    for comm, step, handle, deps in calls:
        by_comm.setdefault(id(comm), (comm, handle, [], []))[2 if step.is_send else 3].append((step, deps))
    for comm, handle, sends, rest in by_comm.values():
        comm._submit([s for s, _ in sends + rest], handle, [d for _, ds in sends + rest for d in ds])


class _Step:
    """One operation's work on the host views of its buffers, run on the progress thread."""

    is_send = False

    def __init__(self, op: str, run, is_send: bool = False) -> None:
        self.op, self.run, self.is_send = op, run, is_send


class NcclCommunicator:
    """A communicator of ``ndev`` ranks on the current device (blocks until all have joined)."""

    def __init__(self, ndev: int, commId, rank: int) -> None:
        if not isinstance(commId, tuple):
            raise TypeError(f"Argument 'commId' has incorrect type (expected tuple, got {type(commId).__name__})")
        assert len(commId) == NCCL_UNIQUE_ID_BYTES
        if not 0 <= rank < ndev:
            raise NcclError(4, f"rank {rank} of {ndev}")
        self._device = _state.get_device()
        info = {"host": socket.gethostname(), "device": _state.VISIBLE[self._device]}
        self._mesh = _nccl_mesh.Mesh(commId, ndev, rank, info)
        self._check_devices()
        self._rank, self._size = rank, ndev
        self._error = 0
        self._aborted = threading.Event()
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._progress, daemon=True, name=f"fake-nccl-rank{rank}")
        self._thread.start()

    def _check_devices(self) -> None:
        mine = self._mesh.table[self._mesh.rank]
        for peer, info in self._mesh.table.items():
            if peer != self._mesh.rank and (info["host"], info["device"]) == (mine["host"], mine["device"]):
                self._mesh.close()
                raise NcclError(5, f"Duplicate GPU detected : rank {self._mesh.rank} and rank {peer} both on "
                                   f"CUDA device {mine['device']}")

    # ------------------------------------------------------------ queries and life cycle
    def device_id(self) -> int:
        """The communicator's device."""
        self._check_alive()
        return self._device

    def rank_id(self) -> int:
        """This process's rank."""
        self._check_alive()
        return self._rank

    def size(self) -> int:
        """The number of ranks."""
        self._check_alive()
        return self._size

    def check_async_error(self) -> None:
        """Raise the error an operation met asynchronously (a peer that left), if any."""
        if self._error:
            raise NcclError(self._error)

    def destroy(self) -> None:
        """Finish the queued operations, then close (``ncclCommDestroy``)."""
        if self._mesh is None:
            return
        self._queue.put(None)
        self._thread.join(60)
        self._close()

    def abort(self) -> None:
        """Stop at once: queued and running operations end without completing their data."""
        if self._mesh is None:
            return
        self._aborted.set()
        self._queue.put(None)
        self._close()

    def _close(self) -> None:
        mesh, self._mesh = self._mesh, None
        if mesh is not None:
            mesh.close()

    def __del__(self) -> None:
        try:
            self.abort()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _check_alive(self) -> None:
        if self._mesh is None:
            raise NcclError(4, "the communicator was destroyed or aborted")

    # ------------------------------------------------------------ launching
    def _view(self, ptr: int, count: int, datatype: int) -> tuple[int, int, type]:
        """Validate a buffer argument: ``(ptr, nbytes, dtype)``."""
        if datatype not in _DTYPES:
            raise NcclError(4, f"datatype {datatype}")
        dtype = _DTYPES[datatype]
        nbytes = count * np.dtype(dtype).itemsize
        if nbytes:
            try:
                device = _address.region_of(ptr, nbytes).device_id
            except _state.CUDARuntimeError:
                raise NcclError(4, f"invalid device pointer 0x{ptr:x}") from None
            if device != self._device:
                raise NcclError(4, f"buffer 0x{ptr:x} is on device {device}, the communicator on {self._device}")
        return ptr, nbytes, dtype

    def _launch(self, step: _Step, stream: int) -> None:
        self._check_alive()
        try:
            deps = _stream.dependencies(stream, self._device)
            device, _ = _stream._key(stream, self._device)
        except _state.CUDARuntimeError as exc:
            raise NcclError(1, str(exc)) from None
        if device != self._device:
            raise NcclError(1, f"stream of device {device} for a communicator on device {self._device}")
        _state.trace("nccl", step.op, stream)
        if _group.depth:
            _group.calls.append((self, step, stream, deps))
        else:
            self._submit([step], stream, deps)

    def _submit(self, steps: list, stream: int, deps: list) -> None:
        work = _stream.Work()
        _stream.enqueue(stream, work, self._device)
        self._queue.put((steps, deps, work))

    def _progress(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            steps, deps, work = item
            try:
                for dep in deps:
                    dep.wait()
                for step in steps:
                    if self._aborted.is_set():
                        break
                    step.run()
            except Exception as exc:  # noqa: BLE001 - becomes the asynchronous error
                self._error = 6 if isinstance(exc, _nccl_mesh.PeerGone) else 3
                self._aborted.wait()  # NCCL's kernels spin until the communicator is aborted
            finally:
                work.finish()

    def _recv(self, peer: int) -> bytearray | None:
        return self._mesh.recv(peer, self._aborted.is_set)

    def _peers(self) -> list[int]:
        return [p for p in range(self._size) if p != self._rank]

    # ------------------------------------------------------------ operations
    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream) -> None:
        """Reduce ``count`` elements over all ranks, in rank order, into every rank's ``recvbuf``."""
        send, nbytes, dtype = self._view(sendbuf, count, datatype)
        recv, _, _ = self._view(recvbuf, count, datatype)
        reduce = self._reducer(op, dtype)

        def run():
            mine = _address.host_bytes(send, nbytes).copy() if nbytes else bytearray()
            parts = self._exchange(mine, self._peers())
            if nbytes and None not in parts.values():
                _address.host_bytes(recv, nbytes)[...] = reduce([parts.get(r, mine) for r in range(self._size)])

        self._launch(_Step("allReduce", run), stream)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream) -> None:
        """Reduce ``count`` elements over all ranks into ``recvbuf`` of rank ``root``."""
        send, nbytes, dtype = self._view(sendbuf, count, datatype)
        recv, _, _ = self._view(recvbuf, count if self._rank == root else 0, datatype)
        reduce = self._reducer(op, dtype)

        def run():
            mine = _address.host_bytes(send, nbytes).copy() if nbytes else bytearray()
            if self._rank != root:
                self._mesh.send(root, mine)
                return
            parts = {p: self._recv(p) for p in self._peers()}
            if nbytes and None not in parts.values():
                _address.host_bytes(recv, nbytes)[...] = reduce([parts.get(r, mine) for r in range(self._size)])

        self._launch(_Step("reduce", run), stream)

    def broadcast(self, sendbuff, recvbuff, count, datatype, root, stream) -> None:
        """Copy rank ``root``'s ``sendbuff`` into every rank's ``recvbuff``."""
        send, nbytes, _ = self._view(sendbuff, count if self._rank == root else 0, datatype)
        recv, nbytes, _ = self._view(recvbuff, count, datatype)

        def run():
            if self._rank == root:
                data = _address.host_bytes(send, nbytes).copy() if nbytes else bytearray()
                for p in self._peers():
                    self._mesh.send(p, data)
                if nbytes:
                    _address.host_bytes(recv, nbytes)[...] = data
                return
            data = self._recv(root)
            if nbytes and data is not None:
                _address.host_bytes(recv, nbytes)[...] = np.frombuffer(data, np.uint8)

        self._launch(_Step("broadcast", run), stream)

    def bcast(self, buff, count, datatype, root, stream) -> None:
        """``broadcast`` in place."""
        self.broadcast(buff, buff, count, datatype, root, stream)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream) -> None:
        """Every rank's ``count`` elements, rank-major, into every rank's ``recvbuf``."""
        send, nbytes, _ = self._view(sendbuf, count, datatype)
        recv, _, _ = self._view(recvbuf, count * self._size, datatype)

        def run():
            mine = _address.host_bytes(send, nbytes).copy() if nbytes else bytearray()
            parts = self._exchange(mine, self._peers())
            for r in range(self._size):
                if nbytes and parts.get(r, mine) is not None:
                    _address.host_bytes(recv + r * nbytes, nbytes)[...] = np.frombuffer(parts.get(r, mine), np.uint8)

        self._launch(_Step("allGather", run), stream)

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream) -> None:
        """Reduce over all ranks; rank r keeps block r (``recvcount`` elements)."""
        send, _, dtype = self._view(sendbuf, recvcount * self._size, datatype)
        recv, nbytes, _ = self._view(recvbuf, recvcount, datatype)
        reduce = self._reducer(op, dtype)

        def run():
            for p in self._peers():
                self._mesh.send(p, _address.host_bytes(send + p * nbytes, nbytes).copy() if nbytes else b"")
            mine = _address.host_bytes(send + self._rank * nbytes, nbytes).copy() if nbytes else bytearray()
            parts = {p: self._recv(p) for p in self._peers()}
            if nbytes and None not in parts.values():
                _address.host_bytes(recv, nbytes)[...] = reduce([parts.get(r, mine) for r in range(self._size)])

        self._launch(_Step("reduceScatter", run), stream)

    def send(self, sendbuf, count, datatype, peer, stream) -> None:
        """Send ``count`` elements to ``peer`` (matched in order with its ``recv``)."""
        self._check_peer(peer)
        send, nbytes, _ = self._view(sendbuf, count, datatype)
        self._launch(_Step("send", lambda: self._mesh.send(peer, _address.host_bytes(send, nbytes).copy()
                                                   if nbytes else b""), is_send=True), stream)

    def recv(self, recvbuf, count, datatype, peer, stream) -> None:
        """Receive ``count`` elements from ``peer``."""
        self._check_peer(peer)
        recv, nbytes, _ = self._view(recvbuf, count, datatype)

        def run():
            data = self._recv(peer)
            if data is not None and len(data) != nbytes:
                raise NcclError(3, f"recv of {nbytes} bytes matched a send of {len(data)} from rank {peer}")
            if nbytes and data is not None:
                _address.host_bytes(recv, nbytes)[...] = np.frombuffer(data, np.uint8)

        self._launch(_Step("recv", run), stream)

    # ------------------------------------------------------------ helpers
    def _check_peer(self, peer: int) -> None:
        if not 0 <= peer < self._size or peer == self._rank:
            raise NcclError(4, f"peer {peer} (rank {self._rank} of {self._size})")

    def _exchange(self, mine, peers) -> dict:
        for p in peers:
            self._mesh.send(p, mine)
        return {p: self._recv(p) for p in peers}

    def _reducer(self, op: int, dtype):
        if op not in _REDUCE:
            raise NcclError(4, f"reduction op {op}")
        ufunc, size = _REDUCE[op], self._size

        def reduce(parts: list) -> np.ndarray:
            """Reduce ``count`` elements over all ranks into ``recvbuf`` of rank ``root``."""
            arrays = [np.frombuffer(p, dtype) for p in parts]
            out = arrays[0].copy()
            for a in arrays[1:]:
                ufunc(out, a, out=out)
            if op == NCCL_AVG:
                out = (out / size).astype(dtype)
            return out.view(np.uint8)

        return reduce
