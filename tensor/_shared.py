"""Tensor storage in OS shared memory: ``Tensor.share_memory_()``, ``is_shared()``, ``empty_shared``.

A shared CPU tensor's array is a view into a ``Segment``: an ``mmap`` of a shared-memory file.
``segment_of(array)`` finds it by walking the numpy ``base`` chain, so views of a shared tensor
are shared too, and the mapping lives exactly as long as some array uses it.

Two sharing strategies, as in PyTorch:

- ``file_descriptor`` (the default): an anonymous ``memfd_create`` segment. It has no name, so
  nothing can leak, even on SIGKILL; it travels to other processes as a file descriptor, and each
  process keeps one descriptor open per live segment (see ``_fd_call`` for RLIMIT_NOFILE).
- ``file_system``: a named segment in ``/dev/shm`` (``DISTRIB_SHM_DIR`` overrides it) with a
  cross-process reference count and a watchdog process; see Note [named segments] in
  ``tensor/_shm_watchdog.py``. It keeps no descriptor open.

Note [no SIGBUS]
Memory of a tmpfs file is allocated when first touched; if the file system is full, touching a
page through a mapping kills the process with SIGBUS. So every segment's memory is allocated
before it is mapped: with ``pwrite`` of the data (which also is the fastest way to fill it), or
with ``posix_fallocate``. Both fail with ENOSPC, which becomes a RuntimeError naming the fix.
For named segments the free space is also checked first (``free_bytes``).
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import resource
import secrets
import socket
import subprocess
import sys
import threading
import weakref

import numpy as np

from . import _dispatch, _dtype
from . import _shm_watchdog as _watchdog
from ._device import device as _device_cls

__all__ = [
    "Segment", "empty_shared", "get_all_sharing_strategies", "get_sharing_strategy", "is_shared",
    "segment_of", "set_sharing_strategy", "share_memory_",
]

_STRATEGIES = ("file_descriptor", "file_system")
_STRATEGY_ENV = "DISTRIB_SHARING_STRATEGY"  # so that spawned children inherit the choice
_strategy = os.environ.get(_STRATEGY_ENV) or ("file_descriptor" if hasattr(os, "memfd_create") else "file_system")
SHM_DIR = os.environ.get("DISTRIB_SHM_DIR", "/dev/shm")
NAME_PREFIX = "distrib_"
_WATCHDOG_ENV = "DISTRIB_SHM_WATCHDOG"


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this platform supports."""
    return set(_STRATEGIES) if hasattr(os, "memfd_create") else {"file_system"}


def get_sharing_strategy() -> str:
    """The strategy new shared segments use: ``'file_descriptor'`` or ``'file_system'``."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Choose how new shared segments are made (see the module docstring), in this process and
    in the processes it starts afterwards.

    Raises:
        ValueError: for a name not in ``get_all_sharing_strategies()``.
    """
    global _strategy
    if new_strategy not in get_all_sharing_strategies():
        raise ValueError(f"invalid sharing strategy {new_strategy!r}; expected one of "
                         f"{sorted(get_all_sharing_strategies())}")
    _strategy = new_strategy
    os.environ[_STRATEGY_ENV] = new_strategy


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


class Segment:
    """One mapping of a shared-memory segment; numpy arrays over it keep it alive.

    ``ident`` identifies the segment across processes, ``address`` is where its data starts in
    this process, and ``fd`` (``file_descriptor``) or ``name`` (``file_system``) is how another
    process opens it. ``data()`` is the data as a uint8 array whose ``base`` is the segment.

    The mapping is made with libc's ``mmap`` rather than Python's, which keeps a duplicate file
    descriptor open per mapping: that would cost the ``file_system`` strategy, whose point is to
    keep none, one descriptor per tensor. The segment holds no array (a reference cycle would
    leave the memory to the garbage collector), so the memory goes with the last array over it.
    """

    fd: int | None = None
    name: str | None = None

    def __init__(self, fd: int, strategy: str, ident: tuple, nbytes: int, offset: int) -> None:
        length = offset + max(nbytes, 1)
        start = _libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if start in (None, _MAP_FAILED):
            code = ctypes.get_errno()
            raise OSError(code, f"mmap of a {length}-byte shared segment failed: {os.strerror(code)}")
        self.strategy, self.ident, self.nbytes, self.data_offset = strategy, ident, nbytes, offset
        self.address = start + offset
        self._finalizer = weakref.finalize(self, _libc.munmap, start, length)

    @property
    def __array_interface__(self) -> dict:
        return {"data": (self.address, False), "shape": (self.nbytes,), "typestr": "|u1", "version": 3}

    def data(self) -> np.ndarray:
        """The segment's data as a flat uint8 array."""
        return np.asarray(self)


