"""Sliding-window primitives over the trailing (spatial) dims: the building blocks of
convolution and pooling.

* ``unfold_windows`` copies every window of a padded input into an array of shape
  ``(N, C, *kernel, *out)``, through a strided view of the input (no Python loop over
  pixels). ``im2col`` is the same op laid out as the ``(C * K, L * N)`` matrix a
  convolution multiplies by its weight (batch innermost, so copies and the matching
  col2im walk long contiguous runs). Their derivative is ``fold_windows``.
* ``fold_windows`` (col2im) sums such windows back into an ``(N, C, *spatial)`` array,
  one strided slice-add per kernel offset. Its derivative is ``unfold_windows``, so double
  backward works through both.
* Max pooling's own ops build on these windows in ``tensor.ops.pool``.

Outputs keep the memory layout of their inputs where that saves a copy (a convolution's
output is stored ``(C, *spatial, N)`` and viewed as ``(N, C, *spatial)``); the logical
shapes are always PyTorch's. Geometry arguments are tuples with one entry per spatial
dim; ``padding`` holds one ``(before, after)`` pair per dim. The caller validates them
(``nn.functional`` does).
"""

from __future__ import annotations

import itertools
import math

from .. import _backend, _dispatch
from .registry import defop

__all__ = ["unfold_windows", "im2col", "fold_windows", "offset_regions", "over_lead_blocks", "window_output_shape"]


def window_output_shape(spatial, kernel, dilation, padding, stride) -> tuple:
    """The number of window positions along each spatial dim (may be <= 0 for a bad geometry)."""
    return tuple((s + lo + hi - d * (k - 1) - 1) // t + 1
                 for s, k, d, (lo, hi), t in zip(spatial, kernel, dilation, padding, stride))


def _memory_order(a, axes=None) -> tuple:
    """Axes of ``a`` from the largest stride to the smallest (ties keep their logical order)."""
    axes = range(a.ndim) if axes is None else axes
    return tuple(sorted(axes, key=lambda i: -a.strides[i]))


def _inverse(order) -> tuple:
    inverse = [0] * len(order)
    for i, axis in enumerate(order):
        inverse[axis] = i
    return tuple(inverse)


def _alloc(xp, shape, dtype, order, fill=None):
    # A new array of logical ``shape`` whose memory runs through its axes in ``order``:
    # elementwise work between arrays stored alike then walks long contiguous runs.
    buf_shape = tuple(shape[i] for i in order)
    if fill is None:
        buf = xp.empty(buf_shape, dtype=dtype)
    else:
        buf = xp.full(buf_shape, fill, dtype=dtype)
    return buf.transpose(_inverse(order))


def _copy(xp, view, order=None):
    # A fresh, writable copy of ``view`` stored in axis ``order`` (C order by default).
    # (ascontiguousarray could hand back a read-only window view that happens to be
    # contiguous, aliasing the input.)
    if order is None:
        return xp.array(view, order="C", copy=True)
    return xp.array(view.transpose(order), order="C", copy=True).transpose(_inverse(order))


def _pad(xp, a, padding, value, order=None):
    """``a`` padded with ``value``, stored in axis ``order`` (``a``'s own by default); ``a``
    itself when nothing needs padding or moving."""
    order = _memory_order(a) if order is None else tuple(order)
    if not any(lo or hi for lo, hi in padding) and a.transpose(order).flags.c_contiguous:
        return a
    nd = len(padding)
    spatial = a.shape[a.ndim - nd:]
    shape = a.shape[:a.ndim - nd] + tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    out = _alloc(xp, shape, a.dtype, order, value)
    out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))] = a
    return out


def _windows(xp, padded, kernel, dilation, stride, out_shape):
    # A read-only view (N, C, *kernel, *out) of a padded array: element [.., k.., o..] is
    # padded[.., o * stride + k * dilation, ..].
    nd = len(kernel)
    lead = padded.ndim - nd
    spatial_strides = padded.strides[lead:]
    shape = padded.shape[:lead] + tuple(kernel) + tuple(out_shape)
    strides = (padded.strides[:lead] + tuple(s * d for s, d in zip(spatial_strides, dilation))
               + tuple(s * t for s, t in zip(spatial_strides, stride)))
    return _backend.as_strided(xp, padded, shape, strides)


def _window_order(padded, nd) -> tuple:
    # Axis order for a copy of the (N, C, *kernel, *out) windows of ``padded``: kernel
    # offsets outermost, then the other axes as ``padded`` stores them.
    lead = padded.ndim - nd
    kernel_axes = tuple(range(lead, lead + nd))
    rest = tuple(i if i < lead else i + nd for i in _memory_order(padded))
    return kernel_axes + rest


def over_lead_blocks(xp, order, lead, work, body) -> None:
    """Call ``body(index)`` with index tuples whose blocks together cover the leading dims
    ``lead`` (e.g. N and C, which windows never mix), split along the outermost stored of
    them (``order`` lists axes outermost first) across the intra-op threads when ``work``
    elements make that worth it."""
    axis = next((i for i in order if i < len(lead)), None)
    if axis is None:
        body(())
        return
    _backend.parallel_for(xp, lead[axis], work, lambda block: body((slice(None),) * axis + (block,)))


def _offsets(kernel):
    return itertools.product(*(range(k) for k in kernel))


