"""``tensor.compile``: the front end. Guards, the cache of captured graphs, recompiles.

Each compiled function keeps a cache of entries, one per guard key
(``guards.py``). An entry holds the paths captured under that key (one per
outcome of the values Python read, see Note [Capture by tracing] in
``capture.py``), each with its compiled segments. After ``cache_size_limit``
captures the function runs eagerly and says why, once.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _creation, _device, _dispatch, _tensor
from . import graph_cache, guards, proxy, symbolic
from .capture import Tracer, tracing
from .config import config
from .entry import EAGER, Entry, Path

__all__ = ["CompiledFunction", "compile"]

_BACKENDS = ("default", "inductor", "eager", "numba")
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class CompiledFunction:
    """A function under ``tensor.compile``: call it as the original."""

    def __init__(self, fn, *, fullgraph, dynamic, backend, options) -> None:
        self.fn = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = "eager" if backend == "eager" else "default"
        self.options = dict(options or {})
        self.cache: dict = {}
        self.sizeless_seen: set = set()  # guard keys without sizes, for Note [Dynamic sizes]
        self.size_captures = 0  # captures that differed from an earlier one only in sizes
        self.captures = 0
        self.last_capture: dict = {}  # guard key without sizes -> (graph, shapes, size reads)
        self.dynamic_graphs: dict = {}  # guard key without sizes -> symbolic.DynamicGraph
        self.dynamic_replays = 0  # calls served by a DynamicGraph without capturing
        self.proxy_captures = 0  # captures made on small proxies of large inputs (Note [Proxy capture])
        self.eager_reason = None
        functools.update_wrapper(self, fn)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if _dispatch.tracer is not None or self.eager_reason is not None:
            return self.fn(*args, **kwargs)  # inlined into an outer capture, or given up
        spec, leaves = guards.flatten_call(args, kwargs)
        numpy_program = any(isinstance(x, np.ndarray) for x in leaves)
        tensors = [host_to_tensor(x) if isinstance(x, np.ndarray) else x for x in leaves]
        values = guards.captured_values(self.fn)
        key = guards.guard_key(spec, leaves, values, {})
        entry = self.cache.get(key)
        sizeless = size_only = marked = None  # only a miss or a dynamic graph needs these
        if entry is None or self.dynamic_graphs:
            sizeless, size_only, marked = self._sizes(spec, leaves, values)
        result = self._replay_dynamic(sizeless, tensors) if self.dynamic_graphs else None
        if result is not None:
            return _to_numpy(result) if numpy_program else result
        if entry is not None:
            entry.prune()
            result = entry.run(tensors)
            if result is EAGER:
                return self.fn(*args, **kwargs)
            if result is not None:
                return _to_numpy(result) if numpy_program else result
        else:
            entry = self.cache[key] = Entry()
            if self._load_from_disk(key, entry):
                result = entry.run(tensors)
                if result is not None and result is not EAGER:
                    return _to_numpy(result) if numpy_program else result
        if sizeless is None:
            sizeless, size_only, marked = self._sizes(spec, leaves, values)
        return self._capture(key, spec, tensors, entry, numpy_program, (args, kwargs), (sizeless, size_only, marked))

    def _load_from_disk(self, key, entry) -> bool:
        disk_key = graph_cache.cache_key(self.fn, key) if self.backend != "eager" else None
        graph = graph_cache.load(disk_key) if disk_key else None
        if graph is None:
            return False
        entry.paths.append(Path(graph, None, self.backend, self.options, []))
        return True

    # ------------------------------------------------------------ guards
    def _sizes(self, spec, leaves, values):
        """The guard key without sizes, whether only sizes differ from a key already
        captured, and the dims marked dynamic.

        Kernels take their loop extents as arguments (``emitter.py``), so a capture for a new
        size reuses every compiled kernel. With ``dynamic`` True or None (PyTorch's default,
        automatic), such a size-only capture does not count toward ``cache_size_limit``, and
        it is compared with the earlier one to learn how the graph depends on sizes, so that
        later sizes replay it without capturing (Note [Dynamic sizes] in ``symbolic.py``).
        With ``dynamic=False`` neither happens, except for dims marked by ``mark_dynamic``.
        """
        sizeless = guards.guard_key(spec, leaves, values, {i: range(x.ndim) for i, x in enumerate(leaves)})
        seen = sizeless in self.sizeless_seen
        self.sizeless_seen.add(sizeless)
        marked = guards.marked_dims(leaves)
        return sizeless, seen and (self.dynamic is not False or bool(marked)), marked

    def _replay_dynamic(self, sizeless, tensors):
        """The result of the generalised graph for this call's sizes, or None (Note [Dynamic sizes])."""
        dynamic = self.dynamic_graphs.get(sizeless)
        values = dynamic.bind(tensors) if dynamic is not None else None
        if values is None:
            return None
        entry = dynamic.entry(values)
        entry.prune()
        result = entry.run(tensors)
        if result is None or result is EAGER:
            del self.dynamic_graphs[sizeless]  # an outside tensor changed: capture again
            return None
        self.dynamic_replays += 1
        return result

    def _learn_sizes(self, sizeless, marked, tensors, tracer) -> None:
        """Compare this capture with the last one under the same guards without sizes."""
        if tracer.unreplayable is not None:
            return
        current = (tracer.graph, [tuple(t._data.shape) for t in tensors], frozenset(tracer.size_reads))
        previous = self.last_capture.get(sizeless)
        self.last_capture[sizeless] = current
        if previous is None or (self.dynamic is False and not marked):
            return
        dynamic = symbolic.generalise(previous, current, marked if self.dynamic is False else None)
        if dynamic is not None:
            dynamic.path_args = (self.backend, self.options, tracer.consts)
            self.dynamic_graphs[sizeless] = dynamic

    # ------------------------------------------------------------ capture
    def _capture(self, key, spec, tensors, entry, numpy_program, original, sizes=(None, False, ())):
        sizeless, size_only, marked = sizes
        limit = self.options.get("cache_size_limit", config.cache_size_limit)
        if self.captures - self.size_captures >= limit and not size_only:
            self._give_up(
                f"the recompile limit cache_size_limit={limit} was reached (last change: {_describe_key(key)})"
            )
            return self.fn(*original[0], **original[1])
        self.captures += 1
        self.size_captures += size_only
        if sizeless is not None and self.backend != "eager" and self.dynamic is not False:
            result = proxy.capture_by_proxy(self, spec, tensors, numpy_program, sizeless)
            if result is not None:
                return _to_numpy(result) if numpy_program else result
        tracer = Tracer(tensors, fullgraph=self.fullgraph)
        args, kwargs = _traced_args(spec, tensors, numpy_program)
        with tracing(tracer):
            result = _unwrap_traced(self.fn(*args, **kwargs))
            tracer.finish(result, _tensor.Tensor)
        entry.paths.append(Path(tracer.graph, tracer.unreplayable, self.backend, self.options, tracer.consts))
        if sizeless is not None:
            self._learn_sizes(sizeless, marked, tensors, tracer)
        if tracer.unreplayable is None and not tracer.graph.breaks and self.backend != "eager":
            disk_key = graph_cache.cache_key(self.fn, key)
            if disk_key:
                graph_cache.store(disk_key, tracer.graph)
        return _to_numpy(result) if numpy_program else result

    def _give_up(self, reason: str) -> None:
        self.eager_reason = reason
        warnings.warn(
            f"tensor.compile: {getattr(self.fn, '__qualname__', self.fn)} runs eagerly from now on: {reason}",
            RuntimeWarning,
            stacklevel=3,
        )


