"""The main process's side of a DataLoader worker pool: start, feed, receive, detect death, stop.

Each worker has one ``SOCK_SEQPACKET`` socket to the main process (``_channel.py``): tasks go
down it, results and new batch-buffer descriptors come back. The main process waits on the
sockets and the workers' process sentinels together (one ``selectors`` object), so a result, a
worker's death and a timeout are all noticed at once, with no polling.

Shutting down (end of epoch, ``del`` of the iterator, breaking out of a loop, interpreter exit)
sends each worker a stop message and closes the sockets; a worker that does not exit within
``SHUTDOWN_GRACE`` seconds (busy in a long ``__getitem__``) gets SIGTERM, then SIGKILL, and
every worker is reaped. Workers also die with their parent (``_worker.py``).
"""

from __future__ import annotations

import atexit
import collections
import mmap
import os
import pickle
import selectors
import signal
import threading
import time
import weakref
from multiprocessing.connection import wait

import numpy as np

import tensor
from tensor import _dispatch
from tensor.profiler import _recorder

from . import _channel, _worker

SHUTDOWN_GRACE = float(os.environ.get("DISTRIB_DATALOADER_SHUTDOWN_GRACE", "2"))
_STOP = pickle.dumps(None)
_cpu = tensor.device("cpu")
_live_pools: weakref.WeakSet = weakref.WeakSet()


def worker_died_error(pid: int, exitcode: int | None) -> RuntimeError:
    """PyTorch's messages for a worker killed by a signal or exiting with a non-zero code."""
    if exitcode is not None and exitcode < 0:
        sig = -exitcode
        try:
            name = signal.strsignal(sig) or f"signal {sig}"
        except ValueError:
            name = f"Unknown signal {sig}"
        msg = f"DataLoader worker (pid {pid}) is killed by signal: {name}. "
        if sig == signal.SIGBUS:
            msg += ("It is possible that dataloader's workers are out of shared memory. Please try to raise "
                    "your shared memory limit. help: in Docker, `docker run --shm-size=2g ...`; on a host, "
                    "`mount -o remount,size=8G /dev/shm`.")
        return RuntimeError(msg)
    if exitcode is None:
        return RuntimeError(f"DataLoader worker (pid {pid}) closed its connection unexpectedly.")
    return RuntimeError(f"DataLoader worker (pid {pid}) exited unexpectedly with exit code {exitcode}. "
                        "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give "
                        "better error trace.")


def _sharing_dumps(obj) -> bytes:
    """cloudpickle (lambdas and local classes work), with tensors shared as ForkingPickler would."""
    import io  # noqa: PLC0415
    from collections import ChainMap  # noqa: PLC0415
    from multiprocessing.reduction import ForkingPickler  # noqa: PLC0415

    import cloudpickle  # noqa: PLC0415

    import distrib.multiprocessing  # noqa: PLC0415, F401 - registers the tensor reducers

    class SharingPickler(cloudpickle.Pickler):
        dispatch_table = ChainMap(ForkingPickler._extra_reducers, cloudpickle.Pickler.dispatch_table)

    buffer = io.BytesIO()
    SharingPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def _build(obj, base: np.ndarray):
    """``obj`` with each ``_Leaf`` replaced by the array (or tensor) it places in ``base``."""

    def build(x):
        if isinstance(x, _worker._Leaf):
            array = np.ndarray(x.shape, np.dtype(x.dtype), buffer=base, offset=x.offset, strides=x.strides)
            return _dispatch.make(array, _cpu) if x.is_tensor else array
        return x

    return _worker.map_nested(obj, build)


