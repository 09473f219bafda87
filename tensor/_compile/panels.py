"""Products of a few rows against a matrix packed into column panels, for numba kernels.

Note [Panel products]
~~~~~~~~~~~~~~~~~~~~~
An LSTM step's recurrent product is a block of a few batch rows against the whole weight
(issue 19's layer: 8x128 @ 128x512 forward, 8x512 @ 512x128 backward; Note [Batch halves] in
``tensor/ops/_lstm_numba.py``). OpenBLAS packs the whole weight on every call, however few
the rows, and numba cannot hold a block of the result in registers: written as loops over a
local accumulator array, LLVM keeps that array in memory (15 GFLOPS here), and written as
scalars it stays scalar (3 GFLOPS). ``panel_matmul`` therefore runs a register tile written in
LLVM IR (``_tile_codegen``): 4 rows of the result by two vectors of columns (eight accumulators);
per step along ``k`` it loads the two vectors of the matrix and broadcasts one float of each row,
for eight multiply-adds (fused where the CPU has FMA). ``pack_panels`` lays the matrix out as
panels two vectors wide, each ``(k, width)`` and contiguous, so that a tile streams its panel
instead of reading 64 bytes from rows 2 KB apart (which fall into a few L1 sets and miss); the
LSTM kernels pack once per call, before their loop over the steps. Rows past a multiple of 4 take
tiles of 2 and 1 rows; columns past a multiple of the width are zeros in the last panel, whose
tile is written to a buffer and copied. The sums run in ``k`` order, as numpy's do.

The vectors are 8 floats (``NARROW`` panels of 16 columns: AVX2's 16 registers) or, where the CPU
has AVX-512, 16 floats (``WIDE`` panels of 32 columns), with an 8-row tile as well: sixteen
accumulators of its 32 registers, each panel row loaded once for 8 rows. ``PANEL_WIDTH`` is this
CPU's; both run anywhere (LLVM splits a 16-float vector in two without AVX-512), and numba's
on-disk cache is per CPU.

Measured on an AMD EPYC Zen 3 (AVX2, 2 cores; minimum of 7 x 500 calls in one process): the
forward's 8x128 @ 128x512 13.5-15.4 us against 23.6-23.7 for the dot-product kernel this
replaced, the backward's 8x512 @ 512x128 15.8-16.4 against 16-26 (~66 GFLOPS, OpenBLAS's
figure on this machine's large products); 16 and 32 rows 1.2-1.5x faster than OpenBLAS, which
packs the whole matrix on every call. Fewer than 4 rows run at about the old kernels' speed. On
an AVX-512 Xeon (session 14): 8x128 @ 128x512 in 5.7-7.5 us with wide panels against 10.0-10.3
with narrow ones (BENCHMARKS.md, issue 19).
"""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["PANEL_WIDTH", "pack_panels", "panel_matmul"]

# A tile's row is two vectors: of 8 floats with AVX2, 16 with AVX-512 (Note [Panel products]).
NARROW, WIDE = 16, 32  # columns per panel
PANEL_WIDTH = WIDE if llvm.get_host_cpu_features().get("avx512f", False) else NARROW  # this CPU's
_TILE_ROWS = 4  # rows per tile: with two vectors each, eight accumulators (wide panels also take 8 rows)
_FLOAT_BYTES = 4
_F32 = ir.FloatType()
_I64 = ir.IntType(64)


