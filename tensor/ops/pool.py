"""Max pooling primitives, built on the sliding windows of ``tensor.ops.window``.

* ``window_argmax`` finds, per window, which kernel offset holds the maximum (the first
  one on ties; the last NaN, as PyTorch picks it). It is a small integer array shaped
  like the output and stored like the input (batch innermost after a convolution).
* ``take_windows`` reads each window's element at that offset; its derivative
  ``put_windows`` writes a gradient back to those elements (adding up where windows
  overlap), and the derivative of ``put_windows`` is ``take_windows``: double backward
  works through both.
* ``window_flat_indices`` turns the offsets into the flat indices within each ``(N, C)``
  plane that ``return_indices=True`` reports (``max_pool_indices`` does both steps).

Note [Max pool by offset]: every step here walks the ``K`` kernel offsets, each a
strided view with the output's shape, instead of indexing element by element: the scan,
the gather and the scatter are then ``K`` whole-array ufunc calls. When ``take_windows``
reads the argmax of its own input (``max_pool`` does) the element at the argmax *is* the
window's maximum, so it takes the running maximum instead of a masked gather.

Note [Low-precision pooling]: a bfloat16 (or float8) input is widened to float32 first
(exact) and every kernel here runs in float32, rounding its result back once: ml_dtypes'
per-element ufuncs cost ~8x float32's. The maximum, the argmax and the gather are exact in
any width, so their results are bit-identical to computing in the type itself; where windows
overlap, ``put_windows`` sums in float32 and rounds once, as PyTorch's CPU kernels do. Where they
do not, it only picks each gradient element or zero, and does so on the bits (unsigned integers
times the 0/1 mask: the gradient's bits or +0.0, as PyTorch's scatter into zeros gives), without
widening the gradient or rounding the result.

Geometry arguments are as in ``tensor.ops.window``; the input is padded with the lowest
value of its dtype (so padding never wins) and ``padding`` holds ``(before, after)`` pairs.
"""

from __future__ import annotations

import math

from .. import _backend, _dispatch
from .._dtype import int64
from .registry import defop
from .window import (
    _alloc,
    _copy,
    _memory_order,
    _offsets,
    _pad,
    _windows,
    offset_regions,
    over_lead_blocks,
    window_output_shape,
)

__all__ = ["window_argmax", "take_windows", "put_windows", "window_flat_indices", "max_pool_indices"]


def _offset_views(xp, a, kernel, dilation, padding, stride, fill):
    """The windows of ``a`` padded with ``fill``: one ``(N, C, *out)`` view per kernel offset."""
    nd = len(kernel)
    out_shape = window_output_shape(a.shape[a.ndim - nd:], kernel, dilation, padding, stride)
    windows = _windows(xp, _pad(xp, a, padding, fill), kernel, dilation, stride, out_shape)
    keep = (slice(None),) * (a.ndim - nd)
    return [windows[keep + offsets] for offsets in _offsets(kernel)]


def _lowest(xp, dtype):
    return -xp.inf if dtype.kind in "fV" else xp.iinfo(dtype).min  # V: bfloat16 (ml_dtypes)


def _scan(xp, views, nan_aware, best, arg):
    """Fill ``best`` with the running maximum over the per-offset views and ``arg`` with the
    offset of the first maximum."""
    best[...] = views[0]
    arg[...] = 0
    for k, value in enumerate(views[1:], start=1):
        hit = value > best
        if nan_aware:
            hit |= value != value  # NaN wins, and a later NaN wins again
        xp.maximum(best, value, out=best)
        # Hits only ever move to a later offset, so the winner is the largest k that hit.
        xp.maximum(arg, xp.multiply(hit, arg.dtype.type(k), dtype=arg.dtype), out=arg)


