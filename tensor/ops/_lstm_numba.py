"""numba kernels for the pointwise math of an LSTM layer's steps (Note [Compiled LSTM steps]).

Note [Compiled LSTM steps]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Profiling ``lstm_layer`` (issue 19's workload: batch 16, hidden 128, 50 steps) showed its
recurrent products at torch's speed and the rest in numpy's elementwise work: float32
``tanh``/``exp`` at 3-5 ns an element here and ~1.5 us per array op on these 2048-element
blocks, about ten of them per step. A step's gates, cell and output here are one loop over
the batch and hidden units, with ``tanh`` as ``vecmath.tanh_f32`` (a rational function the
loop vectoriser widens; within 4 ulp) and the sigmoid as ``0.5 * tanh(x / 2) + 0.5``
(absolute error under 1e-7). Measured in one process on this 2-core machine (CPU time,
load ~4): a forward step's pointwise part 60 -> 12 us, the layer's forward 5.4 -> 3.0 ms and
its array backward 7.7 -> 4.7 ms.

They run on float32 host arrays when numba is installed (the ``compile`` extra), and only
from ``recurrent_layers`` (which imports this module on first use, so that ``import tensor``
never loads numba); everything else, and any run with ``recurrent_layers.COMPILED_STEPS``
off, takes the numpy composition there, which is the definition. ``cache=True`` keeps the
machine code in ``__pycache__``: a process after the first loads it instead of compiling.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._compile.codegen_numba import load_cached
from .._compile.vecmath import tanh_f32

__all__ = ["lstm_forward", "lstm_backward"]

_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_JIT = {"error_model": "numpy", "fastmath": {"contract"}, "cache": True}


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
def _forward_step(out, t, xg, hg, c_prev):
    """Step ``t``: ``out[t]`` (blocks h, c, i, f, o, g, tanh(c)) from ``xg[t] + hg`` (gates
    i, f, g, o) and the previous cell state."""
    batch, hidden = c_prev.shape
    row = np.empty((7, hidden), np.float32)  # Note [Row buffers]
    for b in range(batch):
        for j in range(hidden):
            i = _sigmoid(xg[t, b, j] + hg[b, j])
            f = _sigmoid(xg[t, b, hidden + j] + hg[b, hidden + j])
            g = tanh_f32(xg[t, b, 2 * hidden + j] + hg[b, 2 * hidden + j])
            o = _sigmoid(xg[t, b, 3 * hidden + j] + hg[b, 3 * hidden + j])
            c = f * c_prev[b, j] + i * g
            tc = tanh_f32(c)
            row[0, j], row[1, j], row[2, j], row[3, j] = o * tc, c, i, f
            row[4, j], row[5, j], row[6, j] = o, g, tc
        for k in range(7):
            _copy_row(out[t, k, b], row[k])


@njit(**_JIT)
def _backward_step(dxg, dc, t, grad, out, dh, c_prev):
    """Step ``t`` of ``_lstm_layer_backward``: ``dxg[t]`` from the gradients of ``out[t]``,
    the carried gradient of ``h`` (``dh``) and of ``c`` (``dc``, updated in place)."""
    batch, hidden = dc.shape
    row = np.empty((5, hidden), np.float32)  # Note [Row buffers]
    for b in range(batch):
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
            _copy_row(dxg[t, b, k * hidden : (k + 1) * hidden], row[k])
        _copy_row(dc[b], row[4])


def _call(kernel, *args) -> None:
    if not kernel.overloads:
        load_cached(kernel, args)  # from disk without numba's full start-up (Note [Warm start])
    kernel(*args)


def lstm_forward(out, xg, h0, c0, w_hh, w_hr, order) -> None:
    """The LSTM layer's steps, in ``order``, into ``out`` (steps, 7 or 8, batch, hidden; the
    eighth block for the projected state when ``w_hr`` is given); all float32, C-contiguous
    except the weights."""
    w_t = np.ascontiguousarray(w_hh.T)
    w_hr_t = None if w_hr is None else np.ascontiguousarray(w_hr.T)
    hg = np.empty((h0.shape[0], w_t.shape[1]), np.float32)
    h_prev, c_prev = h0, c0
    for t in order:
        np.matmul(h_prev, w_t, out=hg)
        _call(_forward_step, out, t, xg, hg, c_prev)
        h_prev, c_prev = out[t, 0], out[t, 1]
        if w_hr_t is not None:
            h_prev = np.matmul(h_prev, w_hr_t)
            out[t, 7, :, : w_hr_t.shape[1]] = h_prev


def lstm_backward(grad, out, c0, w_hh, w_hr, order, dxg, dh, dc, dhr) -> None:
    """Back through the steps (``order``: last step first): ``dxg`` (steps, batch, 4 * hidden),
    the gradients of the initial states ``dh``, ``dc`` and, with ``w_hr``, those of the
    projected states ``dhr`` (steps, batch, proj_size), written in place."""
    dh[...] = 0
    dc[...] = 0
    order = list(order)
    carried = dh  # the gradient reaching o * tanh(c) from later steps
    for k, t in enumerate(order):
        c_prev = out[order[k + 1], 1] if k + 1 < len(order) else c0
        if w_hr is not None:
            np.add(grad[t, 7, :, : w_hr.shape[0]], dh, out=dhr[t])
            carried = np.matmul(dhr[t], w_hr)
        _call(_backward_step, dxg, dc, t, grad, out, carried, c_prev)
        np.matmul(dxg[t], w_hh, out=dh)
