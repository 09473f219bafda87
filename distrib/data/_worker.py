"""What runs inside a DataLoader worker process: seeding, fetching, collating into shared memory.

The worker reads tasks from its socket (see ``_channel.py``), fetches the samples, collates them
into a shared-memory batch buffer (Note [shared-memory batch buffers]) and answers with a small
message naming the buffer and where each leaf tensor lies in it. It exits when told to, when its
socket reaches end-of-file, or when its parent dies (``PR_SET_PDEATHSIG``, and a check of the
parent pid whenever it has been idle for a second).
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import pickle
import random
import signal
import struct
import sys
import time
import traceback

import numpy as np

import tensor
from tensor import Tensor, _shared

from . import _channel
from .collate import collate, default_collate

__all__ = ["WorkerInfo", "get_worker_info"]

# Message kinds, worker -> main.
BATCH, OBJECT, ERROR, EXHAUSTED = 0, 1, 2, 3
ALIGN = 64
IDLE_CHECK_SECONDS = 1.0
HEADER = struct.Struct("<qBqq")  # task id, message kind, the fetch's start and end (time.time_ns); the payload


@dataclasses.dataclass(frozen=True, slots=True)
class WorkerInfo:
    """About the current DataLoader worker: ``id``, ``num_workers``, ``seed`` and its ``dataset`` copy."""

    id: int
    num_workers: int
    seed: int
    dataset: object


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker, its ``WorkerInfo``; ``None`` in the main process.

    Use it in an IterableDataset's ``__iter__`` to give each worker its own shard, or in a
    ``worker_init_fn`` to set each worker up differently.
    """
    return _worker_info


class KeyErrorMessage(str):
    """A str whose repr is itself, so that a re-raised KeyError's message stays readable."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process and raised there again."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def __reduce__(self):
        try:  # the type by reference when possible, else by value (a class defined in a function)
            pickle.dumps(self.exc_type)
            exc_type = self.exc_type
        except Exception:
            try:
                import cloudpickle  # noqa: PLC0415 - only for exception classes pickle cannot name

                exc_type = _ByValue(cloudpickle.dumps(self.exc_type))
            except Exception:
                exc_type = RuntimeError
        return _rebuild_wrapper, (exc_type, self.exc_msg, self.where)

    def reraise(self):
        """Raise ``Caught <type> <where>.\\nOriginal Traceback ...`` as the original type if possible."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        elif getattr(self.exc_type, "message", None):
            raise self.exc_type(message=msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            del exception  # no cycle through this frame: the iterator is freed (and its workers stopped) sooner


@dataclasses.dataclass
class _ByValue:
    """A class shipped by value (cloudpickle) because the main process cannot import it by name."""

    blob: bytes


def _rebuild_wrapper(exc_type, exc_msg, where):
    wrapper = ExceptionWrapper.__new__(ExceptionWrapper)
    if isinstance(exc_type, _ByValue):
        import cloudpickle  # noqa: PLC0415

        exc_type = cloudpickle.loads(exc_type.blob)
    wrapper.exc_type, wrapper.exc_msg, wrapper.where = exc_type, exc_msg, where
    return wrapper


def dumps(obj) -> bytes:
    """Pickle ``obj``; with cloudpickle if plain pickle cannot (lambdas, local classes)."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        import cloudpickle  # noqa: PLC0415 - only needed for what plain pickle cannot do

        return cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed Python's ``random``, our RNG and numpy's legacy RNG for worker ``worker_id``.

    ``random`` and ``tensor`` get ``base_seed + worker_id``; numpy gets a state derived from
    ``(base_seed, worker_id)`` by ``SeedSequence``, so that its stream differs from the others.
    Returns the worker's seed.
    """
    seed = base_seed + worker_id
    random.seed(seed)
    tensor.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([base_seed, worker_id]).generate_state(4))
    return seed


# ---------------------------------------------------------------- batch buffers
class _Buffer:
    __slots__ = ("capacity", "fd", "map", "view")

    def __init__(self, capacity: int) -> None:
        fd = _shared.fd_call(os.memfd_create, "distrib-dataloader-batch", os.MFD_CLOEXEC)
        try:
            _shared._fill(fd, 0, capacity, None, "a DataLoader batch buffer")
            self.map = mmap.mmap(fd, capacity)
        except BaseException:
            os.close(fd)
            raise
        self.fd, self.capacity = fd, capacity  # fd is sent with the buffer's first batch, then closed
        self.view = np.frombuffer(self.map, np.uint8)


class _Leaf:
    """Where one leaf of a batch lies in its buffer."""

    __slots__ = ("dtype", "is_tensor", "offset", "shape", "strides")

    def __init__(self, offset, shape, strides, dtype, is_tensor) -> None:
        self.offset, self.shape, self.strides, self.dtype, self.is_tensor = offset, shape, strides, dtype, is_tensor

    def __reduce__(self):
        return _Leaf, (self.offset, self.shape, self.strides, self.dtype, self.is_tensor)


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) & ~(ALIGN - 1)


