"""One cache entry of a compiled function: the paths captured under one guard key.

A ``Path`` is one captured call: its graph, the runners of its segments (built on
the first replay) and whether it can be replayed at all. Calls under the same
key that read different values at a graph break took different paths; they share
the nodes before that break, so a replay that reads a new value switches to the
path that saw it and carries on with the values computed so far.
"""

from __future__ import annotations

from .. import _autograd_hooks
from . import guards, lowering
from .graph import Ref
from .runner import Mismatch, check_read, run_node, write_back

__all__ = ["Entry", "Path", "EAGER"]

EAGER = object()  # Entry.run's answer for a path that must run as plain Python


class Path:
    """One captured call under a guard key (see the module docstring)."""

    def __init__(self, graph, unreplayable, backend, options, consts) -> None:
        self.graph = graph
        self.unreplayable = unreplayable
        self.backend = backend
        self.options = options
        self.consts = consts
        self.const_metas = guards.const_metas(consts)
        self._checked = self._storage()
        self.segments = graph.segments()
        self._runners: dict = {}

    def consts_ok(self) -> bool:
        """Whether the outside tensors still have the shapes, dtypes and flags seen at capture."""
        if all(t._data is data and t._requires_grad is flag for t, (data, flag) in zip(self.consts, self._checked)):
            return True  # the same arrays (an optimizer updates them in place): no guarded fact can differ
        if guards.const_metas(self.consts) != self.const_metas:
            return False
        self._checked = self._storage()
        return True

    def _storage(self) -> list:
        """Each outside tensor's array and ``requires_grad``: the guarded metadata is a function of them."""
        return [(t._data, t._requires_grad) for t in self.consts]

    def runner(self, k: int, differentiable: bool):
        """The callable that computes segment ``k`` (built once per mode)."""
        key = (k, differentiable)
        run = self._runners.get(key)
        if run is None:
            start, stop = self.segments[k]
            run = lowering.lower(self.graph, start, stop, self.backend, self.options, differentiable)
            self._runners[key] = run
        return run


class Entry:
    """The paths captured under one guard key."""

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def prune(self) -> None:
        """Forget paths whose outside tensors changed shape, dtype or requires_grad."""
        self.paths = [p for p in self.paths if p.consts_ok()]

    def run(self, leaves):
        """Replay for ``leaves``: the result, EAGER, or None when a new capture is needed."""
        if not self.paths:
            return None
        path = self.paths[0]
        if path.unreplayable is not None:
            return EAGER
        differentiable = _autograd_hooks.grad_mode.enabled and any(t._requires_grad for t in leaves + path.consts)
        env = [None] * len(path.graph.nodes)
        k = 0
        while True:
            path.runner(k, differentiable)(env, leaves)
            if k == len(path.graph.breaks):
                break
            brk = path.graph.breaks[k]
            if brk.kind == "eager":
                run_node(path.graph.nodes[brk.at], env, leaves)
            else:
                try:
                    check_read(brk, env)
                except Mismatch:
                    path = self._switch(path, k, env)
                    if path is None:
                        return None
            k += 1
        write_back(path.graph.mutations, env)
        return _outputs(path.graph.outputs, env)

    def _switch(self, path, k, env):
        """Another path that agrees with ``path`` before break ``k`` and read what ``env`` holds there."""
        for other in self.paths:
            breaks = other.graph.breaks
            if other is path or len(breaks) <= k or other.unreplayable is not None:
                continue
            if breaks[k].at != path.graph.breaks[k].at:
                continue
            try:
                check_read(breaks[k], env)
            except Mismatch:
                continue
            return other
        return None


def _outputs(spec, env):
    if isinstance(spec, Ref):
        return env[spec.node]
    if isinstance(spec, (tuple, list)):
        return type(spec)(_outputs(v, env) for v in spec)
    if isinstance(spec, dict):
        return {k: _outputs(v, env) for k, v in spec.items()}
    return spec
