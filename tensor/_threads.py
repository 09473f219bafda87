"""Intra-op parallelism on the CPU: ``set_num_threads``/``get_num_threads`` and a matmul
that splits one product across threads.

Note [Intra-op matmul]: numpy's OpenBLAS parallelises each GEMM itself, but on the
mid-sized products of a training step its threads gain less than they could. On this
2-core machine, a 128x784 batch times a 784x512 weight takes 0.82 ms on one thread,
0.52 ms on two OpenBLAS threads and 0.47 ms as two row blocks on single-threaded BLAS;
a conv's 32x4096 gradient times its 4096x400 im2col matrix takes 0.92, 0.67 and
0.56 ms. So, like PyTorch's own
thread pool, we split a large product into row blocks (column blocks when it has few
rows, batch entries for a batched product) and run the blocks on a pool of
``get_num_threads() - 1`` worker threads plus the caller. BLAS releases the GIL, so
the blocks really run in parallel.

OpenBLAS's own threads must then stay idle: its thread count is global to the
process, and its workers spin for a while after each call, so switching it to one
thread only around our blocks leaves them fighting ours for the cores. So when we can
find numpy's OpenBLAS and more than one thread is wanted, importing ``tensor`` sets
OpenBLAS to one thread for the whole process, and ``get_num_threads()`` threads come
from our pool instead. The consequence is that numpy products called directly (not
through ``tensor``) run on one thread. ``DISTRIB_INTRAOP=blas`` opts out: BLAS keeps
its own threading and our products are never split. Where numpy's BLAS is not an
OpenBLAS we can control (MKL, Accelerate), we leave it alone the same way.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = [
    "before_parallel_work", "blocks", "matmul", "matmul_pair", "parallel_for", "run_parallel", "splits_matmuls",
    "split_lock", "set_num_threads", "get_num_threads",
]

# Below this many multiply-adds a product is faster on one thread than the hand-off costs.
MIN_SPLIT_MACS = 4 << 20
# Blocks of fewer rows than this make BLAS's kernels less efficient (a 16x400 by 400x4096
# block ran at 120 GFLOP/s where a 32-row one ran at 160): a product with fewer rows per
# thread is split into column blocks instead when it has enough columns.
_ROW_BLOCK = 128
_COLUMN_BLOCK = 64
_MIN_BLOCK = 16
# Below this many elements an array pass is faster on one thread than the hand-off costs.
_MIN_SPLIT_ELEMENTS = 1 << 16


class _OpenBLAS:
    """The thread controls of the OpenBLAS that numpy loaded."""

    def __init__(self, lib, prefix: str, suffix: str) -> None:
        self.set_threads = getattr(lib, f"{prefix}_set_num_threads{suffix}")
        self.get_threads = getattr(lib, f"{prefix}_get_num_threads{suffix}")
        self.set_threads.restype, self.set_threads.argtypes = None, [ctypes.c_int]
        self.get_threads.restype, self.get_threads.argtypes = ctypes.c_int, []
        self._config = getattr(lib, f"{prefix}_get_config{suffix}", None)
        self._corename = getattr(lib, f"{prefix}_get_corename{suffix}", None)
        for fn in (self._config, self._corename):
            if fn is not None:
                fn.restype, fn.argtypes = ctypes.c_char_p, []

    def describe(self) -> str:
        """E.g. ``OpenBLAS 0.3.31 ... (SkylakeX kernels)``."""
        config = self._config().decode() if self._config else "OpenBLAS"
        core = f" ({self._corename().decode()} kernels)" if self._corename else ""
        return config + core


def _find_openblas():
    """The OpenBLAS that numpy loaded, or None (another BLAS, or not Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", ""), ("openblas", "64_")):
            try:
                return _OpenBLAS(lib, prefix, suffix)
            except AttributeError:
                continue
    return None


def _default_num_threads() -> int:
    # As PyTorch: OMP_NUM_THREADS when set, else what the BLAS chose (one per core).
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return _openblas.get_threads() if _openblas else 1


_openblas = _find_openblas()
_num_threads = _default_num_threads()
_splitting = _openblas is not None and os.environ.get("DISTRIB_INTRAOP", "split") != "blas"
if _splitting:
    _openblas.set_threads(1)
_pool: ThreadPoolExecutor | None = None
_split_lock = threading.Lock()


def _forget_pool_after_fork() -> None:
    # The pool's threads do not exist in a forked child; a new pool starts on first use.
    global _pool, _split_lock
    _pool, _split_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_after_fork)


def describe() -> str:
    """How CPU matmuls run: the BLAS and who threads it (for benchmark headers and bug reports)."""
    blas = _openblas.describe() if _openblas else "numpy's BLAS (not an OpenBLAS tensor controls)"
    threads = f"{_num_threads} thread{'s' if _num_threads != 1 else ''}"
    how = f"split by tensor across {threads}" if _splitting else "BLAS threads itself"
    return f"{blas}; {how}"


def get_num_threads() -> int:
    """The number of threads CPU ops may use (``OMP_NUM_THREADS`` or the BLAS default)."""
    return _num_threads


def set_num_threads(num: int) -> None:
    """Use ``num`` threads for CPU ops from now on (PyTorch's ``torch.set_num_threads``).

    Raises:
        RuntimeError: if ``num`` is not a positive integer.
    """
    global _num_threads, _pool
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, but got {num!r}")
    if not _splitting:  # BLAS threads itself (see Note [Intra-op matmul])
        if _openblas:
            _openblas.set_threads(num)
        _num_threads = num
        return
    with _split_lock:
        _num_threads = num
        if _pool is not None:
            _pool.shutdown(wait=False)
            _pool = None