def offset_regions(kernel, dilation, stride, out_shape):
    """For each kernel offset (row-major), the spatial slices of the padded input that the
    windows' elements at that offset occupy, in window order."""
    for offsets in _offsets(kernel):
        yield tuple(slice(o * d, o * d + t * (n - 1) + 1, t)
                    for o, d, t, n in zip(offsets, dilation, stride, out_shape))


@defop("unfold_windows")
def _unfold(xp, a, kernel, dilation, padding, stride, as_matrix):
    nd = len(kernel)
    out_shape = window_output_shape(a.shape[a.ndim - nd:], kernel, dilation, padding, stride)
    if not as_matrix:
        padded = _pad(xp, a, padding, 0)
        view = _windows(xp, padded, kernel, dilation, stride, out_shape)
        return _copy(xp, view, _window_order(padded, nd))
    # The im2col matrix (C*K, L*N), batch innermost: read from the input stored as
    # (C, *spatial, N), every window row is one long contiguous run.
    padded = _pad(xp, a, padding, 0, (1,) + tuple(range(2, 2 + nd)) + (0,))
    view = _windows(xp, padded, kernel, dilation, stride, out_shape)
    view = view.transpose((1,) + tuple(range(2, 2 + 2 * nd)) + (0,))  # (C, *kernel, *out, N)
    cols = xp.empty(view.shape, dtype=a.dtype)

    def copy(index):
        cols[index] = view[index]

    over_lead_blocks(xp, (0,), view.shape[:1], cols.size, copy)
    return cols.reshape(a.shape[1] * math.prod(kernel), -1)


@_unfold.derivative
def _(node, g):
    kernel, dilation, padding, stride, as_matrix = node.params
    shape = node.input_shapes[0]
    nd = len(kernel)
    spatial = shape[-nd:]
    if as_matrix:
        out_shape = window_output_shape(spatial, kernel, dilation, padding, stride)
        g = g.reshape((shape[1],) + tuple(kernel) + out_shape + (shape[0],)).movedim(-1, 0)
    return (fold_windows(g, spatial, kernel, dilation, padding, stride),)


@defop("fold_windows")
def _fold(xp, cols, spatial, kernel, dilation, padding, stride):
    nd = len(kernel)
    n_lead = cols.ndim - 2 * nd
    lead = cols.shape[:n_lead]
    out_shape = cols.shape[cols.ndim - nd:]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    # Sum into a buffer stored like the windows (e.g. batch innermost for im2col's gradient),
    # so that each slice-add walks source and target in the same long runs.
    # A bfloat16 (or float8) sum accumulates in float32 and is rounded once, as PyTorch's CPU
    # col2im does: the slice-adds read the narrow windows straight into the float32 buffer.
    cols_order = _memory_order(cols, tuple(range(n_lead)) + tuple(range(n_lead + nd, n_lead + 2 * nd)))
    out_order = tuple(i if i < n_lead else i - nd for i in cols_order)
    out = _alloc(xp, lead + padded, _backend.wide_dtype(cols.dtype), out_order, 0)
    keep = (slice(None),) * n_lead

    def add_windows(index):
        part, source = out[index], cols[index]
        for offsets, region in zip(_offsets(kernel), offset_regions(kernel, dilation, stride, out_shape)):
            part[keep + region] += source[keep + offsets]

    over_lead_blocks(xp, cols_order, lead, cols.size, add_windows)
    if padded != tuple(spatial):
        out = out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))]
    return out.astype(cols.dtype, copy=False)


@_fold.derivative
def _(node, g):
    _, kernel, dilation, padding, stride = node.params
    out = unfold_windows(g, kernel, dilation, padding, stride)
    shape = node.input_shapes[0]
    if out.shape != tuple(shape):  # windows that fit but were never filled (no input reached them)
        out = out[(Ellipsis,) + tuple(slice(0, n) for n in shape[len(shape) - len(kernel):])]
    return (out,)


def unfold_windows(input, kernel_size, dilation, padding, stride):
    """Every window of ``input`` (zero-padded), as a tensor of shape ``(*lead, *kernel, *out)``.

    ``input`` has shape ``(*lead, *spatial)`` with ``len(kernel_size)`` spatial dims; the
    window at output position ``o`` holds ``padded[o * stride + k * dilation]`` for each
    kernel offset ``k``.
    """
    params = (tuple(kernel_size), tuple(dilation), tuple(tuple(p) for p in padding), tuple(stride), False)
    return _dispatch.apply_unary(_unfold, input, params)


def im2col(input, kernel_size, dilation, padding, stride):
    """The windows of ``unfold_windows`` as one matrix of shape ``(C * K, L * N)`` (``K`` kernel
    offsets, ``L`` window positions, the batch innermost), ready for a single matmul with a
    ``(C_out, C * K)`` weight; the product reshapes to ``(C_out, *out, N)``.

    ``input`` has shape ``(N, C, *spatial)``.
    """
    params = (tuple(kernel_size), tuple(dilation), tuple(tuple(p) for p in padding), tuple(stride), True)
    return _dispatch.apply_unary(_unfold, input, params)


def fold_windows(cols, output_size, kernel_size, dilation, padding, stride):
    """The adjoint of ``unfold_windows``: sum windows ``(*lead, *kernel, *out)`` back into an
    array of shape ``(*lead, *output_size)`` (overlapping contributions add up)."""
    params = (tuple(output_size), tuple(kernel_size), tuple(dilation),
              tuple(tuple(p) for p in padding), tuple(stride))
    return _dispatch.apply_unary(_fold, cols, params)
