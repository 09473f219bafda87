"""Native helpers of split regions: BLAS products, and the flags threads hand work over with,
callable from numba code that runs without the GIL (Note [Native regions]).

Note [Native regions]
    A split region (Note [Split regions] in split_region.py) runs one slice per thread. Run
    op by op from Python, each thread takes the GIL between its ops, and the hand-offs go
    through a thread pool: on this VM a sleeping thread wakes in 30-120 us (an
    inter-processor interrupt through the hypervisor), and a thread that wants the GIL
    while another holds it sleeps at once (CPython's GIL is a condition variable). The
    GELU block's step paid ~0.1 ms at each of its two joins and ~0.1 ms to start its
    backward region that way.

    So each region is also generated as one numba function (``native_region.py``) that runs
    a thread's whole slice without the GIL: its products call numpy's own OpenBLAS
    (``gemm`` below: the CBLAS routine tensor/_openblas.py finds, the library and
    single-threaded setting ``np.matmul`` uses, called as an external symbol registered with
    llvmlite, so that the generated functions stay in numba's disk cache without taking the
    routine as an argument as Note [GEMM from numba] does), its kernels are the region's
    fused kernels.
    Threads hand work over through an int64 array of flags, read and written with atomic
    loads and stores (``region_pool.py``), and no thread needs the GIL while another waits
    for it:

    * the caller posts a region from inside its own slice function, which has let the GIL
      go, and wakes the workers asleep;
    * a worker reports its slice done and then waits, polling with ``pause`` and then
      asleep on a futex, all without the GIL; it takes the GIL only to start and end a
      slice, while the caller runs its own slice or polls for the workers natively;
    * a worker polls after a region only when the caller says another follows soon (a
      forward region, whose backward region comes next; 2 ms at most) and otherwise for
      10 us, so that it never holds a core through the rest of the program as OpenMP's
      spinning threads do (Note [Threading layer] in codegen_numba.py). Work sent to the
      intra-op pool meanwhile (``tensor._threads.run_parallel``) stops the polling.

    Where this does not apply (another BLAS, not Linux on x86-64 or AArch64, a product of
    3 or more dims, dtypes other than float32 and float64) a region runs op by op from
    Python, as before.
"""

from __future__ import annotations

import ctypes
import platform
import sys

from llvmlite import binding, ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .. import _openblas, _threads

__all__ = [
    "AVAILABLE", "BLAS", "GO", "QUIET", "add_bias", "asleep_flag", "blas_layout", "done_flag", "flag_count", "finish",
    "gemm", "idle", "join", "load_flag", "post", "wait_until",
]


def _gemm_symbols() -> dict | None:
    """``{"s": (name, address), "d": ..., "int_bits": 32 or 64}`` of the CBLAS GEMMs of the
    OpenBLAS numpy bundles (Note [Bundled OpenBLAS] in tensor/_openblas.py), or None."""
    routines = {kind: _openblas.cblas(f"{kind}gemm") for kind in "sd"}
    if None in routines.values() or not _threads.splits_matmuls():  # BLAS must run single-threaded
        return None
    symbols = {kind: (r.fn.__name__, ctypes.cast(r.fn, ctypes.c_void_p).value) for kind, r in routines.items()}
    return {**symbols, "int_bits": 8 * ctypes.sizeof(routines["s"].int_type)}


BLAS = _gemm_symbols()
if BLAS is not None:
    for _kind in "sd":
        binding.add_symbol(*BLAS[_kind])  # numba's linker resolves the CBLAS call by this name
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}.get(platform.machine().lower())
AVAILABLE = BLAS is not None and sys.platform.startswith("linux") and _SYS_FUTEX is not None
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129  # FUTEX_WAIT / FUTEX_WAKE | FUTEX_PRIVATE_FLAG
_X86 = _SYS_FUTEX == 202
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

# A pool's flags, one cache line apart: the newest region's sequence number, a request to stop
# polling, then per worker the last sequence number it finished and whether it sleeps.
_LINE = 8
GO, QUIET = 0, _LINE


def done_flag(worker: int) -> int:
    """The index of worker ``worker``'s last finished sequence number."""
    return (2 + 2 * worker) * _LINE


def asleep_flag(worker: int) -> int:
    """The index of worker ``worker``'s sleeping flag."""
    return (3 + 2 * worker) * _LINE


def flag_count(workers: int) -> int:
    """The length of a pool's flags for ``workers`` workers."""
    return (2 + 2 * workers) * _LINE


_done_flag, _asleep_flag = njit(cache=True)(done_flag), njit(cache=True)(asleep_flag)


