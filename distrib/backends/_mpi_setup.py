"""The ``mpi`` backend's set-up: importing MPI, what the environment asks for, the abort hook,
and how each dtype and ReduceOp maps to MPI (Note [MPI backend] in ``mpi_backend.py``)."""

from __future__ import annotations

import array
import ctypes
import fcntl
import importlib
import os
import stat
import sys
import termios
import threading
import time

import numpy as np

from .. import reduce_op

RING_MIN_BYTES = 256 << 10  # all_reduce from this size on one host: our ring (Note [MPI ring all_reduce])

_MPI_OP = {"SUM": "SUM", "AVG": "SUM", "PRODUCT": "PROD", "MIN": "MIN", "MAX": "MAX",
           "BAND": "BAND", "BOR": "BOR", "BXOR": "BXOR"}

_state = {"hook": False}
_ABORT_GRACE_SECONDS = 5.0  # at most, for the reader of piped output to take it before MPI_Abort
_BLIND_PAUSE_SECONDS = 0.5  # output to a socket or terminal: how much is unread cannot be asked
_ABORT_DEADLINE_SECONDS = 10.0  # MPI_Abort's own limit: a process manager cut off never answers
_exit = os._exit  # how abort_job ends this process (tests stand in for it)


def mpi_module():
    """``mpi4py.MPI`` (imported on first use: importing it initialises MPI)."""
    return importlib.import_module("mpi4py.MPI")


def cuda_aware(mpi) -> bool:
    """Whether the MPI library reads CUDA device memory.

    ``DISTRIB_MPI_CUDA_AWARE=0/1`` decides if set; then mpi4py's ``Query_cuda_support``, then
    the library's ``MPIX_Query_cuda_support`` (MPICH, Open MPI, MVAPICH); then the
    environment hints that turn CUDA support on.
    """
    forced = os.environ.get("DISTRIB_MPI_CUDA_AWARE")
    if forced in ("0", "1"):
        return forced == "1"
    query = getattr(mpi, "Query_cuda_support", None)
    if query is not None:
        try:
            return bool(query())
        except Exception:  # noqa: BLE001 - not implemented by this library: try the next way
            pass
    try:
        return bool(ctypes.CDLL(mpi.__file__).MPIX_Query_cuda_support())
    except (OSError, AttributeError, TypeError):
        pass
    hints = {"OMPI_MCA_opal_cuda_support": ("1", "true"), "MV2_USE_CUDA": ("1",),
             "MPICH_GPU_SUPPORT_ENABLED": ("1",), "MPIR_CVAR_ENABLE_GPU": ("1",)}
    return any(os.environ.get(name, "").lower() in values for name, values in hints.items())


def abort_job(mpi, message: str) -> None:
    """Print ``message`` to stderr and end the whole MPI job (never returns)."""
    try:
        print(message, file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - aborting anyway
                pass
        _let_output_through(_ABORT_GRACE_SECONDS)
    finally:
        # MPI_Abort may block for good (its process manager is across a partition) or return
        # (MPICH's, once the process manager has been told); either way this process must end
        # here: the watchdog would fire again, a hook would finalize.
        deadline = threading.Timer(_ABORT_DEADLINE_SECONDS, _exit, args=(1,))
        deadline.daemon = True
        deadline.start()
        mpi.COMM_WORLD.Abort(1)
        deadline.cancel()
        _exit(1)


def _let_output_through(limit: float) -> None:
    """Wait, at most ``limit`` seconds, until the reader of this process's piped stdout and
    stderr (mpiexec's proxy) has read all that was written to them.

    Hydra's mpiexec exits as soon as it hears of an MPI_Abort, dropping whatever its proxy has
    not forwarded yet, and the proxy can pass a rank's abort on ahead of output it has not read
    (it looks at the PMI sockets first). What the proxy has read it forwards before it looks at
    anything else, so a drained pipe means the output is shown. Output to a socket or a terminal
    gets a short pause instead, and a file none.
    """
    pipes, pause = [], 0.0
    for fd in (1, 2):
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISFIFO(mode):
                pipes.append(fd)
            elif stat.S_ISSOCK(mode) or os.isatty(fd):
                pause = min(limit, _BLIND_PAUSE_SECONDS)
        except OSError:
            pass
    deadline = time.monotonic() + limit
    while pipes and time.monotonic() < deadline:
        pipes = [fd for fd in pipes if _unread_bytes(fd)]
        if pipes:
            time.sleep(0.01)
    time.sleep(pause)


def _unread_bytes(fd: int) -> int:
    """Bytes written to pipe ``fd`` that its reader has not read yet (0 if that cannot be told)."""
    count = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, count, True)
    except OSError:
        return 0
    return count[0]