class Pool:
    """``num_workers`` worker processes for one DataLoader iterator."""

    def __init__(self, loader, base_seed: int, is_iterable: bool) -> None:
        from distrib.multiprocessing import _context  # noqa: PLC0415 - loaded only for worker pools

        n = loader.num_workers
        # Workers that leave CUDA alone may fork even after CUDA was initialised here, as in PyTorch;
        # one that touches it gets an error naming the fix.
        ctx = _context.without_cuda_check(loader.multiprocessing_context or _context.default_context.get_context())
        method = ctx.get_start_method()
        self.num_workers = n
        self.owner = os.getpid()
        self.closed = False
        self.freed = [collections.deque() for _ in range(n)]  # buffers the main process let go of
        self.maps: list[dict[int, mmap.mmap]] = [{} for _ in range(n)]
        self.socks: list = []
        self.procs: list = []
        self.selector = selectors.DefaultSelector()
        objects = (loader.dataset, loader.collate_fn, loader.worker_init_fn)
        use_pdeathsig = method == "forkserver" or threading.current_thread() is threading.main_thread()
        _live_pools.add(self)
        try:
            for w in range(n):
                main_end, worker_end = _channel.socket_pair()
                payload = objects if method == "fork" else _sharing_dumps(objects)
                inherited = tuple(s.fileno() for s in self.socks) if method == "fork" else ()
                process = ctx.Process(
                    target=_worker.worker_loop, name=f"DataLoader worker {w}", daemon=True,
                    args=(worker_end, payload, w, n, base_seed, is_iterable, loader._auto_collation,
                          loader.drop_last, None if method == "forkserver" else os.getpid(), use_pdeathsig,
                          inherited))
                try:
                    process.start()
                finally:
                    worker_end.close()
                self.socks.append(main_end)
                self.procs.append(process)
                self.selector.register(main_end, selectors.EVENT_READ, ("sock", w))
                self.selector.register(process.sentinel, selectors.EVENT_READ, ("exit", w))
        except BaseException:
            self.shutdown()
            raise

    # ------------------------------------------------------------ sending
    def send(self, w: int, task) -> None:
        """Send a task (with the buffers freed since the last one) to worker ``w``."""
        queue, freed = self.freed[w], []
        while queue:  # (a garbage collection may append while we drain)
            freed.append(queue.popleft())
        try:
            _channel.send(self.socks[w], pickle.dumps((*task, freed), protocol=pickle.HIGHEST_PROTOCOL))
        except OSError:
            self.fail(w)

    def reset(self) -> None:
        """Tell every worker to restart its iterable dataset (a new epoch of persistent workers)."""
        for w in range(self.num_workers):
            try:
                _channel.send(self.socks[w], pickle.dumps(("reset",)))
            except OSError:
                self.fail(w)

    # ------------------------------------------------------------ receiving
    def receive(self, deadline: float | None, timeout: float) -> list:
        """Messages ``(worker, task_id, kind, data)`` that are ready, waiting until ``deadline``.

        Raises:
            RuntimeError: when a worker died, or (``DataLoader timed out after N seconds``) at the deadline.
        """
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            events = self.selector.select(wait)
            if not events:
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds")
                continue
            out = []
            for key, _ in events:
                what, w = key.data
                if what == "exit":
                    self.fail(w)
                message, fds = _channel.recv(self.socks[w])
                if message is None:
                    self.fail(w)
                out.append(self._decode(w, message, fds))
            return out

    def _decode(self, w: int, message: bytes, fds: list):
        task_id, kind, start, end = _worker.HEADER.unpack_from(message)
        if _recorder.current is not None:  # tensor.profiler: the worker's fetch, on its own row
            _recorder.current.add_wall("DataLoader worker fetch", "dataloader", start, end,
                                       {"worker_id": w, "task": task_id}, f"DataLoader worker {w}")
        body = memoryview(message)[_worker.HEADER.size:]
        if kind == _worker.BATCH:
            buf_id, new_capacity, struct = pickle.loads(body)
            if new_capacity:
                try:
                    self.maps[w][buf_id] = mmap.mmap(fds[0], new_capacity)
                finally:
                    for fd in fds:
                        os.close(fd)
            base = np.frombuffer(self.maps[w][buf_id], np.uint8)
            weakref.finalize(base, self.freed[w].append, buf_id)
            return w, task_id, kind, _build(struct, base)
        for fd in fds:
            os.close(fd)
        if kind in (_worker.OBJECT, _worker.ERROR):
            return w, task_id, kind, pickle.loads(body)
        return w, task_id, kind, None

    def fail(self, w: int):
        """Worker ``w`` is gone: shut the pool down and raise PyTorch's error for it."""
        process = self.procs[w]
        process.join(timeout=5)
        error = worker_died_error(process.pid, process.exitcode)
        self.shutdown()
        raise error

    # ------------------------------------------------------------ stopping
    def pids(self) -> list[int]:
        """The workers' process ids."""
        return [p.pid for p in self.procs]

    def shutdown(self) -> None:
        """Stop the workers (stop message, then SIGTERM and SIGKILL after grace periods) and reap them."""
        if self.closed:
            return
        self.closed = True
        _live_pools.discard(self)
        if os.getpid() != self.owner:  # a fork child's copy: the workers are not its to stop
            for sock in self.socks:
                sock.close()
            return
        for sock in self.socks:
            try:
                sock.setblocking(False)
                sock.send(b"\x00" + _STOP)
            except OSError:
                pass
            sock.close()
        try:
            self.selector.close()
        except Exception:
            pass
        alive = [p for p in self.procs if p.pid is not None]
        for grace, escalate in ((SHUTDOWN_GRACE, "terminate"), (1.0, "kill"), (5.0, None)):
            deadline = time.monotonic() + grace
            while alive and time.monotonic() < deadline:
                wait([p.sentinel for p in alive], timeout=max(0.0, deadline - time.monotonic()))
                alive = [p for p in alive if p.is_alive()]
            if not alive or escalate is None:
                break
            for p in alive:
                getattr(p, escalate)()
        for p in self.procs:
            if p.pid is not None and not p.is_alive():
                p.join(timeout=0)
        self.maps = [{} for _ in range(self.num_workers)]


def _shutdown_all() -> None:
    for pool in list(_live_pools):
        pool.shutdown()


atexit.register(_shutdown_all)