@defop("window_argmax", differentiable=False)
def _window_argmax(xp, a, kernel, dilation, padding, stride):
    a = _backend.widen(a)  # comparisons are exact in any width (Note [Low-precision pooling])
    views = _offset_views(xp, a, kernel, dilation, padding, stride, _lowest(xp, a.dtype))
    order = _memory_order(views[0])
    best = _alloc(xp, views[0].shape, a.dtype, order)  # stored like the input
    arg = _alloc(xp, views[0].shape, xp.int8 if len(views) < 128 else xp.int32, order)

    def scan(index, nan_aware=False):
        _scan(xp, [v[index] for v in views], nan_aware, best[index], arg[index])

    over_lead_blocks(xp, order, best.shape[:2], best.size * len(views), scan)
    # The maximum propagates NaN: without one in ``best`` no window holds a NaN.
    if a.dtype.kind in "fV" and _backend.might_hold(xp, lambda: xp.isnan(best).any()):
        scan((), nan_aware=True)
    return arg


def window_argmax(input, kernel_size, dilation, padding, stride):
    """For each window of ``input``, the index (in row-major kernel order) of the offset
    holding its maximum: the first on ties, the last NaN. An int8 (or int32) tensor of
    shape ``(N, C, *out)``."""
    params = (tuple(kernel_size), tuple(dilation), tuple(tuple(p) for p in padding), tuple(stride))
    return _dispatch.apply_unary(_window_argmax, input, params)


@defop("take_windows", saves=(1,))
def _take_windows(xp, a, arg, kernel, dilation, padding, stride, is_argmax, layout):
    low, a = a.dtype, _backend.widen(a)  # Note [Low-precision pooling]
    if is_argmax:  # Note [Max pool by offset]
        views = _offset_views(xp, a, kernel, dilation, padding, stride, _lowest(xp, a.dtype))
        out = views[0].copy(order="K")
        for value in views[1:]:
            xp.maximum(out, value, out=out)
        return out.astype(low, copy=False)
    views = _offset_views(xp, a, kernel, dilation, padding, stride, 0)
    out = xp.zeros(arg.shape, dtype=a.dtype)
    zero = xp.zeros((), dtype=a.dtype)
    for k, value in enumerate(views):
        out += xp.where(arg == k, value, zero)
    return out.astype(low, copy=False)


@_take_windows.derivative
def _(node, g):
    (arg,) = node.saved
    kernel, dilation, padding, stride, _, layout = node.params
    spatial = node.input_shapes[0][2:]
    return put_windows(g, arg, spatial, kernel, dilation, padding, stride, layout), None


def take_windows(input, arg, kernel_size, dilation, padding, stride, is_argmax: bool = False):
    """``out[n, c, o]``: the element of window ``o`` of ``input[n, c]`` at kernel offset
    ``arg[n, c, o]``. ``is_argmax`` promises that ``arg`` is ``window_argmax`` of this very
    ``input`` (the gather is then a running maximum). The gradient is stored like ``input``."""
    params = (tuple(kernel_size), tuple(dilation), tuple(tuple(p) for p in padding), tuple(stride),
              bool(is_argmax), _memory_order(input._data))
    return _dispatch.apply(_take_windows, (input, arg), params)


