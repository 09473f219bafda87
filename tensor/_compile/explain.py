"""``tensor.compile.explain(fn)(*args)``: capture once and report graphs, breaks and reasons."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _tensor
from .api import _traced_args, _unwrap_traced, host_to_tensor
from .capture import Tracer, tracing
from .guards import flatten

__all__ = ["explain", "ExplainOutput"]


@dataclass
class ExplainOutput:
    """What one capture of a function found (PyTorch's ``ExplainOutput`` fields)."""

    graphs: list = field(default_factory=list)  # the printed graph of each segment
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list = field(default_factory=list)  # "reason (what) at file:line"
    op_count: int = 0
    eager_reason: str | None = None  # why the function cannot be replayed
    dynamic_sizes: list = field(default_factory=list)  # a compiled function's size-generic graphs
    captures: int = 0  # a compiled function's captures so far
    dynamic_replays: int = 0  # its calls at new sizes that replayed a generalised graph
    graph: object = field(default=None, repr=False)  # the captured Graph itself

    def __str__(self) -> str:
        lines = [
            f"Graph Count: {self.graph_count}",
            f"Graph Break Count: {self.graph_break_count}",
            f"Op Count: {self.op_count}",
        ]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  {i + 1}. {r}" for i, r in enumerate(self.break_reasons)]
        if self.eager_reason:
            lines.append(f"Runs eagerly: {self.eager_reason}")
        if self.captures:
            lines.append(f"Captures so far: {self.captures} (calls replayed at new sizes: {self.dynamic_replays})")
        if self.dynamic_sizes:
            lines.append("Dynamic sizes (Note [Dynamic sizes]):")
            lines += [f"  {d}" for d in self.dynamic_sizes]
        lines.append("Graphs:")
        lines.append(str(self.graph))
        return "\n".join(lines)


def explain(fn):
    """``explain(fn)(*args, **kwargs)`` captures ``fn`` once on those arguments and returns an
    ``ExplainOutput`` (printable) listing the graphs, the graph breaks and their reasons. For a
    compiled function it also reports its captures so far and the graphs it replays at any
    size (with their symbolic input shapes).

    Raises:
        whatever ``fn`` raises on those arguments.
    """
    target = getattr(fn, "fn", fn)

    def run(*args, **kwargs) -> ExplainOutput:
        leaves: list = []
        spec = flatten((args, kwargs), leaves)
        numpy_program = any(isinstance(x, np.ndarray) for x in leaves)
        tensors = [host_to_tensor(x) if isinstance(x, np.ndarray) else x for x in leaves]
        tracer = Tracer(tensors)
        call_args, call_kwargs = _traced_args(spec, tensors, numpy_program)
        with tracing(tracer):
            result = _unwrap_traced(target(*call_args, **call_kwargs))
            tracer.finish(result, _tensor.Tensor)
        report = _report(tracer)
        report.captures = getattr(fn, "captures", 0)
        report.dynamic_replays = getattr(fn, "dynamic_replays", 0)
        report.dynamic_sizes = [d.describe() for d in getattr(fn, "dynamic_graphs", {}).values()]
        return report

    return run


def _report(tracer) -> ExplainOutput:
    graph = tracer.graph
    segments = graph.segments()
    return ExplainOutput(
        graphs=[_segment_text(graph, s) for s in segments],
        graph_count=len(segments),
        graph_break_count=len(graph.breaks),
        break_reasons=[f"{b.reason} ({b.what}) at {b.source}" for b in graph.breaks],
        op_count=sum(1 for n in graph.nodes if n.kind == "call"),
        eager_reason=tracer.unreplayable,
        graph=graph,
    )


def _segment_text(graph, bounds) -> str:
    start, stop = bounds
    return "\n".join(n.describe() for n in graph.nodes[start:stop])
