"""Lowering: turn one segment of a captured graph into a callable ``run(env, leaves)``.

``backend="eager"`` runs the nodes one by one through the dispatcher. The default
backend fuses pointwise chains and the reductions that follow them (``fusion.py``) and
compiles each group (``codegen_numba.py`` on the CPU, ``codegen_cupy.py`` on a GPU); library calls (matmul,
convolution windows, ...) stay dispatcher calls. A graph whose inputs require grad is
trained through a joint forward/backward graph (``aot.py``), or, where that does not
apply, runs through the dispatcher so that autograd records it. Without numba the
default backend is the eager one.
"""

from __future__ import annotations

import importlib

from . import aot, fusion
from .aot import AotSegment
from .runner import eager_segment, run_node

__all__ = ["lower", "kernels_of"]


def lower(graph, start: int, stop: int, backend: str, options: dict, differentiable: bool):
    """The runner of nodes ``[start, stop)`` of ``graph``."""
    nodes = graph.nodes[start:stop]
    if backend == "eager" or not _numba():
        return eager_segment(nodes)
    if differentiable:
        whole = (start, stop) == (0, len(graph.nodes))
        return AotSegment(graph, _fused_segment) if whole and aot.supports(graph) else eager_segment(nodes)
    return _fused_segment(graph, start, stop)


def _numba() -> bool:
    from .codegen_numba import numba_available  # noqa: PLC0415 - keeps numba's loader out of import

    return numba_available()


def _fused_kernel(graph, step):
    """The kernel of a fused step, from the generator its device's backend names
    (``Backend.fused_codegen``: ``codegen_numba`` on the CPU, ``codegen_cupy`` on a GPU)."""
    codegen = graph.nodes[step.node].device.backend.fused_codegen
    module = importlib.import_module(f"{__package__}.codegen_{codegen}")
    return module.FusedKernel(graph, step.node, step.members)


def kernels_of(graph, start: int, stop: int) -> list:
    """The fused kernels of a segment, in order (for tests and ``output_code``)."""
    return [_fused_kernel(graph, s) for s in fusion.plan(graph, start, stop) if s.kind == "kernel"]


def _fused_segment(graph, start, stop):
    steps = []
    for step in fusion.plan(graph, start, stop):
        if step.kind == "kernel":
            steps.append((True, _fused_kernel(graph, step)))
        else:
            steps.append((False, graph.nodes[step.node]))

    def run(env, leaves):
        for fused, step in steps:
            if fused:
                step(env)
            else:
                run_node(step, env, leaves)

    return run
