"""Sliding-window primitives over the trailing (spatial) dims: the building blocks of
convolution and pooling.

* ``unfold_windows`` (im2col) copies every window of a padded input into an array of
  shape ``(N, C, *kernel, *out)``, through a strided view of the input (no Python
  loop over pixels). Its derivative is ``fold_windows``.
* ``fold_windows`` (col2im) scatter-adds such windows back into an ``(N, C, *spatial)``
  array, one strided slice per kernel offset. Its derivative is ``unfold_windows``, so
  double backward works through both.
* ``max_pool_indices`` finds, per window, the flat index (within its ``(N, C)`` plane)
  of the largest element, as PyTorch's ``return_indices`` reports it. ``take_flat`` reads
  those elements (its derivative ``put_flat`` scatters the gradient back; the derivative
  of ``put_flat`` is ``take_flat``).

Geometry arguments are tuples with one entry per spatial dim; ``padding`` holds one
``(before, after)`` pair per dim. The caller validates them (``nn.functional`` does).
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


def _pad(xp, a, padding, value):
    if not any(lo or hi for lo, hi in padding):
        return a
    nd = len(padding)
    spatial = a.shape[a.ndim - nd:]
    shape = a.shape[:a.ndim - nd] + tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    out = xp.full(shape, value, dtype=a.dtype)
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


def _copy(xp, view):
    # Always a fresh, writable C-contiguous array (ascontiguousarray would hand back a
    # read-only window view that happens to be contiguous, aliasing the input).
    return xp.array(view, order="C", copy=True)


def _offsets(kernel):
    return itertools.product(*(range(k) for k in kernel))


@defop("unfold_windows")
def _unfold(xp, a, kernel, dilation, padding, stride, as_matrix):
    nd = len(kernel)
    out_shape = window_output_shape(a.shape[a.ndim - nd:], kernel, dilation, padding, stride)
    view = _windows(xp, _pad(xp, a, padding, 0), kernel, dilation, stride, out_shape)
    if not as_matrix:
        return _copy(xp, view)
    # (N, C, *kernel, *out) -> (C, *kernel, N, *out) -> the (C*K, N*L) im2col matrix.
    order = tuple(range(1, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
    cols = _copy(xp, view.transpose(order))
    return cols.reshape(math.prod(cols.shape[:1 + nd]), -1)


@_unfold.derivative
def _(node, g):
    kernel, dilation, padding, stride, as_matrix = node.params
    shape = node.input_shapes[0]
    nd = len(kernel)
    spatial = shape[-nd:]
    if as_matrix:
        out_shape = window_output_shape(spatial, kernel, dilation, padding, stride)
        g = g.reshape((shape[1],) + tuple(kernel) + (shape[0],) + out_shape).movedim(1 + nd, 0)
    return (fold_windows(g, spatial, kernel, dilation, padding, stride),)


@defop("fold_windows")
def _fold(xp, cols, spatial, kernel, dilation, padding, stride):
    nd = len(kernel)
    lead = cols.shape[:cols.ndim - 2 * nd]
    out_shape = cols.shape[cols.ndim - nd:]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    # Windows stored channel-major (the gradient of im2col) are summed into a channel-major
    # buffer, so that source and target are walked in the same order.
    channel_major = len(lead) == 2 and 1 not in lead and cols.strides[0] < cols.strides[1]
    if channel_major:
        cols = cols.swapaxes(0, 1)
        lead = lead[::-1]
    out = xp.zeros(lead + padded, dtype=cols.dtype)
    keep = (slice(None),) * len(lead)
    for offsets in _offsets(kernel):
        region = tuple(slice(o * d, o * d + t * (n - 1) + 1, t)
                       for o, d, t, n in zip(offsets, dilation, stride, out_shape))
        out[keep + region] += cols[keep + offsets]
    if padded != tuple(spatial):
        out = out[(Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))]
    return out.swapaxes(0, 1) if channel_major else out


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
    """The windows of ``unfold_windows`` as one matrix of shape ``(C * K, N * L)`` (``K`` kernel
    offsets, ``L`` window positions), ready for a single matmul with a ``(C_out, C * K)`` weight.

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
    view = _windows(xp, _pad(xp, a, padding, low), kernel, dilation, stride, out_shape)
    # Copy the windows offset-major, in the input's (N, C) memory order, then scan the kernel
    # offsets (not the pixels) over contiguous blocks, keeping the first maximum; NaN wins,
    # as in PyTorch. Plain arithmetic on a small integer dtype: masked writes are far slower.
    lead = (0, 1) if a.strides[0] >= a.strides[1] else (1, 0)
    order = tuple(range(2, 2 + nd)) + lead + tuple(range(2 + nd, 2 + 2 * nd))
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
    if lead == (1, 0):
        arg = arg.swapaxes(0, 1)
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


