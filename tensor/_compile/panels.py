"""Products of a few rows against a matrix packed into column panels, for numba kernels.

Note [Panel products]
~~~~~~~~~~~~~~~~~~~~~
An LSTM step's recurrent product is a block of a few batch rows against the whole weight
(issue 19's layer: 8x128 @ 128x512 forward, 8x512 @ 512x128 backward; Note [Batch halves] in
``tensor/ops/_lstm_numba.py``). OpenBLAS packs the whole weight on every call, however few
the rows, and numba cannot hold a block of the result in registers: written as loops over a
local accumulator array, LLVM keeps that array in memory (15 GFLOPS here), and written as
scalars it stays scalar (3 GFLOPS). ``panel_matmul`` therefore runs a register tile written in
LLVM IR (``_tile_codegen``): 4 rows by 16 columns of the result in eight 8-wide accumulators;
per step along ``k`` it loads 16 floats of the matrix and broadcasts one float of each row, for
eight multiply-adds (fused where the CPU has FMA). ``pack_panels`` lays the matrix out as
panels of 16 columns, each ``(k, 16)`` and contiguous, so that a tile streams its panel instead
of reading 64 bytes from rows 2 KB apart (which fall into a few L1 sets and miss); the LSTM
kernels pack once per call, before their loop over the steps. Rows past a multiple of 4 take
tiles of 2 and 1 rows; columns past a multiple of 16 are zeros in the last panel, whose tile is
written to a buffer and copied. The sums run in ``k`` order, as numpy's do.

Measured on this machine (AMD EPYC Zen 3, 2 cores; minimum of 7 x 500 calls in one process):
the forward's 8x128 @ 128x512 13.5-15.4 us against 23.6-23.7 for the dot-product kernel this
replaced, the backward's 8x512 @ 512x128 15.8-16.4 against 16-26 (~66 GFLOPS, OpenBLAS's
figure on this machine's large products); 16 and 32 rows 1.2-1.5x faster than OpenBLAS, which
packs the whole matrix on every call. Fewer than 4 rows run at about the old kernels' speed.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["PANEL_WIDTH", "pack_panels", "panel_matmul"]

PANEL_WIDTH = 16  # columns per panel: two 8-float vectors (AVX2)
_VECTOR = 8
_TILE_ROWS = 4  # rows per tile: with two vectors each, eight accumulators of the 16 registers
_FLOAT_BYTES = 4
_F32 = ir.FloatType()
_I64 = ir.IntType(64)
_V8 = ir.VectorType(_F32, _VECTOR)


@njit(error_model="numpy", cache=True, nogil=True)
def pack_panels(w, transposed):
    """The matrix ``b`` (``w.T`` when ``transposed``, else ``w``; (k, n), float32) as panels
    (ceil(n / 16), k, 16): panel ``p`` holds columns ``16p`` to ``16p + 15`` of ``b``, those past
    ``n`` zero (Note [Panel products])."""
    if transposed:
        n, k = w.shape
    else:
        k, n = w.shape
    panels = np.zeros(((n + PANEL_WIDTH - 1) // PANEL_WIDTH, k, PANEL_WIDTH), np.float32)
    for p in range(panels.shape[0]):
        width = min(PANEL_WIDTH, n - p * PANEL_WIDTH)
        if transposed:
            for j in range(width):
                column = w[p * PANEL_WIDTH + j]  # b's column: a row of w
                for kk in range(k):
                    panels[p, kk, j] = column[kk]
        else:
            for kk in range(k):
                row = w[kk]
                for j in range(width):
                    panels[p, kk, j] = row[p * PANEL_WIDTH + j]
    return panels


def _i64(value: int) -> ir.Constant:
    return ir.Constant(_I64, value)


def _vector_at(builder, floats, offset: int):
    """The address of the 8 floats from ``floats + offset`` as a vector pointer."""
    return builder.bitcast(builder.gep(floats, [_i64(offset)]), _V8.as_pointer())


def _splat(builder, x):
    """An 8-wide vector of the float ``x``."""
    first = builder.insert_element(ir.Constant(_V8, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    lanes = ir.Constant(ir.VectorType(ir.IntType(32), _VECTOR), [0] * _VECTOR)
    return builder.shuffle_vector(first, ir.Constant(_V8, ir.Undefined), lanes)


def _tile_codegen(rows: int):
    """LLVM IR for ``c[:rows, :16] = a[:rows, :k] @ panel`` (Note [Panel products]); the
    arguments are addresses and strides in floats: a, lda, panel, c, ldc, k (k >= 1)."""

    def codegen(context, builder, signature, args):
        a, lda, panel, c, ldc, k = args
        a, panel, c = (builder.inttoptr(p, _F32.as_pointer()) for p in (a, panel, c))
        entry = builder.block
        loop, done = builder.append_basic_block("tile_k"), builder.append_basic_block("tile_done")
        builder.branch(loop)
        builder.position_at_end(loop)
        kk = builder.phi(_I64)
        kk.add_incoming(_i64(0), entry)
        sums = [builder.phi(_V8) for _ in range(rows * 2)]  # row q's columns 0-7, then 8-15
        for total in sums:
            total.add_incoming(ir.Constant(_V8, None), entry)  # zeros
        panel_row = builder.gep(panel, [builder.mul(kk, _i64(PANEL_WIDTH))])
        ws = [builder.load(_vector_at(builder, panel_row, v * _VECTOR), align=4) for v in range(2)]
        updated = []
        for q in range(rows):
            xs = _splat(builder, builder.load(builder.gep(a, [builder.add(builder.mul(_i64(q), lda), kk)])))
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
                builder.store(updated[2 * q + v], _vector_at(builder, c_row, v * _VECTOR), align=4)
        return context.get_dummy_value()

    return codegen


def _tile_intrinsic(rows: int):
    @intrinsic
    def tile(typingctx, a, lda, panel, c, ldc, k):
        return types.void(*(types.intp,) * 6), _tile_codegen(rows)

    return tile


_tile4, _tile2, _tile1 = (_tile_intrinsic(rows) for rows in (_TILE_ROWS, 2, 1))


@njit(error_model="numpy", cache=True, nogil=True)
def _row_tiles(a, panels, n, c, rows_per_tile, r0, r1):
    """The rows ``r0:r1`` of ``c[...] = a @ b`` in tiles of ``rows_per_tile`` (4, 2 or 1) rows."""
    if r0 == r1:
        return
    k = a.shape[1]
    lda, ldc = a.strides[0] // _FLOAT_BYTES, c.strides[0] // _FLOAT_BYTES
    full = n // PANEL_WIDTH
    last = np.empty((rows_per_tile, PANEL_WIDTH), np.float32)  # the partial last panel's tile
    for r in range(r0, r1, rows_per_tile):
        rows_a = a.ctypes.data + r * lda * _FLOAT_BYTES
        for p in range(panels.shape[0]):
            panel = panels.ctypes.data + p * k * PANEL_WIDTH * _FLOAT_BYTES
            if p < full:
                out, ld = c.ctypes.data + (r * ldc + p * PANEL_WIDTH) * _FLOAT_BYTES, ldc
            else:
                out, ld = last.ctypes.data, PANEL_WIDTH
            if rows_per_tile == _TILE_ROWS:
                _tile4(rows_a, lda, panel, out, ld, k)
            elif rows_per_tile == 2:
                _tile2(rows_a, lda, panel, out, ld, k)
            else:
                _tile1(rows_a, lda, panel, out, ld, k)
            if p == full:
                c[r : r + rows_per_tile, full * PANEL_WIDTH : n] = last[:, : n - full * PANEL_WIDTH]


@njit(error_model="numpy", cache=True, nogil=True)
def panel_matmul(a, panels, n, c):
    """``c[...] = a @ b`` (float32) for (m, k) ``a`` and (m, n) ``c`` with unit inner strides,
    ``b`` (k, n) given as its panels (``pack_panels``; Note [Panel products])."""
    m, k = a.shape
    if k == 0:
        c[:, :n] = 0
        return
    fours = m - m % _TILE_ROWS
    twos = m - m % 2
    _row_tiles(a, panels, n, c, _TILE_ROWS, 0, fours)
    _row_tiles(a, panels, n, c, 2, fours, twos)
    _row_tiles(a, panels, n, c, 1, twos, m)