@njit(error_model="numpy", cache=True, nogil=True)
def pack_panels(w, transposed, width):
    """The matrix ``b`` (``w.T`` when ``transposed``, else ``w``; (k, n), float32) as panels
    (ceil(n / width), k, width), ``width`` NARROW or WIDE: panel ``p`` holds columns ``width * p``
    to ``width * (p + 1) - 1`` of ``b``, those past ``n`` zero (Note [Panel products])."""
    b = w.T if transposed else w
    k, n = b.shape
    panels = np.zeros(((n + width - 1) // width, k, width), np.float32)
    for p in range(panels.shape[0]):
        columns = min(width, n - p * width)
        panels[p, :, :columns] = b[:, p * width : p * width + columns]
    return panels


def _i64(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)


def _vector_at(builder, floats, offset: int, vector: ir.VectorType):
    """The address of the ``vector``'s floats from ``floats + offset`` as a vector pointer."""
    return builder.bitcast(builder.gep(floats, [_i64(offset)]), vector.as_pointer())


def _splat(builder, x, vector: ir.VectorType):
    """A ``vector`` of the float ``x`` in every lane."""
    first = builder.insert_element(ir.Constant(vector, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    lanes = ir.Constant(ir.VectorType(ir.IntType(32), vector.count), [0] * vector.count)
    return builder.shuffle_vector(first, ir.Constant(vector, ir.Undefined), lanes)


def _emit_tile(builder, rows: int, width: int, a, lda, panel, c, ldc, k) -> None:
    """Emit ``c[:rows, :width] = a[:rows, :k] @ panel`` (Note [Panel products]) at the builder's
    position, which it leaves after the tile; ``a``, ``panel`` and ``c`` float pointers, the
    strides in floats, k >= 1."""
    vector = ir.VectorType(_F32, width // 2)
    entry = builder.block
    loop, done = builder.append_basic_block(f"tile{rows}_k"), builder.append_basic_block(f"tile{rows}_done")
    builder.branch(loop)
    builder.position_at_end(loop)
    kk = builder.phi(_I64)
    kk.add_incoming(_i64(0), entry)
    sums = [builder.phi(vector) for _ in range(rows * 2)]  # row q's first half of columns, then its second
    for total in sums:
        total.add_incoming(ir.Constant(vector, None), entry)  # zeros
    panel_row = builder.gep(panel, [builder.mul(kk, _i64(width))])
    ws = [builder.load(_vector_at(builder, panel_row, v * vector.count, vector), align=4) for v in range(2)]
    updated = []
    for q in range(rows):
        xs = _splat(builder, builder.load(builder.gep(a, [builder.add(builder.mul(_i64(q), lda), kk)])), vector)
        for v in range(2):
            product = builder.fmul(xs, ws[v])
            total = builder.fadd(sums[2 * q + v], product)
            product.flags.append("contract")  # one fused multiply-add where the CPU has FMA
            total.flags.append("contract")
            updated.append(total)
    following = builder.add(kk, _i64(1))
    kk.add_incoming(following, builder.block)
    for total, new in zip(sums, updated):
        total.add_incoming(new, builder.block)
    builder.cbranch(builder.icmp_signed("<", following, k), loop, done)
    builder.position_at_end(done)
    for q in range(rows):
        c_row = builder.gep(c, [builder.mul(_i64(q), ldc)])
        for v in range(2):
            builder.store(updated[2 * q + v], _vector_at(builder, c_row, v * vector.count, vector), align=4)


def _tiles(width: int, row_counts: tuple):
    """An intrinsic ``tile(rows, a, lda, panel, c, ldc, k)`` (addresses and strides in floats) that
    runs the tile of ``rows`` (one of ``row_counts``) rows and ``width`` columns."""

    def codegen(context, builder, signature, args):
        rows, a, lda, panel, c, ldc, k = args
        a, panel, c = (builder.inttoptr(p, _F32.as_pointer()) for p in (a, panel, c))
        end = builder.append_basic_block("tiles_end")
        switch = builder.switch(rows, end)
        for count in row_counts:
            block = builder.append_basic_block(f"tile{count}")
            switch.add_case(_i64(count), block)
            builder.position_at_end(block)
            _emit_tile(builder, count, width, a, lda, panel, c, ldc, k)
            builder.branch(end)
        builder.position_at_end(end)
        return context.get_dummy_value()

    @intrinsic
    def tile(typingctx, rows, a, lda, panel, c, ldc, k):
        return types.void(*(types.intp,) * 7), codegen

    return tile


_narrow_tile = _tiles(NARROW, (_TILE_ROWS, 2, 1))
_wide_tile = _tiles(WIDE, (8, _TILE_ROWS, 2, 1))


@njit(error_model="numpy", cache=True, nogil=True)
def _row_tiles(a, panels, n, c, rows_per_tile, r0, r1):
    """The rows ``r0:r1`` of ``c[...] = a @ b`` in tiles of ``rows_per_tile`` (8 for wide panels
    only, 4, 2 or 1) rows."""
    if r0 == r1:
        return
    k, width = a.shape[1], panels.shape[2]
    lda, ldc = a.strides[0] // _FLOAT_BYTES, c.strides[0] // _FLOAT_BYTES
    full = n // width
    last = np.empty((rows_per_tile, width), np.float32)  # the partial last panel's tile
    for r in range(r0, r1, rows_per_tile):
        rows_a = a.ctypes.data + r * lda * _FLOAT_BYTES
        for p in range(panels.shape[0]):
            panel = panels.ctypes.data + p * k * width * _FLOAT_BYTES
            if p < full:
                out, ld = c.ctypes.data + (r * ldc + p * width) * _FLOAT_BYTES, ldc
            else:
                out, ld = last.ctypes.data, width
            if width == WIDE:
                _wide_tile(rows_per_tile, rows_a, lda, panel, out, ld, k)
            else:
                _narrow_tile(rows_per_tile, rows_a, lda, panel, out, ld, k)
            if p == full:
                c[r : r + rows_per_tile, full * width : n] = last[:, : n - full * width]


@njit(error_model="numpy", cache=True, nogil=True)
def panel_matmul(a, panels, n, c):
    """``c[...] = a @ b`` (float32) for (m, k) ``a`` and (m, n) ``c`` with unit inner strides,
    ``b`` (k, n) given as its panels (``pack_panels``, of either width; Note [Panel products])."""
    m, k = a.shape
    if k == 0:
        c[:, :n] = 0
        return
    eights = m - m % 8 if panels.shape[2] == WIDE else 0
    fours = m - m % _TILE_ROWS
    twos = m - m % 2
    _row_tiles(a, panels, n, c, 8, 0, eights)
    _row_tiles(a, panels, n, c, _TILE_ROWS, eights, fours)
    _row_tiles(a, panels, n, c, 2, fours, twos)
    _row_tiles(a, panels, n, c, 1, twos, m)