@defop("put_windows", saves=(1,))
def _put_windows(xp, g, arg, spatial, kernel, dilation, padding, stride, layout):
    nd = len(kernel)
    layout = layout or _memory_order(g)
    if _memory_order(g) != _memory_order(arg):  # walk g, arg and the result in one order
        g = _copy(xp, g, _memory_order(arg))
    low = g.dtype
    overlap = any(t < d * (k - 1) + 1 for k, d, t in zip(kernel, dilation, stride))
    # Note [Low-precision pooling]: without overlaps the scatter only picks elements, on the bits.
    g = g.view(f"u{low.itemsize}") if low.kind == "V" and not overlap else _backend.widen(g)
    lead = g.shape[:g.ndim - nd]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, padding))
    out_shape = g.shape[g.ndim - nd:]
    covered = all(t == k and d == 1 and t * n == s
                  for k, d, t, n, s in zip(kernel, dilation, stride, out_shape, padded))
    # g * mask is exact for finite g; otherwise pick with where (inf * 0 would be NaN). A GPU
    # picks with where rather than synchronise to find out.
    finite = g.dtype.kind not in "fV" or not _backend.might_hold(xp, lambda: not xp.isfinite(g).all())
    out = _alloc(xp, lead + padded, g.dtype, layout, None if covered and finite else 0)
    zero = xp.zeros((), dtype=g.dtype)
    keep = (slice(None),) * len(lead)

    def scatter(index):
        part, g_part, arg_part = out[index], g[index], arg[index]
        for k, region in enumerate(offset_regions(kernel, dilation, stride, out_shape)):
            mask = arg_part == k
            target = part[keep + region]
            if finite and not overlap:
                xp.multiply(g_part, mask, out=target)
            else:
                target += g_part * mask if finite else xp.where(mask, g_part, zero)

    over_lead_blocks(xp, _memory_order(g), lead, out.size, scatter)
    if padded != tuple(spatial):
        out = out[keep + tuple(slice(lo, lo + s) for s, (lo, _) in zip(spatial, padding))]
    return out.view(low) if g.dtype.kind == "u" and low.kind == "V" else out.astype(low, copy=False)


@_put_windows.derivative
def _(node, g):
    (arg,) = node.saved
    _, kernel, dilation, padding, stride, _ = node.params
    return take_windows(g, arg, kernel, dilation, padding, stride), None


def put_windows(values, arg, spatial_size, kernel_size, dilation, padding, stride, layout=None):
    """The adjoint of ``take_windows``: an ``(N, C, *spatial_size)`` array of zeros with each
    ``values[n, c, o]`` added at the element of window ``o`` at kernel offset ``arg[n, c, o]``,
    stored in axis order ``layout`` (outermost first; like ``values`` by default)."""
    params = (tuple(spatial_size), tuple(kernel_size), tuple(dilation), tuple(tuple(p) for p in padding),
              tuple(stride), None if layout is None else tuple(layout))
    return _dispatch.apply(_put_windows, (values, arg), params)


@defop("window_flat_indices", differentiable=False)
def _window_flat_indices(xp, arg, spatial, kernel, dilation, padding, stride):
    nd = len(kernel)
    out_shape = arg.shape[arg.ndim - nd:]
    # Kernel offset -> flat offset in the plane, plus each window's top-left corner.
    plane_strides = [math.prod(spatial[i + 1:]) for i in range(nd)]
    table = xp.asarray([sum(o * d * s for o, d, s in zip(offs, dilation, plane_strides)) for offs in _offsets(kernel)],
                       dtype=xp.int64)
    where = table.take(arg)
    for i, (n, t, (lo, _), s) in enumerate(zip(out_shape, stride, padding, plane_strides)):
        corner = (xp.arange(n, dtype=xp.int64) * t - lo) * s
        where += corner.reshape((n,) + (1,) * (nd - 1 - i))
    return where


def window_flat_indices(arg, spatial_size, kernel_size, dilation, padding, stride):
    """The flat index, within its ``(N, C)`` plane of size ``spatial_size``, of the element
    each window picks at kernel offset ``arg`` (int64)."""
    params = (tuple(spatial_size), tuple(kernel_size), tuple(dilation), tuple(tuple(p) for p in padding),
              tuple(stride))
    out = _dispatch.apply_unary(_window_flat_indices, arg, params)
    return out if out.dtype is int64 else out.to(int64)


def max_pool_indices(input, kernel_size, dilation, padding, stride):
    """For each window of ``input`` padded with ``-inf``, the flat index of its maximum within
    its ``(N, C)`` plane (the first one on ties; the last NaN), as int64."""
    arg = window_argmax(input, kernel_size, dilation, padding, stride)
    return window_flat_indices(arg, input.shape[input.ndim - len(kernel_size):], kernel_size, dilation,
                               padding, stride)
