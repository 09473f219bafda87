"""Capture: run the function once, eagerly, while the dispatcher reports every op.

``Tracer`` is installed as ``tensor._dispatch.tracer`` for the duration of one
call. The dispatcher, the in-place writer and the value readers (``item``,
``tolist``, ``numpy``) call into it; it appends nodes to a ``Graph``. Tensors are
known by their array object (``id`` checked against a weak reference), so a
``detach()`` alias is the same value.

Note [Capture by tracing]
    The first call computes its result eagerly and records what it did, so it is
    always right. Later calls replay the graph when the guards hold. Python code
    between ops is not replayed, so anything Python learns from tensor data must be
    a guard (a ``read`` break: ``bool(t)``, ``t.item()``) and anything the graph
    cannot express makes the trace ``unreplayable`` (the reason is kept and shown
    by ``explain``): random numbers, in-place writes into views, ``backward()``.
"""

from __future__ import annotations

import os
import sys
import weakref

import numpy as np

from .. import _dispatch
from .graph import Break, Graph, Ref

__all__ = ["Tracer", "GraphBreakError", "tracing", "user_source"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS = (_PACKAGE_DIR, os.path.dirname(np.__file__))
_FRAMEWORK_DIRS = tuple(os.path.realpath(d) + os.sep for d in _LIBRARY_DIRS) + tuple(
    os.path.realpath(os.path.join(os.path.dirname(_PACKAGE_DIR), p)) + os.sep for p in ("autograd", "nn"))
_in_framework: dict = {}  # code file name (as imported, maybe with '..') -> whether it is ours or numpy's


class GraphBreakError(RuntimeError):
    """Raised under ``fullgraph=True`` where the function would need a graph break."""


def user_source() -> str:
    """``file:line`` of the innermost frame outside the ``tensor`` package."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _weak(array):
    try:
        return weakref.ref(array)
    except TypeError:
        return lambda: array


class Tracer:
    """Records the ops of one call into ``self.graph`` (see the module docstring)."""

    def __init__(self, inputs, fullgraph: bool = False) -> None:
        self.graph = Graph()
        self.fullgraph = fullgraph
        self.unreplayable = None           # why this trace must not be replayed
        self.consts = []                   # external tensors, in node order
        self._env = {}                     # id(array) -> (weakref, node id)
        self._born = {}                    # id(array) -> weakref: tensors created during the call
        self._grads = []                   # (leaf tensor, id(.grad) when first seen)
        self.size_reads = set()            # (node id, dim or None): sizes user code read
        for index, t in enumerate(inputs):
            self._add_leaf("input", t, index)
            self._grads.append((t, id(t.grad)))

    # ------------------------------------------------------------ values
    def node_of(self, tensor) -> int | None:
        """The node id of a traced tensor's current value, or None."""
        return self._lookup(tensor._data)

    def _lookup(self, array) -> int | None:
        entry = self._env.get(id(array))
        if entry is None or entry[0]() is not array:
            return None
        return entry[1]

    def _bind(self, array, node_id: int) -> None:
        self._env[id(array)] = (_weak(array), node_id)

    def _add_leaf(self, kind, t, value) -> int:
        data = t._data
        node = self.graph.add(kind=kind, value=value, shape=tuple(data.shape), dtype=data.dtype,
                              device=t._device, source="")
        self._bind(data, node.id)
        return node.id

    def _operand(self, t) -> int:
        found = self._lookup(t._data)
        if found is not None:
            return found
        born = self._born.get(id(t._data))
        if born is not None and born() is t._data:
            # Created inside the call by a deterministic creation op: its value now is
            # what every call computes, so a snapshot stands in for the creation.
            snapshot = _dispatch.make(t._data.copy(), t._device)
            return self._add_leaf("const", t, snapshot)
        node = self._add_leaf("const", t, t)
        self.consts.append(t)
        self._grads.append((t, id(t.grad)))
        return node

    # ------------------------------------------------------------ dispatcher hooks
    def record(self, op, via, inputs, params, result, scalar=None, float_result=False) -> None:
        """Called by the dispatcher after an op ran: append its node."""
        args = tuple(self._operand(t) for t in inputs)
        params, eager_reason = self._params(params)
        data = result._data
        node = self.graph.add(kind="call", op=op, via=via, args=args, params=params, scalar=scalar,
                              float_result=float_result, shape=tuple(data.shape), dtype=data.dtype,
                              device=result._device, source=user_source())
        self._bind(data, node.id)
        if eager_reason is not None:
            self.graph_break("eager", node.id, op.name, eager_reason, at=node.id)

    def _params(self, params):
        reason = None
        out = []
        for p in params:
            if isinstance(p, tuple):
                inner, why = self._params(p)
                out.append(inner)
                reason = reason or why
            elif hasattr(p, "__array_namespace__") or isinstance(p, np.ndarray):
                found = self._lookup(p)
                if found is not None:
                    if p.dtype == bool:
                        reason = "a boolean mask index gives a data-dependent shape"
                    out.append(Ref(found))
                else:
                    out.append(p)
            else:
                out.append(p)
        return tuple(out), reason

    def on_create(self, t) -> None:
        """A creation op made ``t`` during the call."""
        self._born[id(t._data)] = _weak(t._data)

    def on_store(self, t, index, value) -> None:
        """An in-place write ``t[index] = value`` is about to happen: functionalise it."""
        target = self._lookup(t._data)
        source = self._lookup(value) if hasattr(value, "shape") else None
        if target is None and source is None:
            born = self._born.get(id(t._data))
            if born is None or born() is not t._data:
                self.fail("an in-place write into a tensor from outside the function")
            return
        if index is not Ellipsis or source is None:
            self.fail("an indexed in-place write (x[i] = v)")
            return
        if t._base is not None or self._has_views(t._data):
            self.fail("an in-place write into a view, or into a tensor that has views")
            return
        if value.dtype != t._data.dtype or tuple(value.shape) != tuple(t._data.shape):
            self.fail("an in-place write that casts or broadcasts")
            return
        original = target if target is not None else self._operand(t)
        if self.graph.nodes[original].kind in ("input", "const"):
            self.graph.mutations = [m for m in self.graph.mutations if m[0] != original]
            self.graph.mutations.append((original, source))
        self._bind(t._data, source)
        # The write itself keeps the old array object: bind it to the new value.

    def _has_views(self, array) -> bool:
        for ref, _ in self._env.values():
            other = ref()
            if other is not None and other is not array and getattr(other, "base", None) is array:
                return True
        return False

    def on_read(self, t, what: str):
        """Python reads ``t``'s data (``item``, ``tolist``, ``array``): a guarded graph break.

        ``t.numpy()`` (``what="numpy"``) returns a traced array instead: NumPy code on it
        stays in the graph (see ``numpy_capture``).
        """
        node = self._lookup(t._data)
        if node is None:
            return None
        if what == "numpy":
            from .numpy_capture import TracedArray  # noqa: PLC0415 - NumPy capture loads on first use

            return TracedArray(t)
        value = read_value(t._data, what)
        self.graph_break("read", node, what, "data-dependent Python code reads a tensor's value",
                         at=len(self.graph.nodes), value=value)
        return None

    def on_size(self, t, dim=None) -> None:
        """User code read ``t``'s sizes (``dim`` None: all of them); Note [Dynamic sizes]
        specialises them. Reads from inside the library are not recorded."""
        filename = sys._getframe(2).f_code.co_filename
        inside = _in_framework.get(filename)
        if inside is None:
            inside = _in_framework[filename] = os.path.realpath(filename).startswith(_FRAMEWORK_DIRS)
        if inside:
            return
        node = self._lookup(t._data)
        if node is not None:
            self.size_reads.add((node, dim))

    def on_random(self) -> None:
        """Random numbers were drawn during the call."""
        self.fail("random numbers are drawn inside the function")

    # ------------------------------------------------------------ breaks
    def graph_break(self, kind, node, what, reason, at, value=None) -> None:
        """Record a graph break; under ``fullgraph`` raise GraphBreakError instead."""
        source = user_source()
        if self.fullgraph:
            raise GraphBreakError(f"graph break in a fullgraph=True compile: {reason} ({what}) at {source}")
        self.graph.breaks.append(Break(kind, at, node, what, reason, source, value))

    def fail(self, reason: str) -> None:
        """Mark the trace as not replayable (the function will run eagerly)."""
        if self.fullgraph:
            raise GraphBreakError(f"cannot compile with fullgraph=True: {reason} at {user_source()}")
        if self.unreplayable is None:
            self.unreplayable = f"{reason} at {user_source()}"

    def finish(self, result, tensor_type) -> None:
        """Record the return value; check for side effects the graph cannot replay."""
        self.graph.outputs = self._output(result, tensor_type)
        for t, grad_id in self._grads:
            if id(t.grad) != grad_id:
                self.fail("backward() runs inside the function (compile the forward and loss only)")

    def _output(self, value, tensor_type):
        if isinstance(value, tensor_type):
            return Ref(self._operand(value))
        if isinstance(value, (tuple, list)):
            return type(value)(self._output(v, tensor_type) for v in value)
        if isinstance(value, dict):
            return {k: self._output(v, tensor_type) for k, v in value.items()}
        return value


def read_value(array, what: str):
    """What Python saw when it read ``array`` as ``what`` (the value a read break guards on)."""
    if what == "item":
        return array.reshape(()).item()
    host = array.get() if hasattr(array, "get") else np.asarray(array)
    return host.copy()


class tracing:
    """Context manager: install ``tracer`` in the dispatcher for the duration of a call."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer

    def __enter__(self) -> Tracer:
        if _dispatch.tracer is not None:
            raise RuntimeError("tensor.compile: nested capture is not supported")
        _dispatch.tracer = self.tracer
        return self.tracer

    def __exit__(self, *exc) -> None:
        _dispatch.tracer = None