def blocks(size: int, parts: int, align: int = 1) -> list[slice]:
    """``parts`` consecutive slices covering ``range(size)``, as equal as the inner edges allow
    when they fall on multiples of ``align``."""
    edges = [0, *(size * i // parts // align * align for i in range(1, parts)), size]
    return [slice(lo, hi) for lo, hi in zip(edges, edges[1:])]


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``numpy.matmul(a, b)``, with a large product split across ``get_num_threads()`` threads
    (Note [Intra-op matmul]). Raises what ``numpy.matmul`` raises."""
    threads = _num_threads
    if (threads == 1 or not _splitting or a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype
            or a.dtype.kind != "f" or a.shape[-1] != b.shape[-2]
            or a.size * b.shape[-1] < MIN_SPLIT_MACS):  # multiply-adds, for a's batch shape
        return np.matmul(a, b)
    jobs, out = _plan(a, b, threads)
    if not jobs or not run_parallel([functools.partial(np.matmul, x, y, out=dst) for x, y, dst in jobs]):
        return np.matmul(a, b)
    return out


def matmul_pair(a1: np.ndarray, b1: np.ndarray, a2: np.ndarray, b2: np.ndarray) -> tuple | None:
    """``(a1 @ b1, a2 @ b2)``, two independent products each whole on its own thread, or None
    (nothing computed) where that does not apply: fewer than two threads, BLAS threading
    itself, a product too small to split, or the pool busy. Two mid-sized products run side by
    side this way need one hand-off instead of two and keep BLAS's blocks whole (Note [Paired
    products] in tensor/_compile/lowering.py). Raises what ``numpy.matmul`` raises."""
    if _num_threads < 2 or not _splitting or min(a1.size * b1.shape[-1], a2.size * b2.shape[-1]) < MIN_SPLIT_MACS:
        return None
    out = [None, None]

    def product(k, a, b):
        out[k] = np.matmul(a, b)

    if not run_parallel([functools.partial(product, 0, a1, b1), functools.partial(product, 1, a2, b2)]):
        return None
    return out[0], out[1]


def parallel_for(size: int, work: int, body: Callable[[slice], object]) -> None:
    """Call ``body(block)`` for consecutive slices covering ``range(size)``: one per intra-op
    thread when ``work`` (elements touched) makes that worth it, else once with the whole
    range. The blocks must be independent. Raises what ``body`` raises."""
    threads = min(_num_threads, size)
    if (threads < 2 or work < _MIN_SPLIT_ELEMENTS
            or not run_parallel([functools.partial(body, block) for block in blocks(size, threads)])):
        body(slice(0, size))


def splits_matmuls() -> bool:
    """Whether products are split across our own threads (Note [Intra-op matmul]): False
    where BLAS threads itself (``DISTRIB_INTRAOP=blas``, or a BLAS we cannot control)."""
    return _splitting


def split_lock() -> threading.Lock:
    """The lock whoever splits work across the intra-op threads holds (never blocking on it:
    a busy pool means the cores are busy)."""
    return _split_lock


# Called before work goes to the pool: split regions' workers stop polling for their next
# region and leave the cores to it (Note [Native regions] in tensor/_compile/native.py).
before_parallel_work: list[Callable[[], None]] = []


def run_parallel(jobs) -> bool:
    """Run the jobs, the first in this thread and the rest on the pool; False (nothing run)
    when another thread is already using the pool. Raises what a job raises, once all ran."""
    global _pool
    if not _split_lock.acquire(blocking=False):  # another thread is splitting: the cores are busy
        return False
    try:
        for hook in before_parallel_work:
            hook()
        if _pool is None:
            _pool = ThreadPoolExecutor(_num_threads - 1, thread_name_prefix="distrib-intraop")
        futures = [_pool.submit(job) for job in jobs[1:]]
        try:
            jobs[0]()
        finally:
            for future in futures:  # wait for all, even when one failed: they write our arrays
                future.exception()
        for future in futures:
            future.result()
    finally:
        _split_lock.release()
    return True


def _plan(a, b, threads):
    """``(blocks, out)``: one ``(a_block, b_block, out_block)`` per thread, or ``(None, None)``
    when the product does not split well (its batch/row/column counts are all small)."""
    if a.ndim > 2 or b.ndim > 2:
        # Batched: split the leading batch dim when both operands have the same batch shape
        # (or ``b`` is one matrix shared by every batch entry).
        if (b.ndim != 2 and a.shape[:-2] != b.shape[:-2]) or a.shape[0] < threads:
            return None, None
        out = np.empty(a.shape[:-1] + b.shape[-1:], dtype=a.dtype)
        return [(a[i], b if b.ndim == 2 else b[i], out[i]) for i in blocks(a.shape[0], threads)], out
    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), dtype=a.dtype)
    if m >= _ROW_BLOCK * threads or (n < _COLUMN_BLOCK * threads and m >= _MIN_BLOCK * threads):
        return [(a[rows], b, out[rows]) for rows in blocks(m, threads)], out
    if n >= _COLUMN_BLOCK * threads:
        return [(a, b[:, cols], out[:, cols]) for cols in blocks(n, threads)], out
    return None, None