class _BumpAllocator:
    """Hands out consecutive aligned slices of a buffer; plain memory once the buffer is full."""

    def __init__(self, buffer: _Buffer | None) -> None:
        self.buffer, self.used, self.overflowed = buffer, 0, False

    def __call__(self, shape, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        buf = self.buffer
        if buf is None or self.used + nbytes > buf.capacity:
            self.overflowed = True
            return np.empty(shape, dtype)
        out = np.ndarray(shape, dtype, buffer=buf.view, offset=self.used)
        self.used = _aligned(self.used + nbytes)
        return out


def map_nested(obj, leaf):
    """``obj`` rebuilt with ``leaf(x)`` in place of everything below its lists, tuples, named tuples
    and dicts (of exactly those types; other containers are leaves too)."""
    kind = type(obj)
    if kind is list:
        return [map_nested(x, leaf) for x in obj]
    if kind is tuple:
        return tuple(map_nested(x, leaf) for x in obj)
    if kind is dict:
        return {k: map_nested(v, leaf) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return kind(*(map_nested(x, leaf) for x in obj))
    return leaf(obj)


def _strip(obj, leaves: list):
    """``obj`` with every CPU tensor and numeric numpy array replaced by its index in ``leaves``."""

    def strip(x):
        if isinstance(x, Tensor) and x._device.type == "cpu" and not x.requires_grad:
            leaves.append(x._data)
            return _LeafRef(len(leaves) - 1, True)
        if isinstance(x, np.ndarray) and x.dtype.kind in "biufc":
            leaves.append(x)
            return _LeafRef(len(leaves) - 1, False)
        return x

    return map_nested(obj, strip)


class _LeafRef:
    __slots__ = ("index", "is_tensor")

    def __init__(self, index, is_tensor) -> None:
        self.index, self.is_tensor = index, is_tensor


def _fill_leaves(obj, leaves: list):
    """Replace the ``_LeafRef``s of ``_strip``'s output by ``leaves[index]`` (placed ``_Leaf``s)."""

    def fill(x):
        if isinstance(x, _LeafRef):
            leaf = leaves[x.index]
            leaf.is_tensor = x.is_tensor
            return leaf
        return x

    return map_nested(obj, fill)


class _Ring:
    """A worker's batch buffers: numbered, reused once the main process has freed them."""

    def __init__(self) -> None:
        self.buffers: dict[int, _Buffer] = {}
        self.free: set[int] = set()
        self.expected = 0  # bytes the last batch needed

    def take(self, nbytes: int) -> tuple[int, _Buffer]:
        """A free buffer of at least ``nbytes`` (the smallest), else a new or enlarged one."""
        best = None
        for buf_id in self.free:
            cap = self.buffers[buf_id].capacity
            if cap >= nbytes and (best is None or cap < self.buffers[best].capacity):
                best = buf_id
        if best is None:
            size = max(mmap.PAGESIZE, -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE)
            if self.free:  # enlarge a free buffer that is too small rather than keep both
                best = self.free.pop()
                self._close(self.buffers.pop(best))
            else:
                best = len(self.buffers)
                while best in self.buffers:
                    best += 1
            self.buffers[best] = _Buffer(size)
        else:
            self.free.discard(best)
        return best, self.buffers[best]

    @staticmethod
    def _close(buf: _Buffer) -> None:
        if buf.fd is not None:
            os.close(buf.fd)
        buf.view = None
        try:
            buf.map.close()
        except BufferError:  # a view of it is still alive somewhere; the mapping goes with it
            pass

    def pack(self, result, allocator: _BumpAllocator | None) -> tuple[int, bytes, tuple]:
        """Put ``result``'s leaves into a buffer; returns (message kind, payload, fds to send)."""
        leaves: list = []
        struct = _strip(result, leaves)
        if not leaves:
            if allocator is not None and allocator.buffer is not None:
                self.free.add(self._id_of(allocator.buffer))
            return OBJECT, dumps(result), ()
        buf = allocator.buffer if allocator is not None else None
        placed, end = [], 0
        start = buf.view.__array_interface__["data"][0] if buf is not None else 0
        fresh = []  # leaves that must be copied in
        for array in leaves:
            address = array.__array_interface__["data"][0]
            if buf is not None and start <= address < start + buf.capacity and not allocator.overflowed:
                placed.append(_Leaf(address - start, array.shape, array.strides, array.dtype.str, True))
                end = max(end, address - start + _extent(array))
            else:
                placed.append(None)
                fresh.append(array)
        need = _aligned(end) + sum(_aligned(a.nbytes) for a in fresh)
        if buf is None or need > buf.capacity or allocator.overflowed:
            if buf is not None:
                self.free.add(self._id_of(buf))
            buf_id, buf = self.take(need)
            placed, end = [None] * len(leaves), 0
            fresh = leaves
        else:
            buf_id = self._id_of(buf)
        offset = _aligned(end)
        for i, array in enumerate(leaves):
            if placed[i] is not None:
                continue
            out = np.ndarray(array.shape, array.dtype, buffer=buf.view, offset=offset)
            np.copyto(out, array)
            placed[i] = _Leaf(offset, array.shape, out.strides, array.dtype.str, True)
            offset = _aligned(offset + array.nbytes)
        self.expected = max(offset, _aligned(end))
        fds = ()
        new_capacity = 0
        if buf.fd is not None:
            fds, new_capacity = (buf.fd,), buf.capacity
        return BATCH, dumps((buf_id, new_capacity, _fill_leaves(struct, placed))), fds

    def sent(self, fds: tuple) -> None:
        """The main process has its copy of these descriptors: close ours (the mapping stays)."""
        for buf in self.buffers.values():
            if buf.fd is not None and buf.fd in fds:
                os.close(buf.fd)
                buf.fd = None

    def _id_of(self, buf: _Buffer) -> int:
        for buf_id, b in self.buffers.items():
            if b is buf:
                return buf_id
        raise KeyError("buffer not in ring")


def _extent(array: np.ndarray) -> int:
    if array.size == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(array.shape, array.strides) if s > 0) + array.itemsize


# ---------------------------------------------------------------- the loop
class _Fetcher:
    def __init__(self, dataset, is_iterable: bool, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset, self.is_iterable, self.auto = dataset, is_iterable, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.default = collate_fn is default_collate
        self.iterator = None
        self.ended = False

    def reset(self) -> None:
        self.iterator, self.ended = None, False

    def samples(self, index):
        """The samples of one task (raises StopIteration when an iterable dataset is done)."""
        if self.is_iterable:
            if self.ended:
                raise StopIteration
            if self.iterator is None:
                self.iterator = iter(self.dataset)
            if not self.auto:
                return next(self.iterator)
            data = []
            for _ in index:
                try:
                    data.append(next(self.iterator))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
            return data
        if not self.auto:
            return self.dataset[index]
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems is not None:
            return getitems(index)
        dataset = self.dataset
        return [dataset[i] for i in index]


def _watch_parent(use_pdeathsig: bool, main_pid: int | None) -> int:
    """Arm the parent-death signal; exit at once if the parent is already gone. Returns the parent pid."""
    parent = os.getppid()
    if use_pdeathsig:
        from distrib.multiprocessing.spawn import set_parent_death_signal  # noqa: PLC0415

        set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent or (main_pid is not None and parent != main_pid):
        os._exit(1)  # the parent died before the signal was armed
    return parent


def worker_loop(sock, payload, worker_id: int, num_workers: int, base_seed: int, is_iterable: bool,
                auto_collation: bool, drop_last: bool, main_pid: int, use_pdeathsig: bool,
                inherited_fds: tuple = ()) -> None:
    """The body of worker ``worker_id`` (started by ``_pool.Pool``)."""
    global _worker_info
    parent = _watch_parent(use_pdeathsig, main_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    for fd in inherited_fds:  # (fork) other workers' main-side sockets: let their EOF through
        try:
            os.close(fd)
        except OSError:
            pass
    try:
        if isinstance(payload, bytes):
            import cloudpickle  # noqa: PLC0415, F401 - registers what the payload needs to load

            payload = pickle.loads(payload)
        dataset, collate_fn, worker_init_fn = payload
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    except Exception:
        init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        dataset = collate_fn = None
    fetcher = _Fetcher(dataset, is_iterable, auto_collation, collate_fn, drop_last)
    ring = _Ring()
    sock.settimeout(IDLE_CHECK_SECONDS)
    where = f"in DataLoader worker process {worker_id}"
    while True:
        try:
            message, _ = _channel.recv(sock)
        except TimeoutError:
            if os.getppid() != parent:
                break
            continue
        except OSError:
            break
        if message is None:
            break
        task = pickle.loads(message)
        if task is None:
            break
        if task[0] == "reset":
            fetcher.reset()
            continue
        task_id, index, freed = task
        ring.free.update(freed)
        fds = ()
        start = time.time_ns()  # shipped with the result: the main process's profiler shows the fetch
        if init_error is not None:
            kind, out = ERROR, dumps(init_error)
        else:
            try:
                kind, out, fds = _run_task(fetcher, ring, index)
            except StopIteration:
                kind, out = EXHAUSTED, b""
            except Exception:
                kind, out = ERROR, dumps(ExceptionWrapper(where=where))
        try:
            _channel.send(sock, HEADER.pack(task_id, kind, start, time.time_ns()) + out, fds)
        except OSError:
            break
        if fds:
            ring.sent(fds)
    sock.close()


def _run_task(fetcher: _Fetcher, ring: _Ring, index):
    data = fetcher.samples(index)
    if fetcher.default and fetcher.auto:
        allocator = _BumpAllocator(ring.take(ring.expected)[1] if ring.expected else None)
        try:
            result = collate(data, allocator)
        except BaseException:
            if allocator.buffer is not None:
                ring.free.add(ring._id_of(allocator.buffer))
            raise
        return ring.pack(result, allocator)
    result = fetcher.collate_fn(data)
    return ring.pack(result, None)