@njit(cache=True)
def _workers(flags):
    return (flags.shape[0] // _LINE - 2) // 2


def _flag_pointer(context, builder, signature, args):
    flags = context.make_array(signature.args[0])(context, builder, args[0])
    index = context.cast(builder, args[1], signature.args[1], types.intp)
    return builder.gep(flags.data, [index])


def _word_pointer(context, builder, signature, args):
    """The 32-bit futex word of ``flags[index]``: its low half, which every increment changes."""
    word = builder.bitcast(_flag_pointer(context, builder, signature, args), ir.IntType(32).as_pointer())
    return builder.gep(word, [ir.Constant(ir.IntType(32), 1 if sys.byteorder == "big" else 0)])


def _is_flags(flags, index) -> bool:
    return isinstance(flags, types.Array) and flags.dtype == types.int64 and isinstance(index, types.Integer)


def _atomic_load(pointer, result, size: int):
    """An intrinsic ``(flags, index)`` reading ``pointer``'s target atomically, sequentially
    consistent with ``_store`` (see there)."""

    def typer(typingctx, flags, index):
        if not _is_flags(flags, index):
            return None

        def codegen(context, builder, signature, args):
            return builder.load_atomic(pointer(context, builder, signature, args), "seq_cst", size)

        return result(flags, index), codegen

    return intrinsic(typer)


_load = _atomic_load(_flag_pointer, types.int64, 8)  # flags[index]
_load_word = _atomic_load(_word_pointer, types.int32, 4)  # the futex word of flags[index]


@intrinsic
def _store(typingctx, flags, index, value):
    """``flags[index] = value``, sequentially consistent: a thread that stores one flag and
    then loads another sees every store the other thread made before its own load."""
    if not _is_flags(flags, index):
        return None

    def codegen(context, builder, signature, args):
        value_ = context.cast(builder, args[2], signature.args[2], types.int64)
        builder.store_atomic(value_, _flag_pointer(context, builder, signature, args), "seq_cst", 8)
        return context.get_dummy_value()

    return types.none(flags, index, value), codegen


@intrinsic
def _relax(typingctx):
    """x86's ``pause`` in a polling loop (nothing elsewhere)."""

    def codegen(context, builder, signature, args):
        if _X86:
            fnty = ir.FunctionType(ir.VoidType(), [])
            builder.call(cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse2.pause"), [])
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def _futex(typingctx, flags, index, op, value):
    """Linux's futex(2) on ``flags[index]``'s word: sleep while it equals ``value``
    (``_FUTEX_WAIT``), or wake up to ``value`` sleepers (``_FUTEX_WAKE``)."""
    if not _is_flags(flags, index):
        return None

    def codegen(context, builder, signature, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64], var_arg=True), "syscall")
        null = ir.Constant(ir.IntType(8).as_pointer(), None)
        op_, value_ = (
            builder.trunc(context.cast(builder, args[i], signature.args[i], types.int64), i32) for i in (2, 3)
        )
        word = _word_pointer(context, builder, signature, args)
        builder.call(fn, [ir.Constant(i64, _SYS_FUTEX or 0), word, op_, value_, null, null, ir.Constant(i32, 0)])
        return context.get_dummy_value()

    return types.none(flags, index, op, value), codegen


@njit(nogil=True, cache=True)
def load_flag(flags, index):
    """``flags[index]``, read atomically."""
    return _load(flags, index)


@njit(nogil=True, cache=True)
def wait_until(flags, index, value, spins):
    """Whether ``flags[index]`` reaches ``value`` within ``spins`` polls, without the GIL."""
    for _ in range(spins):
        if _load(flags, index) >= value:
            return True
        _relax()
    return _load(flags, index) >= value


@njit(nogil=True, cache=True)
def _wake(flags):
    for worker in range(_workers(flags)):
        if _load(flags, _asleep_flag(worker)) != 0:
            _futex(flags, GO, _FUTEX_WAKE, 1 << 30)
            return


@njit(nogil=True, cache=True)
def post(flags, seq):
    """Publish region ``seq`` to the workers, waking those asleep (without the GIL)."""
    _store(flags, QUIET, 0)
    _store(flags, GO, seq)
    _wake(flags)