def _describe_key(key) -> str:
    return f"inputs {[m[:2] for m in key[1]]}"


def host_to_tensor(array):
    """An ndarray argument of a NumPy program as a tensor on the default device (shared on the CPU)."""
    t = _creation.from_numpy(array)
    target = _device.get_default_device()
    return t if target.type == "cpu" else t.to(target)


def _traced_args(spec, tensors, numpy_program):
    """The arguments the function sees while captured: ndarrays become traced arrays."""
    if not numpy_program:
        return guards.unflatten(spec, tensors)
    from .numpy_capture import TracedArray  # noqa: PLC0415 - only NumPy programs need it

    flags = [False] * len(tensors)
    _mark_numpy(spec, flags)
    return guards.unflatten(spec, [TracedArray(t) if f else t for t, f in zip(tensors, flags)])


def _mark_numpy(spec, flags) -> None:
    if isinstance(spec, guards.TensorSlot):
        flags[spec.index] = spec.numpy
    elif isinstance(spec, tuple):
        for item in spec:
            _mark_numpy(item, flags)


def _unwrap_traced(value):
    inner = getattr(value, "_tensor_", None)
    if inner is not None:
        return inner
    if isinstance(value, (tuple, list)):
        return type(value)(_unwrap_traced(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap_traced(v) for k, v in value.items()}
    return value


def _to_numpy(value):
    if isinstance(value, _tensor.Tensor):
        return value._device.backend.to_numpy(value._data)
    if isinstance(value, (tuple, list)):
        return type(value)(_to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    return value


def compile(
    fn=None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str = "default",
    mode: str | None = None,
    options: dict | None = None,
):
    """Compile ``fn``: capture its ops into a graph, fuse them, and replay it on later calls.

    Usable as ``tensor.compile(fn)``, ``@tensor.compile`` or ``@tensor.compile(fullgraph=True)``.
    A module is compiled through its ``forward``. See the README section "tensor.compile".

    Raises:
        ValueError: for an unknown ``backend`` or ``mode``.
        GraphBreakError: (when called) with ``fullgraph=True``, where a graph break is needed.
    """
    if backend not in _BACKENDS:
        raise ValueError(f"tensor.compile: unknown backend {backend!r}; choose one of {_BACKENDS}")
    if mode not in _MODES:
        raise ValueError(f"tensor.compile: unknown mode {mode!r}; choose one of {_MODES}")
    settings = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, options=options)
    if fn is None:
        return lambda f: compile(f, mode=mode, **settings)
    if hasattr(fn, "forward") and hasattr(fn, "modules"):
        from .module import compile_module  # noqa: PLC0415 - modules live in nn, above us

        return compile_module(fn, CompiledFunction, settings)
    return CompiledFunction(fn, **settings)
