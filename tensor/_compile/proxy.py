"""Capturing a call on large inputs from small proxies of them.

Note [Proxy capture]
    A capture runs the function eagerly (Note [Capture by tracing]); on a 20M-point
    k-means step that costs as much as NumPy's own run, tens of seconds, where
    ``torch.compile`` traces with data-free fake tensors. When a call's tensors hold at
    least PROXY_MIN_ELEMENTS elements (and none requires grad), the function is instead
    captured twice on *proxies*: the inputs cut down, every dim of at least SHRINK_FROM
    elements to a small prime size (a different one in each capture; equal sizes get
    equal primes, so duck sizing sees the same equalities). ``symbolic.generalise`` turns
    the two graphs into one graph with symbolic sizes, which is then instantiated at the
    real sizes and run compiled: the capture costs O(1) in the data size, and the first
    call compiles its kernels and runs them once.

    The proxy captures must leave no trace, so they give up (and the call is captured on
    the real data as before) at the first in-place write, random draw, value read (a
    graph break) or error; and when the two graphs are not one program at two sizes
    (a size read by user code, a size-dependent constant, ...). Proxies are copies, so the
    function never sees the caller's arrays during a proxy capture.
"""

from __future__ import annotations

from math import prod

from .. import _dispatch, _tensor
from . import symbolic
from .capture import Tracer, tracing

__all__ = ["PROXY_MIN_ELEMENTS", "SHRINK_FROM", "proxy_shapes", "capture_by_proxy"]

PROXY_MIN_ELEMENTS = 1 << 20
SHRINK_FROM = 128
_PRIMES = (17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 101, 103, 107, 109, 113)


class _GiveUp(Exception):
    """A proxy capture met something it must not do on proxies."""


class _ProxyTracer(Tracer):
    """A tracer that refuses side effects: they would act on proxies, or twice."""

    def on_store(self, t, index, value) -> None:
        raise _GiveUp("an in-place write")

    def on_random(self) -> None:
        raise _GiveUp("random numbers")

    def graph_break(self, kind, node, what, reason, at, value=None) -> None:
        raise _GiveUp(reason)


def proxy_shapes(shapes) -> tuple[dict, dict] | None:
    """Two maps from each large size of ``shapes`` to a small prime size, or None when no size
    is large or there are too many distinct ones."""
    sizes = {s for shape in shapes for s in shape}
    large = sorted(s for s in sizes if s >= SHRINK_FROM)
    primes = [p for p in _PRIMES if p not in sizes]
    if not large or 2 * len(large) > len(primes):
        return None
    return dict(zip(large, primes[0::2])), dict(zip(large, primes[1::2]))


def _shrink(t, sizes: dict):
    data = t._data
    cut = data[tuple(slice(0, sizes.get(s, s)) for s in data.shape)]
    return _dispatch.make(cut.copy(), t._device)


def _eligible(tensors) -> bool:
    return (
        all(isinstance(t, _tensor.Tensor) and not t._requires_grad for t in tensors)
        and sum(prod(t._data.shape) for t in tensors) >= PROXY_MIN_ELEMENTS
    )


def capture_by_proxy(compiled, spec, tensors, numpy_program: bool, sizeless):
    """The result of the call, computed by a graph captured on proxies and compiled, or None
    when the call must be captured on its real inputs (Note [Proxy capture])."""
    from . import api  # noqa: PLC0415 - api imports this module

    maps = proxy_shapes([t._data.shape for t in tensors]) if _eligible(tensors) else None
    if maps is None:
        return None
    captures, consts = [], None
    for sizes in maps:
        small = [_shrink(t, sizes) for t in tensors]
        tracer = _ProxyTracer(small)
        args, kwargs = api._traced_args(spec, small, numpy_program)
        try:
            with tracing(tracer):
                result = api._unwrap_traced(compiled.fn(*args, **kwargs))
                tracer.finish(result, _tensor.Tensor)
        except Exception:  # noqa: BLE001 - any failure on proxies means: capture the real call
            return None
        if tracer.unreplayable is not None:
            return None
        captures.append((tracer.graph, [tuple(t._data.shape) for t in small], frozenset(tracer.size_reads)))
        consts = tracer.consts
    dynamic = symbolic.generalise(*captures)
    if dynamic is None or dynamic.bind(tensors) is None:
        return None
    dynamic.path_args = (compiled.backend, compiled.options, consts)
    compiled.dynamic_graphs[sizeless] = dynamic
    compiled.proxy_captures += 1
    return compiled._replay_dynamic(sizeless, tensors)
