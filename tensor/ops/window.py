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
* ``max_pool_indices`` finds, per window, the flat index (within its ``(N, C)`` plane)
  of the largest element, as PyTorch's ``return_indices`` reports it. ``take_flat`` reads
  those elements (its derivative ``put_flat`` scatters the gradient back; the derivative
  of ``put_flat`` is ``take_flat``).

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
from .._dtype import int64
from .registry import defop

__all__ = ["unfold_windows", "im2col", "fold_windows", "max_pool_indices", "take_flat", "put_flat",
           "window_output_shape"]


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


def _offsets(kernel):
    return itertools.product(*(range(k) for k in kernel))


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
    cols = _copy(xp, view.transpose((1,) + tuple(range(2, 2 + 2 * nd)) + (0,)))
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
    cols_order = _memory_order(cols, tuple(range(n_lead)) + tuple(range(n_lead + nd, n_lead + 2 * nd)))
    out = _alloc(xp, lead + padded, cols.dtype, tuple(i if i < n_lead else i - nd for i in cols_order), 0)
    keep = (slice(None),) * n_lead
    for offsets in _offsets(kernel):
        region = tuple(slice(o * d, o * d + t * (n - 1) + 1, t)
                       for o, d, t, n in zip(offsets, dilation, stride, out_shape))
        out[keep + region] += cols[keep + offsets]
    if padded != tuple(spatial):
        out = out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))]
    return out


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


@defop("max_pool_indices", differentiable=False)
def _max_pool_indices(xp, a, kernel, dilation, padding, stride):
    nd = len(kernel)
    spatial = a.shape[a.ndim - nd:]
    out_shape = window_output_shape(spatial, kernel, dilation, padding, stride)
    low = -xp.inf if a.dtype.kind == "f" else xp.iinfo(a.dtype).min
    padded = _pad(xp, a, padding, low)
    view = _windows(xp, padded, kernel, dilation, stride, out_shape)
    # Copy the windows offset-major (in the input's storage order), then scan the kernel
    # offsets (not the pixels) over contiguous blocks, keeping the first maximum; NaN wins,
    # as in PyTorch. Plain arithmetic on a small integer dtype: masked writes are far slower.
    order = _window_order(padded, nd)
    windows = _copy(xp, view.transpose(order))
    offsets = list(_offsets(kernel))
    windows = windows.reshape((len(offsets),) + windows.shape[nd:])
    best = windows[0]  # our own copy: the running maximum overwrites it
    small = xp.int8 if len(offsets) < 128 else xp.int32
    arg = xp.zeros(best.shape, dtype=small)
    for k in range(1, len(offsets)):
        value = windows[k]
        hit = value > best
        if a.dtype.kind == "f":
            hit |= value != value
        xp.maximum(best, value, out=best)
        step = small(k) - arg  # arg = where(hit, k, arg)
        step *= hit
        arg += step
    rest = [i if i < 2 else i - nd for i in order[nd:]]  # arg's axes, as (N, C, *out) axes
    arg = arg.transpose(_inverse(rest))
    # Kernel offset -> flat offset in the plane, plus each window's top-left corner.
    plane_strides = [math.prod(spatial[i + 1:]) for i in range(nd)]
    table = xp.asarray([sum(o * d * s for o, d, s in zip(offs, dilation, plane_strides)) for offs in offsets],
                       dtype=xp.int64)
    where = table.take(arg)
    for i, (n, t, (lo, _), s) in enumerate(zip(out_shape, stride, padding, plane_strides)):
        corner = (xp.arange(n, dtype=xp.int64) * t - lo) * s
        where += corner.reshape((n,) + (1,) * (nd - 1 - i))
    return where


def max_pool_indices(input, kernel_size, dilation, padding, stride):
    """For each window of ``input`` padded with ``-inf``, the flat index of its maximum within
    its ``(N, C)`` plane (the first one on ties; NaN counts as the maximum)."""
    params = (tuple(kernel_size), tuple(dilation), tuple(tuple(p) for p in padding), tuple(stride))
    out = _dispatch.apply_unary(_max_pool_indices, input, params)
    return out if out.dtype is int64 else out.to(int64)