# ident -> Segment, for every segment mapped in this process: receiving one twice gives the same
# memory, so aliasing between views survives the trip (Note [handles] in
# distrib/multiprocessing/_handles.py).
_segments: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_cpu = _device_cls("cpu")


def segment_of(array) -> Segment | None:
    """The segment ``array``'s memory lives in, or None if it is not in shared memory."""
    obj = array
    while isinstance(obj, np.ndarray):
        obj = obj.base
    return obj if isinstance(obj, Segment) else None


def cached_segment(ident) -> Segment | None:
    """The segment with this identity if this process already maps it."""
    return _segments.get(ident)


# ---------------------------------------------------------------- limits and errors
def _raise_nofile_limit() -> bool:
    """Raise the soft RLIMIT_NOFILE towards the hard one; False if it is already there."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = max(soft * 2, soft + 1024)
    if hard != resource.RLIM_INFINITY:
        target = min(target, hard)
    if target <= soft:
        return False
    resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return True


def too_many_files_error(exc: OSError) -> RuntimeError:
    """The error for RLIMIT_NOFILE exhaustion, naming both fixes."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return RuntimeError(
        f"Too many open files (RLIMIT_NOFILE soft={soft}, hard={hard}): the 'file_descriptor' "
        "sharing strategy keeps one file descriptor open per shared storage, and the soft limit "
        "could not be raised any further. help: raise the limit (`ulimit -n <bigger>` in the shell "
        "that starts Python), or call distrib.multiprocessing.set_sharing_strategy('file_system'), "
        f"which keeps no descriptor open per tensor. ({exc})")


def fd_call(fn, *args):
    """Call ``fn(*args)``, which opens a file descriptor; on EMFILE raise the soft limit and retry.

    Raises:
        RuntimeError: naming the fixes, when the limit cannot be raised further.
    """
    while True:
        try:
            return fn(*args)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            if exc.errno == errno.ENFILE or not _raise_nofile_limit():
                raise too_many_files_error(exc) from exc


def free_bytes(directory: str) -> int | None:
    """Free bytes in the file system of ``directory`` (None if it cannot be told)."""
    try:
        stats = os.statvfs(directory)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def _no_space_error(nbytes: int, where: str, free: int | None) -> RuntimeError:
    have = "" if free is None else f", {free} bytes free"
    return RuntimeError(
        f"not enough shared memory for a {nbytes}-byte tensor in {where}{have}. help: free some "
        "shared memory, or make it bigger (in Docker: `docker run --shm-size=2g ...`; on a host: "
        "`mount -o remount,size=8G /dev/shm`); the default 'file_descriptor' strategy uses memory "
        "outside /dev/shm.")


def _fill(fd: int, offset: int, nbytes: int, raw, where: str) -> None:
    """Allocate ``nbytes`` at ``offset`` of ``fd``: write ``raw`` there, or zero-fill if None.

    Bytes before ``offset`` (a header) are written as the reference count 1.
    """
    try:
        if offset:
            os.pwrite(fd, (1).to_bytes(8, "little").ljust(offset, b"\0"), 0)
        if raw is None:
            os.ftruncate(fd, offset + max(nbytes, 1))
            os.posix_fallocate(fd, offset, max(nbytes, 1))
            return
        view = memoryview(raw).cast("B")
        done = 0
        while done < nbytes:
            done += os.pwrite(fd, view[done:], offset + done)
        if nbytes == 0:
            os.posix_fallocate(fd, offset, 1)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.ENOMEM, errno.EFBIG, errno.EDQUOT):
            raise _no_space_error(nbytes, where, free_bytes(SHM_DIR)) from exc
        raise