def _global_index(xp, indices, spatial_numel, plane_strides=None):
    # Flat indices within each (N, C) plane -> flat indices into the whole array, whose
    # planes start ``plane_strides`` (N, C) elements apart (C-contiguous by default).
    n, c = indices.shape[0], indices.shape[1]
    s_n, s_c = plane_strides or (c * spatial_numel, spatial_numel)
    base = (xp.arange(n, dtype=xp.int64)[:, None] * s_n + xp.arange(c, dtype=xp.int64) * s_c).reshape(-1)
    return indices.reshape(n * c, math.prod(indices.shape[2:])) + base[:, None]


def _flat_storage(xp, a):
    """A 1-D view of ``a``'s elements and the element strides of its (N, C) dims, when each
    plane is C-contiguous and the array is a dense permutation of its memory (e.g. a conv
    output stored channel-major); otherwise a contiguous copy."""
    item = a.itemsize
    spatial = a.shape[2:]
    plane_strides = tuple(math.prod(spatial[i + 1:]) * item for i in range(len(spatial)))
    if not a.flags.c_contiguous and a.size \
            and all(st == ps or n == 1 for st, ps, n in zip(a.strides[2:], plane_strides, spatial)):
        (n, c), (s_n, s_c) = a.shape[:2], a.strides[:2]
        plane = math.prod(spatial) * item
        s_n, s_c = (s_n if n > 1 else c * plane), (s_c if c > 1 else plane)
        if (s_c == plane and s_n == c * plane) or (s_n == plane and s_c == n * plane):
            flat = _backend.as_strided(xp, a, (a.size,), (item,))
            return flat, (s_n // item, s_c // item)
    return xp.ascontiguousarray(a).reshape(-1), None


@defop("take_flat", saves=(1,))
def _take_flat(xp, a, indices, unique, channel_major):
    flat, plane_strides = _flat_storage(xp, a)
    index = _global_index(xp, indices, math.prod(a.shape[2:]), plane_strides)
    return flat.take(index).reshape(indices.shape)


@_take_flat.derivative
def _(node, g):
    (indices,) = node.saved
    unique, channel_major = node.params
    return put_flat(g, indices, node.input_shapes[0][2:], unique, channel_major), None


@defop("put_flat", saves=(1,))
def _put_flat(xp, g, indices, spatial, unique, channel_major):
    n, c = g.shape[0], g.shape[1]
    spatial_numel = math.prod(spatial)
    size = n * c * spatial_numel
    plane_strides = (spatial_numel, n * spatial_numel) if channel_major else None
    index = _global_index(xp, indices, spatial_numel, plane_strides).reshape(-1)
    values = g.reshape(-1)
    if unique:
        out = xp.zeros(size, dtype=g.dtype)
        out[index] = values
    else:
        out = xp.bincount(index, weights=values, minlength=size).astype(g.dtype, copy=False)
    if channel_major:
        return out.reshape((c, n) + tuple(spatial)).swapaxes(0, 1)
    return out.reshape((n, c) + tuple(spatial))


@_put_flat.derivative
def _(node, g):
    (indices,) = node.saved
    (_, unique, _) = node.params
    return take_flat(g, indices, unique), None


def take_flat(input, indices, unique: bool = False):
    """``out[n, c, o] = input[n, c].flatten()[indices[n, c, o]]``: read elements by their flat
    index within each ``(N, C)`` plane (``indices`` has the same two leading dims).
    ``unique`` promises no index repeats within a plane (a faster backward)."""
    strides = input._data.strides
    channel_major = input.ndim >= 2 and input.shape[0] > 1 and input.shape[1] > 1 and strides[0] < strides[1]
    return _dispatch.apply(_take_flat, (input, indices), (bool(unique), channel_major))


def put_flat(values, indices, spatial_size, unique: bool = False, channel_major: bool = False):
    """The adjoint of ``take_flat``: an ``(N, C, *spatial_size)`` array of zeros plus each value
    added at its flat index within its plane. ``unique`` promises no index repeats within a
    plane (a plain assignment instead of a scatter-add); ``channel_major`` stores the result
    as a ``(C, N, ...)`` array (the layout of a conv output), returned as an ``(N, C, ...)`` view."""
    params = (tuple(spatial_size), bool(unique), bool(channel_major))
    return _dispatch.apply(_put_flat, (values, indices), params)
