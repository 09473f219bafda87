"""numba kernels for the pointwise math of an LSTM layer's steps (Note [Compiled LSTM steps]).

Note [Compiled LSTM steps]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Profiling ``lstm_layer`` (issue 19's workload: batch 16, hidden 128, 50 steps) showed its
recurrent products at torch's speed and the rest in numpy's elementwise work: float32
``tanh``/``exp`` at 3-5 ns an element here and ~1.5 us per array op on these 2048-element
blocks, about ten of them per step. A step's gates, cell and output here are one loop over
the batch and hidden units, with ``tanh`` as ``vecmath.tanh_f32`` (a rational function the
loop vectoriser widens; within 4 ulp) and the sigmoid as ``0.5 * tanh(x / 2) + 0.5``
(absolute error under 1e-7). Measured in one process on this 2-core machine (CPU time, at
load 4-9, so +-20%): a forward step's pointwise part ~60 -> 11-14 us, a backward step's 6-7
us; the layer's forward 5.4-8.6 -> 3.2-4.2 ms and its array backward 7.4-11 -> 4.5-5.5 ms
(with Note [GEMM from numba]).

They run on float32 host arrays when numba is installed (the ``compile`` extra), and only
from ``recurrent_layers`` (which imports this module on first use, so that ``import tensor``
never loads numba); everything else, and any run with ``recurrent_layers.COMPILED_STEPS``
off, takes the numpy composition there, which is the definition. ``cache=True`` keeps the
machine code in ``__pycache__``: a process after the first loads it instead of compiling.
"""

from __future__ import annotations

import ctypes

import numpy as np
from numba import njit

from .. import _openblas, _threads
from .._compile.codegen_numba import load_cached
from .._compile.panels import PANEL_WIDTH, pack_panels, panel_matmul
from .._compile.vecmath import tanh_f32

__all__ = ["lstm_forward", "lstm_backward", "lstm_forward_from_input", "lstm_backward_from_input"]

_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
_JIT = {"error_model": "numpy", "fastmath": {"contract"}, "cache": True, "nogil": True}


# Note [Row buffers]: a kernel's loop writes one batch row of its results into a fresh local array
# and copies it out after. Written straight into the arguments, the loop stays scalar: LLVM
# cannot rule out that they overlap what it reads (4-5x slower for the backward step).
@njit(**_JIT)
def _copy_row(dst, src):
    for j in range(src.shape[0]):
        dst[j] = src[j]


@njit(**_JIT)
def _sigmoid(x):
    return _HALF * tanh_f32(_HALF * x) + _HALF


@njit(**_JIT)
def _forward_step(out, t, xg, x0, hg, c_prev, b0, b1):
    """Step ``t`` for the batch rows ``b0:b1``: ``out[t]`` (blocks h, c, i, f, o, g, tanh(c))
    from ``xg[t] + hg`` (gates i, f, g, o; ``hg`` holds those rows alone, ``xg`` the rows from
    ``x0`` on) and the previous cell state."""
    hidden = c_prev.shape[1]
    row = np.empty((7, hidden), np.float32)  # Note [Row buffers]
    for b in range(b0, b1):
        r, x = b - b0, b - x0
        for j in range(hidden):
            i = _sigmoid(xg[t, x, j] + hg[r, j])
            f = _sigmoid(xg[t, x, hidden + j] + hg[r, hidden + j])
            g = tanh_f32(xg[t, x, 2 * hidden + j] + hg[r, 2 * hidden + j])
            o = _sigmoid(xg[t, x, 3 * hidden + j] + hg[r, 3 * hidden + j])
            c = f * c_prev[b, j] + i * g
            tc = tanh_f32(c)
            row[0, j], row[1, j], row[2, j], row[3, j] = o * tc, c, i, f
            row[4, j], row[5, j], row[6, j] = o, g, tc
        for k in range(7):
            _copy_row(out[t, k, b], row[k])