@njit(nogil=True, cache=True)
def idle(flags, worker, seq, spins, wake_spins):
    """Report region ``seq`` done, then return once a later one is posted: poll for it up to
    ``spins`` times (until ``QUIET`` is set), then sleep on the futex, and poll up to
    ``wake_spins`` times when woken without one (spuriously). Without the GIL (Note [Native regions])."""
    asleep = _asleep_flag(worker)
    _store(flags, _done_flag(worker), seq)
    while True:
        for _ in range(spins):
            if _load(flags, GO) > seq:
                return
            if _load(flags, QUIET) != 0:
                break
            _relax()
        _store(flags, asleep, 1)  # before GO is read: a post after that read sees it and wakes us
        word = _load_word(flags, GO)
        if _load(flags, GO) <= seq:
            _futex(flags, GO, _FUTEX_WAIT, word)  # returns at once if GO moved since ``word``
        _store(flags, asleep, 0)
        if _load(flags, GO) > seq:
            return
        spins = wake_spins


@njit(nogil=True, cache=True)
def join(flags, seq, spins):
    """Whether every worker reports region ``seq`` done within ``spins`` polls each."""
    for worker in range(_workers(flags)):
        if not wait_until(flags, _done_flag(worker), seq, spins):
            return False
    return True


@njit(nogil=True, cache=True)
def finish(flags, post, seq, spins):
    """The end of a generated slice function: the caller's (``post``) polls ``spins`` times for
    the workers and says whether all are done, so that it returns to Python only then."""
    if post:
        return join(flags, seq, spins)
    return True


def blas_layout(row_stride: int, column_stride: int, rows: int, columns: int) -> tuple[int, int]:
    """``(transpose flag, leading dimension)`` of a ``rows x columns`` matrix with these
    strides (in elements) as a row-major CBLAS operand, or ``(0, 0)`` if BLAS cannot read it
    in place (no unit stride, or rows that overlap)."""
    if (column_stride == 1 or columns <= 1) and (rows <= 1 or row_stride >= max(1, columns)):
        return _NO_TRANS, max(1, columns) if rows <= 1 else row_stride
    if (row_stride == 1 or rows <= 1) and (columns <= 1 or column_stride >= max(1, rows)):
        return _TRANS, max(1, rows) if columns <= 1 else column_stride
    return 0, 0


_blas_layout = njit(nogil=True, cache=True)(blas_layout)


@intrinsic
def _cblas_gemm(typingctx, trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc):
    """``c = a @ b + beta * c`` through the CBLAS ``sgemm``/``dgemm`` of ``BLAS``."""
    if BLAS is None or not isinstance(c, types.Array) or c.dtype not in (types.float32, types.float64):
        return None

    def codegen(context, builder, signature, args):
        dtype = signature.args[10].dtype
        real = context.get_value_type(dtype)
        integer, i32 = ir.IntType(BLAS["int_bits"]), ir.IntType(32)
        fnty = ir.FunctionType(
            ir.VoidType(),
            [i32, i32, i32, integer, integer, integer, real, real.as_pointer(), integer, real.as_pointer(),
             integer, real, real.as_pointer(), integer],
        )
        symbol = BLAS["s" if dtype == types.float32 else "d"][0]
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)

        def as_int(i, bits):
            wide = context.cast(builder, args[i], signature.args[i], types.int64)
            return builder.trunc(wide, bits) if bits.width < 64 else wide

        def data(i):
            return context.make_array(signature.args[i])(context, builder, args[i]).data

        builder.call(fn, [
            ir.Constant(i32, _ROW_MAJOR), as_int(0, i32), as_int(1, i32), as_int(2, integer), as_int(3, integer),
            as_int(4, integer), ir.Constant(real, 1.0), data(5), as_int(6, integer), data(7), as_int(8, integer),
            context.cast(builder, args[9], signature.args[9], dtype), data(10), as_int(11, integer),
        ])
        return context.get_dummy_value()

    return types.none(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc), codegen


@njit(nogil=True)
def gemm(a, b, c, beta):
    """``c = a @ b + beta * c`` for matrices of one float dtype that BLAS reads in place
    (``blas_layout``; the caller checks) and a ``c`` whose rows have unit stride."""
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:  # BLAS may return without scaling c
        for i in range(m):
            for j in range(n):
                c[i, j] = beta * c[i, j] if beta != 0 else 0
        return
    size = c.itemsize
    trans_a, lda = _blas_layout(a.strides[0] // size, a.strides[1] // size, m, k)
    trans_b, ldb = _blas_layout(b.strides[0] // size, b.strides[1] // size, k, n)
    ldc = c.strides[0] // size if m > 1 else max(1, n)
    _cblas_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc)


@njit(nogil=True)
def add_bias(out, bias):
    """``out += bias`` for a matrix and a vector of its column count."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] += bias[j]