def install_abort_hook(mpi) -> bool:
    """Make an uncaught exception abort the whole MPI job (once per process; only when the
    job has more than one rank). Returns whether the hook is installed."""
    if _state["hook"] or mpi.COMM_WORLD.Get_size() == 1:
        return _state["hook"]
    previous = sys.excepthook

    def abort_on_uncaught(exc_type, exc, tb):
        try:
            previous(exc_type, exc, tb)
        finally:
            abort_job(mpi, f"distrib: uncaught {exc_type.__name__} on MPI rank {mpi.COMM_WORLD.Get_rank()}; "
                           "calling MPI_Abort so that the other ranks do not wait forever")

    sys.excepthook = abort_on_uncaught
    _state["hook"] = True
    return True


def ring_threshold(same_host: bool, cuda_aware: bool) -> float:
    """The all_reduce size (bytes) from which the ring is used: ``DISTRIB_MPI_RING_MIN_BYTES``
    if set; else 256 KiB when every rank is on this host and never otherwise (across hosts
    the MPI library knows the network; CUDA arrays stay with CUDA-aware MPI).

    Raises:
        ValueError: the variable is not a non-negative integer.
    """
    forced = os.environ.get("DISTRIB_MPI_RING_MIN_BYTES")
    if cuda_aware:
        return float("inf")
    if forced is not None:
        if not forced.isdigit():
            raise ValueError(f"DISTRIB_MPI_RING_MIN_BYTES must be a non-negative integer, got {forced!r}")
        return int(forced)
    return RING_MIN_BYTES if same_host else float("inf")


def blocking_enabled() -> bool:
    """``DISTRIB_MPI_BLOCKING`` (default 1): whether small synchronous all_reduces may use MPI's
    blocking call (Note [Blocking all_reduce]).

    Raises:
        ValueError: the variable is set to something other than 0 or 1.
    """
    value = os.environ.get("DISTRIB_MPI_BLOCKING", "1")
    if value not in ("0", "1"):
        raise ValueError(f"DISTRIB_MPI_BLOCKING must be 0 or 1, got {value!r}")
    return value == "1"


def abort_at_exit(mpi) -> None:
    """Make this process end with MPI_Abort instead of MPI_Finalize, which would wait forever for
    an op abandoned after a failure (mpi4py's abort status, where it has one)."""
    setter = getattr(mpi, "_set_abort_status", None)
    if setter is not None:
        setter(1)


class Stall(Exception):
    """A wait that cannot finish: ``missing`` None means "timed out; ask the peers"."""

    def __init__(self, reason: str, missing=None) -> None:
        super().__init__(reason)
        self.reason, self.missing = reason, missing


class Datatypes:
    """Per-dtype MPI handling: native datatype, or a byte type with user-defined ops."""

    def __init__(self, mpi) -> None:
        self.mpi = mpi
        self.native: dict[np.dtype, bool] = {}
        self.user_types: dict[np.dtype, object] = {}
        self.user_ops: dict[tuple, object] = {}
        self.native_ops: dict[tuple, object] = {}  # (dtype, op name) -> MPI op, for native dtypes

    def is_native(self, dtype: np.dtype) -> bool:
        if dtype not in self.native:
            try:
                self.mpi.Datatype.fromcode(dtype.char)
                self.native[dtype] = True
            except (KeyError, ValueError, self.mpi.Exception):
                self.native[dtype] = False
        return self.native[dtype]

    def datatype(self, dtype: np.dtype):
        """MPI's own datatype for native ``dtype``."""
        return self.mpi.Datatype.fromcode(dtype.char)

    def native_op(self, dtype: np.dtype, op):
        """The MPI op that reduces ``dtype`` with ``op`` on MPI's own datatype, or None (bool,
        and dtypes MPI has no datatype for)."""
        mpi_op = self.native_ops.get((dtype, op.name))
        if mpi_op is None and dtype.kind != "b" and self.is_native(dtype):
            mpi_op = self.native_ops[(dtype, op.name)] = getattr(self.mpi, _MPI_OP[op.name])
        return mpi_op

    def reduction(self, x, op):
        """``(buffer spec, MPI op)`` to reduce array ``x`` with ``op``."""
        mpi, dtype = self.mpi, x.dtype
        mpi_op = self.native_op(dtype, op)
        if mpi_op is not None:
            return x, mpi_op
        if dtype.kind == "b":
            return x.view(np.uint8), getattr(mpi, _MPI_OP[reduce_op.as_uint8_op(op).name])
        if dtype not in self.user_types:
            self.user_types[dtype] = mpi.BYTE.Create_contiguous(dtype.itemsize).Commit()
        key = (dtype, op.name)
        if key not in self.user_ops:
            f = reduce_op.ufunc(op, dtype)

            def apply(inbuf, inoutbuf, datatype, dtype=dtype, f=f):
                a, b = np.frombuffer(inbuf, dtype), np.frombuffer(inoutbuf, dtype)
                f(a, b, out=b)

            self.user_ops[key] = mpi.Op.Create(apply, commute=True)
        return [x.view(np.uint8), self.user_types[dtype]], self.user_ops[key]