@njit(**_JIT)
def _backward_step(dxg, x0, dc, t, grad, out, dh, c_prev, b0, b1):
    """Step ``t`` of ``_lstm_layer_backward`` for the batch rows ``b0:b1``: ``dxg[t]`` (its rows
    from ``x0`` on) from the gradients of ``out[t]``, the carried gradient of ``h`` (``dh``) and
    of ``c`` (``dc``, updated in place)."""
    hidden = dc.shape[1]
    row = np.empty((5, hidden), np.float32)  # Note [Row buffers]
    for b in range(b0, b1):
        for j in range(hidden):
            gh = grad[t, 0, b, j] + dh[b, j]
            i, f, o = out[t, 2, b, j], out[t, 3, b, j], out[t, 4, b, j]
            g, tc = out[t, 5, b, j], out[t, 6, b, j]
            d = dc[b, j] + grad[t, 1, b, j] + (grad[t, 6, b, j] + gh * o) * (_ONE - tc * tc)
            row[0, j] = (grad[t, 2, b, j] + d * g) * i * (_ONE - i)
            row[1, j] = (grad[t, 3, b, j] + d * c_prev[b, j]) * f * (_ONE - f)
            row[2, j] = (grad[t, 5, b, j] + d * i) * (_ONE - g * g)
            row[3, j] = (grad[t, 4, b, j] + gh * tc) * o * (_ONE - o)
            row[4, j] = d * f
        for k in range(4):
            _copy_row(dxg[t, b - x0, k * hidden : (k + 1) * hidden], row[k])
        _copy_row(dc[b], row[4])


# Note [GEMM from numba]: with the step loop inside numba, a layer is one call instead of two
# Python-level calls per step (~5 us each here, and the arrays' round trips between them): the
# layer's forward 3.4-4.6 -> 3.2-4.2 ms, its backward loop 2.9-3.8 -> 3.0-3.3 ms (CPU time,
# load ~9). numba has no matrix product of its own without SciPy, so the kernels call the
# float32 GEMM of the OpenBLAS that numpy's wheel bundles, through a ctypes function passed as
# an argument (numba then caches the kernel on disk; a pointer baked in as a global could not
# be), found by tensor/_openblas.py (Note [Bundled OpenBLAS]). Without that library (another numpy
# build, or DISTRIB_NO_LAPACK=1) ``gemm()`` is None and the layer takes the numpy composition.
_CBLAS_ROW_MAJOR, _CBLAS_NO_TRANS, _CBLAS_TRANS = 101, 111, 112
_FLOAT_BYTES = 4


def _find_sgemm():
    routine = _openblas.cblas("sgemm")
    if routine is None:
        return None
    fn, blas_int = routine
    address, order_type = ctypes.c_int64, ctypes.c_int  # pointers passed as addresses
    fn.argtypes = [order_type] * 3 + [blas_int] * 3 + [ctypes.c_float, address, blas_int, address]
    fn.argtypes += [blas_int, ctypes.c_float, address, blas_int]
    fn.restype = None
    return fn


_SGEMM = _find_sgemm()


def gemm():
    """numpy's bundled ``cblas_sgemm`` as a ctypes function, or None (Note [GEMM from numba])."""
    return _SGEMM


# Note [Recurrent products]: a step's product with a weight ``w`` as stored (C-contiguous) is
# ``a @ w.T`` forward and ``a @ w`` backward. Blocks of up to _PANEL_ROWS rows run
# ``panel_matmul`` (Note [Panel products] in tensor/_compile/panels.py) against panels that each
# kernel call packs on its own thread before its loop (``_panels``): OpenBLAS packs the whole
# weight on every call, however few the rows. Larger blocks take OpenBLAS, which reads ``w``
# with or without its transpose flag, so no weight is copied transposed.
_PANEL_ROWS = 16
_NO_PANELS = np.empty((0, 0, PANEL_WIDTH), np.float32)


@njit(**_JIT)
def _panels(w, transposed, rows):
    """``pack_panels(w, transposed, PANEL_WIDTH)`` for a block of up to _PANEL_ROWS rows, else none (the
    block's products take OpenBLAS)."""
    return pack_panels(w, transposed, PANEL_WIDTH) if rows <= _PANEL_ROWS else _NO_PANELS


@njit(**_JIT)
def _matmul(gemm, a, w, transposed, panels, c):
    """``c[...] = a @ w.T`` (``transposed``) or ``a @ w`` (float32; ``a`` and ``c`` with unit
    inner strides, ``w`` C-contiguous): by ``panels`` (``_panels`` for ``a``'s rows), or by
    OpenBLAS where there are none (Note [Recurrent products])."""
    if panels.shape[0]:
        panel_matmul(a, panels, w.shape[0] if transposed else w.shape[1], c)
    else:
        _blas_matmul(gemm, a, False, w, transposed, c)


