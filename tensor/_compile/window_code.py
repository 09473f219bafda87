"""Max pooling as fused loop code: its forward window scans and its gradient scatter
(Notes [Pooling scatter as a gather], [Fused window scans]).

Note [Pooling scatter as a gather]
    Max pooling's backward ``put_windows(g, arg)`` (``tensor/ops/pool.py``) scatters each
    window's gradient to the offset that held its maximum. When the windows tile the plane
    exactly (stride equal to the kernel, no dilation or padding, the plane a whole number of
    windows: ``MaxPool2d(2)`` on an even plane) every element of the result lies in exactly
    one window, so the scatter is a gather, one element at a time::

        out[n, c, h, w] = g[n, c, h // kh, w // kw] if arg[n, c, h // kh, w // kw] == (h % kh) * kw + w % kw else 0

    As such it is a pointwise node to the fusion planner (``fusion.classify``): inlined into
    its consumers, it joins the ReLU mask and the bias gradient that eager code runs as
    separate passes over the result (in a CNN step, ``put_windows`` -> ``* (x > 0)`` ->
    ``sum`` and the reshape for the convolution's weight gradient become one kernel and a
    reduction). The select gives ``where``'s values, which eager gives too wherever ``g``
    is not finite; for finite ``g`` eager's ``g * mask`` differs only in the sign of zeros.
    Other window shapes stay a library call.

Note [Fused window scans]
    ``MaxPool2d``'s forward is ``window_argmax(x)`` (the offset of each window's first
    maximum, the last NaN) and ``take_windows(x, arg, is_argmax=True)`` (the maximum itself),
    each a scan of ``x``'s window views in NumPy. Without padding, either is a small loop
    over the kernel's offsets per output element, which the planner treats as pointwise:
    the ReLU (and the convolution's bias) before them is inlined into both, so ``x`` is
    never stored and the backward recomputes its mask from the convolution's matmul
    (Note [Recomputation]); the offsets themselves are stored, never recomputed there (one
    int8 per window is cheaper to read than a window to rescan). The maximum is
    NaN-propagating (``fmaximum``, as ``np.maximum``); the offset follows ``_scan`` in
    ``tensor/ops/pool.py``: a later offset wins when it is greater or NaN.
"""

from __future__ import annotations

from math import prod

import numpy as np

from . import scalar_code

__all__ = ["GATHERS", "fusable", "emit"]

GATHERS = frozenset({"put_windows", "window_argmax", "take_windows"})
# A window scan is unrolled over its offsets; larger windows (a global pooling) stay library calls.
MAX_OFFSETS = 27
_FLOATS = (np.float32, np.float64)


def fusable(node, nodes=()) -> bool:
    """Whether window op ``node`` of the graph's ``nodes`` can be emitted as loop code (Notes
    [Pooling scatter as a gather], [Fused window scans]); without ``nodes``, scans are not."""
    if node.op.name in ("window_argmax", "take_windows"):
        kernel, padding = node.params[0], node.params[2]
        scan = prod(kernel) <= MAX_OFFSETS and all(tuple(p) == (0, 0) for p in padding)
        scan = scan and bool(nodes) and nodes[node.args[0]].dtype in _FLOATS  # a NaN-propagating float max
        if node.op.name == "window_argmax":
            return scan and len(node.shape) > len(kernel)
        return scan and node.params[4]  # is_argmax: a running maximum
    spatial, kernel, dilation, padding, stride, _ = node.params
    nd = len(kernel)
    template = getattr(node, "template", None) or node  # Sym where the size is dynamic
    return (
        node.dtype in _FLOATS
        and all(isinstance(s, int) for s in template.shape[len(node.shape) - nd :])
        and tuple(stride) == tuple(kernel)
        and all(d == 1 for d in dilation)
        and all(tuple(p) == (0, 0) for p in padding)
        and tuple(node.shape[len(node.shape) - nd :]) == tuple(spatial)
        and all(s % k == 0 for s, k in zip(spatial, kernel, strict=True))
    )


def emit(em, node, idx) -> tuple[str, np.dtype]:
    """Code naming element ``idx`` of window op ``node`` in the emitter ``em``."""
    if node.op.name == "put_windows":
        return _emit_gather(em, node, idx)
    kernel, dilation, _, stride = node.params[:4]
    lead = len(idx) - len(kernel)
    values = []
    for offsets in np.ndindex(*kernel):
        at = tuple(f"({i} * {t} + {o * d})" for i, t, o, d in zip(idx[lead:], stride, offsets, dilation, strict=True))
        values.append(em.emit(node.args[0], tuple(idx[:lead]) + at)[0])
    best = em.fresh("m")
    em.line(f"{best} = {values[0]}  # {node.describe()}")
    if node.op.name == "take_windows":
        for value in values[1:]:
            em.line(f"{best} = fmaximum({best}, {value})")
        return best, node.dtype
    which = em.fresh("k")
    em.line(f"{which} = 0")
    for k, value in enumerate(values[1:], start=1):
        em.line(f"{which} = {k} if ({value} > {best} or {value} != {value}) else {which}")
        em.line(f"{best} = fmaximum({best}, {value})")
    return scalar_code.cast(which, node.dtype), node.dtype


def _emit_gather(em, node, idx) -> tuple[str, np.dtype]:
    g, arg = node.args
    kernel = node.params[1]
    lead = len(idx) - len(kernel)
    window = tuple(i if k == 1 else f"({i} // {k})" for i, k in zip(idx[lead:], kernel, strict=True))
    offset = " + ".join(
        f"({i} % {k}) * {prod(kernel[d + 1 :])}"
        for d, (i, k) in enumerate(zip(idx[lead:], kernel, strict=True))
        if k > 1
    )
    value, _ = em.emit(g, tuple(idx[:lead]) + window)
    which, _ = em.emit(arg, tuple(idx[:lead]) + window)
    var = em.fresh("v")
    zero = scalar_code.cast("0", node.dtype)
    em.line(
        f"{var} = {scalar_code.cast(value, node.dtype)} if {which} == {offset or '0'} else {zero}  # {node.describe()}"
    )
    return var, node.dtype