def _element_offsets(xp, indices, spatial, strides):
    # Flat positions within each (N, C) plane -> element offsets into an array of shape
    # (N, C, *spatial) with element ``strides``.
    n, c = indices.shape[0], indices.shape[1]
    base = xp.arange(n, dtype=xp.int64)[:, None] * strides[0] + xp.arange(c, dtype=xp.int64) * strides[1]
    base = base.reshape((n, c) + (1,) * (indices.ndim - 2))
    plane = [math.prod(spatial[i + 1:]) for i in range(len(spatial))]
    last = strides[-1] if len(spatial) else 1
    if all(s == p * last or size == 1 for s, p, size in zip(strides[2:], plane, spatial)):
        # The spatial dims are stored together, in order (true of every layout made here):
        # the flat position scales to the offset.
        return indices * last + base if last != 1 else indices + base
    offsets, rest = base, indices
    for s, p in zip(strides[2:], plane):
        q = rest // p
        rest = rest - q * p
        offsets = offsets + q * s
    return offsets


def _storage(xp, a):
    # (1-D view of a's elements, element strides) for an array whose memory is a dense
    # permutation of its axes (e.g. a conv output stored batch-innermost); else of a copy.
    if not a.transpose(_memory_order(a)).flags.c_contiguous:
        a = xp.ascontiguousarray(a)
    flat = a.transpose(_memory_order(a)).reshape(-1)
    return flat, tuple(s // a.itemsize for s in a.strides)


@defop("take_flat", saves=(1,))
def _take_flat(xp, a, indices, unique, layout):
    flat, strides = _storage(xp, a)
    offsets = _element_offsets(xp, indices, a.shape[2:], strides)
    if layout is None or offsets.ndim != len(layout):
        return flat.take(offsets)
    # Store the result like the input (e.g. batch innermost), for the layers that follow.
    return flat.take(offsets.transpose(layout)).transpose(_inverse(layout))


@_take_flat.derivative
def _(node, g):
    (indices,) = node.saved
    unique, layout = node.params
    return put_flat(g, indices, node.input_shapes[0][2:], unique, layout), None


@defop("put_flat", saves=(1,))
def _put_flat(xp, g, indices, spatial, unique, layout):
    shape = g.shape[:2] + tuple(spatial)
    out = _alloc(xp, shape, g.dtype, layout or tuple(range(len(shape))), 0)
    flat, strides = _storage(xp, out)
    index = _element_offsets(xp, indices, spatial, strides).reshape(-1)
    values = g.reshape(-1)
    if unique:
        flat[index] = values
    else:
        flat += xp.bincount(index, weights=values, minlength=flat.size).astype(g.dtype, copy=False)
    return out


@_put_flat.derivative
def _(node, g):
    (indices,) = node.saved
    return take_flat(g, indices, node.params[1]), None


def take_flat(input, indices, unique: bool = False):
    """``out[n, c, o] = input[n, c].flatten()[indices[n, c, o]]``: read elements by their flat
    index within each ``(N, C)`` plane (``indices`` has the same two leading dims).
    ``unique`` promises no index repeats within a plane (a faster backward), whose gradient
    is stored like ``input``."""
    data = input._data
    layout = None if data.flags.c_contiguous else _memory_order(data)
    return _dispatch.apply(_take_flat, (input, indices), (bool(unique), layout))


def put_flat(values, indices, spatial_size, unique: bool = False, layout: tuple | None = None):
    """The adjoint of ``take_flat``: an ``(N, C, *spatial_size)`` array of zeros plus each value
    added at its flat index within its plane. ``unique`` promises no index repeats within a
    plane (a plain assignment instead of a scatter-add); ``layout`` is the order (outermost
    first) in which the result's axes are stored, C order by default."""
    params = (tuple(spatial_size), bool(unique), None if layout is None else tuple(layout))
    return _dispatch.apply(_put_flat, (values, indices), params)