# ---------------------------------------------------------------- making and opening segments
def _map(fd: int, strategy: str, ident: tuple, nbytes: int, offset: int) -> Segment:
    seg = Segment(fd, strategy, ident, nbytes, offset)
    _segments[ident] = seg
    return seg


def memfd_ident(fd: int) -> tuple:
    """The identity of a ``file_descriptor`` segment: its inode."""
    stat = os.fstat(fd)
    return ("fd", stat.st_dev, stat.st_ino)


def attach_fd(fd: int, nbytes: int) -> Segment:
    """Map a ``file_descriptor`` segment; the segment takes ownership of ``fd``."""
    ident = memfd_ident(fd)
    seg = cached_segment(ident)
    if seg is not None:
        os.close(fd)
        return seg
    seg = _map(fd, "file_descriptor", ident, nbytes, 0)
    seg.fd = fd
    weakref.finalize(seg, os.close, fd)
    return seg


def _new_memfd(nbytes: int, raw) -> Segment:
    fd = fd_call(os.memfd_create, "distrib-shared", os.MFD_CLOEXEC)
    try:
        _fill(fd, 0, nbytes, raw, "a memfd segment")
        return attach_fd(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise


def _new_named(nbytes: int, raw) -> Segment:
    free = free_bytes(SHM_DIR)
    if free is not None and nbytes + _watchdog.HEADER_BYTES > free:
        raise _no_space_error(nbytes, SHM_DIR, free)
    name = f"{NAME_PREFIX}{os.getpid()}_{secrets.token_hex(8)}"
    path = os.path.join(SHM_DIR, name)
    _watchdog_send(b"+" + path.encode())  # before the file exists: a SIGKILL cannot leak it
    fd = fd_call(os.open, path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        _fill(fd, _watchdog.HEADER_BYTES, nbytes, raw, SHM_DIR)
        return _map_named(fd, path, nbytes)
    except BaseException:
        _release_name(path, os.getpid())
        raise
    finally:
        os.close(fd)


def _map_named(fd: int, path: str, nbytes: int) -> Segment:
    seg = _map(fd, "file_system", ("fs", path), nbytes, _watchdog.HEADER_BYTES)
    seg.name = path
    weakref.finalize(seg, _release_name, path, os.getpid())
    return seg


def attach_name(path: str, nbytes: int) -> Segment:
    """Map a ``file_system`` segment by its path, taking a reference on it.

    Raises:
        RuntimeError: if the segment no longer exists.
    """
    seg = cached_segment(("fs", path))
    if seg is not None:
        return seg
    _watchdog_send(b"+" + path.encode())  # before the reference: a SIGKILL cannot leak it
    try:
        fd = fd_call(os.open, path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        _watchdog_send(b"-" + path.encode())
        raise RuntimeError(
            f"shared memory segment {path} no longer exists: the process that sent the tensor "
            "released it (or died) before this process received it. help: keep the producer and "
            "its tensors alive until every consumer has received them.") from None
    try:
        _watchdog.adjust_refcount(path, +1)
        return _map_named(fd, path, nbytes)
    finally:
        os.close(fd)


def _release_name(path: str, pid: int) -> None:
    if os.getpid() != pid:  # a fork child inherited the mapping but never took a reference
        return
    _watchdog.adjust_refcount(path, -1)
    _watchdog_send(b"-" + path.encode())


def new_segment(nbytes: int, raw=None) -> Segment:
    """A new segment of ``nbytes``, filled with the bytes of ``raw`` (or zeros if None)."""
    return (_new_memfd if _strategy == "file_descriptor" else _new_named)(nbytes, raw)


# ---------------------------------------------------------------- the watchdog client
_watchdog_lock = threading.Lock()
_watchdog_state = {"sock": None, "pid": None}


def _watchdog_send(message: bytes) -> None:
    with _watchdog_lock:
        if _watchdog_state["pid"] != os.getpid():
            _watchdog_state["sock"] = _connect_watchdog()
            _watchdog_state["pid"] = os.getpid()
        _watchdog_state["sock"].sendall(message + b"\n")


def _connect_watchdog() -> socket.socket:
    """Connect to the watchdog named in the environment, or start one (see the Note)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    address = os.environ.get(_WATCHDOG_ENV)
    if address:
        try:
            sock.connect("\0" + address)
            return sock
        except OSError:
            pass  # it exited with its last client: start a new one
    address = f"distrib-shm-watchdog-{os.getpid()}-{secrets.token_hex(8)}"
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_shm_watchdog.py")
    proc = subprocess.Popen([sys.executable, "-S", script, address], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    with proc.stdout:
        ready = proc.stdout.readline()  # the daemon writes it once it listens; EOF if it failed
    proc.wait(timeout=60)
    if ready != b"ready\n":
        raise RuntimeError(f"could not start the shared-memory watchdog ({script}); exit code {proc.returncode}")
    sock.connect("\0" + address)
    os.environ[_WATCHDOG_ENV] = address  # children (fork or spawn) report to the same watchdog
    return sock


def _after_fork_in_child() -> None:
    global _watchdog_lock
    _watchdog_lock = threading.Lock()  # another thread may have held it at the fork
    sock = _watchdog_state["sock"]
    _watchdog_state["sock"] = _watchdog_state["pid"] = None
    if sock is not None:
        sock.close()  # our copy only: the parent's connection stays open


os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------- tensors
def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _view_into(root: np.ndarray, offset: int, like: np.ndarray) -> np.ndarray:
    return np.ndarray(like.shape, like.dtype, buffer=root, offset=offset, strides=like.strides)


def is_shared(t) -> bool:
    """``Tensor.is_shared``: True if the storage is in shared memory (always for CUDA tensors)."""
    if t._device.backend.ipc_supported:
        return True
    return segment_of(t._data) is not None


def _owner(array: np.ndarray) -> np.ndarray:
    """The array at the end of ``array``'s chain of numpy views: its buffer."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


# id(old buffer) -> (weakref to it, segment, its address): buffers already moved into shared memory.
# A Tensor that still views a moved buffer (a sibling view made before the move) is moved onto the
# same segment, not copied again, so views of one buffer stay aliased, as views of one storage do
# in PyTorch. (Writes made through such a view between the two moves are not carried over.)
_moved: dict[int, tuple] = {}


def _forget_moved(key: int):
    return lambda _ref: _moved.pop(key, None)


def share_memory_(t):
    """``Tensor.share_memory_``: move the storage into shared memory (a no-op if it already is).

    The whole underlying buffer moves, so the tensor keeps its offset and strides, and so do
    its ``_base`` and any view of the same buffer shared later (see ``_moved``).
    """
    if t._device.backend.ipc_supported or segment_of(t._data) is not None:
        return t
    owner = _owner(t._data)
    entry = _moved.get(id(owner))
    if entry is not None and entry[0]() is owner:
        root, start = entry[1].data(), entry[2]
    elif owner.flags.c_contiguous or owner.flags.f_contiguous:
        raw, start = owner.ravel(order="K").view(np.uint8), _address(owner)
        segment = new_segment(raw.nbytes, raw)
        root = segment.data()
        _moved[id(owner)] = (weakref.ref(owner, _forget_moved(id(owner))), segment, start)
    else:  # an exotic buffer (strided memory numpy does not own): share a copy of this tensor
        raw = np.ascontiguousarray(t._data)
        root = new_segment(raw.nbytes, raw.reshape(-1).view(np.uint8)).data()
        t._data = np.ndarray(raw.shape, raw.dtype, buffer=root)
        return t
    for target in ([t] if t._base is None else [t, t._base]):
        old = target._data
        if segment_of(old) is None and _owner(old) is owner:
            target._data = _view_into(root, _address(old) - start, old)
    return t


def empty_shared(shape, dtype=None):
    """An uninitialised (zero-filled) CPU tensor allocated directly in shared memory.

    Raises:
        RuntimeError: when there is not enough shared memory (see Note [no SIGBUS]).
    """
    dt = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt.numpy).itemsize
    seg = new_segment(nbytes)
    return _dispatch.make(np.ndarray(shape, dt.numpy, buffer=seg.data()), _cpu)