@njit(**_JIT)
def _blas_matmul(gemm, a, a_transposed, b, b_transposed, c):
    """``c[...] = op(a) @ op(b)`` by OpenBLAS, ``op`` transposing where flagged (float32; ``a`` and
    ``c`` with unit inner strides, ``b`` C-contiguous)."""
    m, k = (a.shape[1], a.shape[0]) if a_transposed else a.shape
    n = b.shape[0] if b_transposed else b.shape[1]
    gemm(_CBLAS_ROW_MAJOR, _CBLAS_TRANS if a_transposed else _CBLAS_NO_TRANS,
         _CBLAS_TRANS if b_transposed else _CBLAS_NO_TRANS, m, n, k, _ONE, a.ctypes.data,
         a.strides[0] // _FLOAT_BYTES, b.ctypes.data, b.shape[1], _ZERO, c.ctypes.data,
         c.strides[0] // _FLOAT_BYTES)  # fmt: skip


@njit(**_JIT)
def _forward_layer(gemm, out, xg, x0, h0, c0, w_hh, w_hr, order, b0, b1):
    """The layer's steps in ``order`` for the batch rows ``b0:b1`` (Note [Batch halves]);
    ``xg`` holds the batch rows from ``x0`` on; ``w_hh`` and ``w_hr`` ((0, 0) without a
    projection) C-contiguous."""
    gates = w_hh.shape[0]
    proj = w_hr.shape[0]
    hg = np.empty((b1 - b0, gates), np.float32)
    panels_hh, panels_hr = _panels(w_hh, True, b1 - b0), _panels(w_hr, True, b1 - b0)
    h_prev, c_prev = h0[b0:b1], c0
    for t in order:
        _matmul(gemm, h_prev, w_hh, True, panels_hh, hg)
        _forward_step(out, t, xg, x0, hg, c_prev, b0, b1)
        c_prev = out[t, 1]
        h_prev = out[t, 0, b0:b1]
        if proj:  # h = (o * tanh(c)) @ w_hr.T, in the first proj columns of block 7
            h_out = out[t, 7, b0:b1, :proj]
            _matmul(gemm, h_prev, w_hr, True, panels_hr, h_out)
            h_prev = h_out


@njit(**_JIT)
def _backward_layer(gemm, grad, out, c0, w_hh, w_hr, order, dxg, x0, dh, dc, dhr, b0, b1):
    """Back through the steps (``order``: last step first) for the batch rows ``b0:b1``,
    writing those rows of ``dxg`` (which holds the rows from ``x0`` on), ``dh``, ``dc`` and,
    with a projection (``w_hr`` not (0, 0)), ``dhr``; the weights C-contiguous."""
    batch, hidden = dc.shape
    proj = w_hr.shape[0]
    panels_hh, panels_hr = _panels(w_hh, False, b1 - b0), _panels(w_hr, False, b1 - b0)
    dh[b0:b1] = 0
    dc[b0:b1] = 0
    carried = np.zeros((batch, hidden), np.float32) if proj else dh  # reaching o * tanh(c)
    for k in range(order.shape[0]):
        t = order[k]
        c_prev = out[order[k + 1], 1] if k + 1 < order.shape[0] else c0
        if proj:
            for b in range(b0, b1):
                for j in range(proj):
                    dhr[t, b, j] = grad[t, 7, b, j] + dh[b, j]
            _matmul(gemm, dhr[t, b0:b1], w_hr, False, panels_hr, carried[b0:b1])
        _backward_step(dxg, x0, dc, t, grad, out, carried, c_prev, b0, b1)
        _matmul(gemm, dxg[t, b0 - x0 : b1 - x0], w_hh, False, panels_hh, dh[b0:b1])


# Note [Projection inside the layer]: ``lstm_input_layer`` (recurrent_layers.py) takes the layer's
# input ``x`` and ``w_ih`` instead of the projections ``xg``, so that each block of batch rows
# (Note [Batch halves]) projects its own rows, runs its loop and, backward, makes its own share
# of every gradient in the same hand-off to the intra-op threads: ``dx`` for its rows, and
# ``[dW_ih | dW_hh | db]`` as one product ``dxg.T @ [x, h_prev, 1]`` over its rows, which the
# caller sums over the blocks. That is one hand-off each way instead of two forward and four
# backward (the projection, the loop, the three weight-gradient products: ~120 us each
# with an idle worker), and the linear op's dispatch and graph node go too.


@njit(**_JIT)
def _forward_from_input(gemm, out, x, w_ih, bias, h0, c0, w_hh, w_hr, order, b0, b1):
    """``_forward_layer`` for the batch rows ``b0:b1``, their projections ``x @ w_ih.T + bias``
    made first (Note [Projection inside the layer]; ``w_ih`` C-contiguous)."""
    steps, gates = x.shape[0], w_ih.shape[0]
    rows = b1 - b0
    xs = np.ascontiguousarray(x[:, b0:b1])
    xg = np.empty((steps, rows, gates), np.float32)
    _blas_matmul(gemm, xs.reshape(steps * rows, x.shape[2]), False, w_ih, True, xg.reshape(steps * rows, gates))
    for t in range(steps):
        for r in range(rows):
            row = xg[t, r]
            for j in range(gates):
                row[j] += bias[j]
    _forward_layer(gemm, out, xg, b0, h0, c0, w_hh, w_hr, order, b0, b1)


@njit(**_JIT)
def _backward_from_input(gemm, grad, out, x, w_ih, h0, c0, w_hh, w_hr, order, dx, dh, dc, dhr, b0, b1):
    """``_backward_layer`` for the batch rows ``b0:b1``, then those rows of ``dx`` (unless it is
    empty: ``x`` needs no gradient) and their share of ``[dW_ih | dW_hh | db]``, returned (Note
    [Projection inside the layer])."""
    steps, size = x.shape[0], x.shape[2]
    gates, state = w_hh.shape
    rows = b1 - b0
    proj = w_hr.shape[0]
    dxg = np.empty((steps, rows, gates), np.float32)
    _backward_layer(gemm, grad, out, c0, w_hh, w_hr, order, dxg, b0, dh, dc, dhr, b0, b1)
    inputs = np.empty((steps, rows, size + state + 1), np.float32)  # [x, h_prev, 1] per step and row
    for k in range(steps):
        t = order[k]
        for b in range(b0, b1):
            row = inputs[t, b - b0]
            _copy_row(row[:size], x[t, b])
            if k + 1 == steps:
                _copy_row(row[size : size + state], h0[b])
            elif proj:
                _copy_row(row[size : size + state], out[order[k + 1], 7, b, :proj])
            else:
                _copy_row(row[size : size + state], out[order[k + 1], 0, b])
            row[size + state] = _ONE
    flat_dxg = dxg.reshape(steps * rows, gates)
    part = np.empty((gates, size + state + 1), np.float32)
    _blas_matmul(gemm, flat_dxg, True, inputs.reshape(steps * rows, size + state + 1), False, part)
    if dx.size:
        dx_rows = np.empty((steps, rows, size), np.float32)
        _blas_matmul(gemm, flat_dxg, False, w_ih, False, dx_rows.reshape(steps * rows, size))
        dx[:, b0:b1] = dx_rows
    return part


# Note [Batch halves]: the sequences of a batch are independent until the weight gradients,
# which are products after the loop, so a layer's loop runs as one kernel call per block of
# batch rows, each on its own intra-op thread (tensor/_threads.py; the kernels release the
# GIL), with no synchronisation between the steps. A block of 8 rows cost ~2/3 of the whole
# 16-row loop on one thread while OpenBLAS packed the whole weight for each step's product
# (0.68x, forward and backward; BENCHMARKS.md); such blocks now take Note [Panel products]'s
# register tiles instead (tensor/_compile/panels.py). On a loaded machine, where
# the second thread rarely gets a core, the split is slower in wall time, as torch's threads
# are. Batches of fewer than _MIN_SPLIT_ROWS rows per thread stay whole.
_MIN_SPLIT_ROWS = 4


def _call(kernel, batch: int, work: int, *args) -> list:
    """``kernel(*args, b0, b1)`` over the batch rows, in blocks on the intra-op threads when
    ``work`` (elements the loop produces) is worth it (Note [Batch halves]); the kernel's
    results, in the order of the blocks."""
    if not kernel.overloads:
        load_cached(kernel, (*args, 0, batch))  # from disk without numba's full start-up (Note [Warm start])
    work = work if batch >= 2 * _MIN_SPLIT_ROWS else 0
    results = []
    _threads.parallel_for(batch, work, lambda rows: results.append((rows.start, kernel(*args, rows.start, rows.stop))))
    return [result for _, result in sorted(results, key=lambda item: item[0])]


_NO_PROJECTION = np.empty((0, 0), np.float32)


def _weights(w_hh, w_hr) -> tuple:
    """``(w_hh, w_hr)`` C-contiguous, as the kernels take them (``w_hr`` (0, 0) without a
    projection)."""
    return np.ascontiguousarray(w_hh), np.ascontiguousarray(_NO_PROJECTION if w_hr is None else w_hr)


def _check_shapes(xg_shape, h0, c0, w_hh, w_hr) -> None:
    batch, hidden = c0.shape
    size = h0.shape[1]
    fits = len(xg_shape) == 3 and tuple(xg_shape[1:]) == (batch, 4 * hidden) and h0.shape[0] == batch
    fits = fits and w_hh.shape == (4 * hidden, size)
    fits = fits and (size == hidden if w_hr is None else w_hr.shape == (size, hidden) and size < hidden)
    if not fits:
        shapes = ", ".join(f"{n} {tuple(a.shape)}" for n, a in zip(("h0", "c0", "w_hh"), (h0, c0, w_hh)))
        shapes = f"xg {tuple(xg_shape)}, {shapes}"
        raise ValueError(f"lstm_layer: the shapes do not fit together: {shapes}, w_hr {getattr(w_hr, 'shape', None)}")


def lstm_forward(out, xg, h0, c0, w_hh, w_hr, order) -> None:
    """The LSTM layer's steps, in ``order``, into ``out`` (steps, 7 or 8, batch, hidden; the
    eighth block for the projected state when ``w_hr`` is given); all float32, C-contiguous
    except the weights.

    Raises:
        ValueError: if the shapes do not fit together (the kernels index without checks).
    """
    _check_shapes(xg.shape, h0, c0, w_hh, w_hr)
    order = np.asarray(order, np.int64)
    _call(_forward_layer, c0.shape[0], xg.size, _SGEMM, out, xg, 0, h0, c0, *_weights(w_hh, w_hr), order)


def lstm_backward(grad, out, c0, w_hh, w_hr, order, dxg, dh, dc, dhr) -> None:
    """Back through the steps (``order``: last step first): ``dxg`` (steps, batch, 4 * hidden),
    the gradients of the initial states ``dh``, ``dc`` and, with ``w_hr``, those of the
    projected states ``dhr`` (steps, batch, proj_size), written in place; C-contiguous float32."""
    dhr = np.empty((0, 0, 0), np.float32) if dhr is None else dhr
    order = np.asarray(order, np.int64)
    weights = _weights(w_hh, w_hr)
    _call(_backward_layer, dc.shape[0], dxg.size, _SGEMM, grad, out, c0, *weights, order, dxg, 0, dh, dc, dhr)


def _check_input_shapes(x, w_ih, bias, c0) -> None:
    batch, hidden = c0.shape
    if x.ndim != 3 or x.shape[1] != batch or w_ih.shape != (4 * hidden, x.shape[2]) or bias.shape != (4 * hidden,):
        shapes = ", ".join(f"{n} {tuple(a.shape)}" for n, a in zip(("x", "w_ih", "bias", "c0"), (x, w_ih, bias, c0)))
        raise ValueError(f"lstm_input_layer: the shapes do not fit together: {shapes}")


def lstm_forward_from_input(out, x, w_ih, bias, h0, c0, w_hh, w_hr, order) -> None:
    """``lstm_forward`` from the layer's input ``x`` (steps, batch, size), ``w_ih`` (4 * hidden,
    size) and ``bias`` (4 * hidden,) instead of their projections (Note [Projection inside the
    layer]); ``x``, ``h0`` and ``c0`` C-contiguous float32.

    Raises:
        ValueError: if the shapes do not fit together (the kernels index without checks).
    """
    _check_input_shapes(x, w_ih, bias, c0)
    _check_shapes((x.shape[0], x.shape[1], w_ih.shape[0]), h0, c0, w_hh, w_hr)
    w_ih, bias = np.ascontiguousarray(w_ih), np.ascontiguousarray(bias)
    order = np.asarray(order, np.int64)
    work = x.shape[0] * out.shape[2] * w_ih.shape[0]
    weights = _weights(w_hh, w_hr)
    _call(_forward_from_input, c0.shape[0], work, _SGEMM, out, x, w_ih, bias, h0, c0, *weights, order)


def lstm_backward_from_input(grad, out, x, w_ih, h0, c0, w_hh, w_hr, order, dx, dh, dc, dhr) -> np.ndarray:
    """``lstm_backward`` for ``lstm_forward_from_input``: writes ``dx`` (steps, batch, size; or
    None: not wanted), ``dh``, ``dc`` and, with ``w_hr``, ``dhr`` in place, and returns
    ``[dW_ih | dW_hh | db]`` (4 * hidden, size + h0's size + 1); C-contiguous float32."""
    dhr = np.empty((0, 0, 0), np.float32) if dhr is None else dhr
    dx = np.empty((0, 0, 0), np.float32) if dx is None else dx
    order = np.asarray(order, np.int64)
    w_ih = np.ascontiguousarray(w_ih)
    work = x.shape[0] * x.shape[1] * w_ih.shape[0]
    parts = _call(_backward_from_input, dc.shape[0], work, _SGEMM, grad, out, x, w_ih, h0, c0, *_weights(w_hh, w_hr),
                  order, dx, dh, dc, dhr)  # fmt: skip
    total = parts[0]
    for part in parts[1:]:
        total += part
    return total
