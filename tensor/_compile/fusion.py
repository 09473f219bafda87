"""Fusion: which nodes of a segment become one loop nest, and which stay library calls.

Every op is one of (``classify``):

* ``pointwise`` - a scalar function of its broadcast inputs (add, exp, where, casts, ...);
* ``view``      - a re-indexing of one input (permute, expand, basic slicing, reshape);
* ``reduce``    - sum / amax / amin / prod / argmax / argmin over some dims;
* ``rowwise``   - softmax / log_softmax along one dim (CPU kernels): a max, a sum of exps
  and a normalisation over each row, always the root of its kernel (Note [Row-wise ops]);
* ``None``      - anything else (matmul, convolution windows, indexing with arrays, ...):
  a library call through the dispatcher, which splits fusion groups.

Note [Fusion by inlining]
    A fusable node is *inlined* into its consumers (recomputed at each use) unless it
    must exist as an array: it is needed after the segment, by a library call, or it is
    a reduction that a consumer would read more than once per element (a mean broadcast
    back over the row it came from: recomputing it would cost a row per element), or it is
    inlined into several kernels and costs a transcendental function each time. Each
    node that must exist is the *root* of one fused kernel whose expression tree is
    everything inlined into it. The k-means step ``argmin(norm(X - means[:, None]))``
    has one root, the argmin: one pass over X.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

import numpy as np

from . import window_code
from .graph import Ref

__all__ = ["classify", "plan", "Step", "live_after", "refs"]

POINTWISE = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div",
        "pow",
        "maximum",
        "minimum",
        "neg",
        "abs",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "sin",
        "cos",
        "tanh",
        "log1p",
        "expm1",
        "reciprocal",
        "sign",
        "floor",
        "ceil",
        "round",
        "trunc",
        "sigmoid",
        "relu",
        "clamp",
        "hardtanh",
        "threshold_backward",
        "clamp_backward",
        "hardtanh_backward",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "logical_and",
        "logical_or",
        "logical_xor",
        "logical_not",
        "isnan",
        "isinf",
        "isfinite",
        "where",
        "clone",
        "contiguous",
        "to_dtype",
        "erf",
        "gelu",
        "silu",
        "leaky_relu",
        "elu",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
    }
)
VIEWS = frozenset({"view", "permute", "expand", "getitem_view"})
REDUCTIONS = frozenset({"sum", "amax", "amin", "prod", "argmax", "argmin", "all", "any"})
ROWWISE = frozenset({"softmax", "log_softmax"})


def classify(node, nodes=()) -> str | None:
    """``pointwise``, ``view``, ``reduce``, ``rowwise`` or None (a library call); see the module
    docstring. With the graph's ``nodes``, a CPU node reading or making float16 is a library
    call: numba has no float16 arrays."""
    if node.kind != "call" or node.device is None or not node.device.backend.fused_codegen:
        return None
    if node.device.backend.fused_codegen == "numba" and nodes:
        if any(n.dtype == np.float16 for n in (node, *(nodes[a] for a in node.args))):
            return None
    name = node.op.name
    if name in POINTWISE:
        return "pointwise" if node.dtype.kind != "c" else None
    if name in window_code.GATHERS:  # Note [Pooling scatter as a gather]; the CUDA emitter has none
        numba = node.device.backend.fused_codegen == "numba"
        return "pointwise" if numba and window_code.fusable(node, nodes) else None
    if name in VIEWS:
        if name == "getitem_view" and not _basic_index(node.params[0]):
            return None
        return "view"
    if name in REDUCTIONS:
        return "reduce"
    if name in ROWWISE and node.shape and node.dtype.kind == "f" and node.device.backend.fused_codegen == "numba":
        return "rowwise"  # the CUDA emitter has no row-wise kernel yet: a library call there
    return None


def _basic_index(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in items) and not any(
        isinstance(i, Ref) for i in items
    )


@dataclass
class Step:
    """One thing a lowered segment does: run ``node`` eagerly, or a fused kernel for root ``node``."""

    kind: str  # "eager" or "kernel"
    node: int
    members: list = field(default_factory=list)  # node ids inlined into the kernel


def live_after(graph, stop: int) -> set:
    """Ids of nodes before ``stop`` that are read at or after ``stop`` (or by the return value)."""
    live = set()
    for node in graph.nodes[stop:]:
        live.update(a for a in node.args if a < stop)
        live.update(refs(node.params))
    for brk in graph.breaks:
        live.add(brk.node)
    live.update(refs(graph.outputs))
    for target, source in graph.mutations:
        live.update((target, source))
    return live


def refs(value):
    """The node ids of every Ref inside ``value`` (params, outputs: tuples, lists, dicts)."""
    if isinstance(value, Ref):
        yield value.node
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from refs(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from refs(v)


def plan(graph, start: int, stop: int) -> list[Step]:
    """The steps of segment ``[start, stop)`` in order (see Note [Fusion by inlining])."""
    nodes = graph.nodes
    kinds = {i: classify(nodes[i], nodes) for i in range(start, stop)}
    consumers: dict = {i: [] for i in range(start, stop)}
    for i in range(start, stop):
        for a in set(nodes[i].args) | set(refs(nodes[i].params)):
            if a in consumers:
                consumers[a].append(i)
    live = live_after(graph, stop)
    if stop < len(nodes):  # the forward of a joint graph: the backward reads what recomputing needs
        later = recomputed(graph, stop)
        live = {n for n in live if n not in later} | {a for r in later for a in nodes[r].args if a not in later}
    kinds.update((r, classify(nodes[r], nodes)) for r in recomputed(graph, start) if start)
    roots = {i for i in range(start, stop) if kinds[i] and _must_exist(i, kinds, consumers, live, nodes)}
    roots |= _shared_costly(roots, kinds, consumers, nodes)
    roots |= _stored_under_views(roots, kinds, nodes, graph.layouts)
    steps = []
    for i in range(start, stop):
        if nodes[i].kind != "call":
            steps.append(Step("eager", i))
        elif kinds[i] is None:
            steps.append(Step("eager", i))
        elif i in roots:
            members = _members(i, kinds, roots, nodes)
            if any(kinds[m] != "view" for m in members):
                steps.append(Step("kernel", i, members))
            else:  # only re-indexing: the dispatcher's zero-copy views are cheaper
                steps.extend(Step("eager", m) for m in sorted(members))
    return steps


# Note [Recomputation]: the backward of a joint graph (aot.py) reads forward values; storing
# each one costs the forward a pass writing it and the backward a pass reading it. As
# AOTAutograd's partitioner does, cheap pointwise values (no transcendental function, not
# an output, not read as an array by a library call in either part, even through views) are
# instead recomputed inside the backward's kernels from what they are computed from:
# LayerNorm's ``x - mean`` and its scaled and shifted result are recomputed from ``x`` and
# the row statistics. Only graphs without breaks or in-place writes are split into a
# forward and a backward this way.
def recomputed(graph, boundary: int) -> set:
    """Forward nodes (ids below ``boundary``) that the segment from ``boundary`` recomputes
    instead of reading (Note [Recomputation])."""
    nodes = graph.nodes
    if boundary <= 0 or boundary >= len(nodes) or graph.breaks or graph.mutations:
        return set()
    kinds = [classify(node, nodes) for node in nodes]
    consumers: dict = {}
    for node in nodes:
        for a in node.args:
            consumers.setdefault(a, []).append(node.id)
    stored = set(refs(graph.outputs)) | {r for node in nodes for r in refs(node.params)}

    def read_as_array(n) -> bool:
        """Whether a library call or an output reads ``n`` (through views): it must be stored."""
        return n in stored or any(
            kinds[c] is None or (kinds[c] == "view" and read_as_array(c)) for c in consumers.get(n, ())
        )

    wanted = [n for n in live_after(graph, boundary) if n < boundary]
    chosen, seen = set(), set()
    while wanted:
        n = wanted.pop()
        if n in seen:
            continue
        seen.add(n)
        node = nodes[n]
        # a window scan is stored (its int8 offsets are cheaper to read than to recompute)
        cheap = kinds[n] in ("pointwise", "view") and node.op.name not in _COSTLY | window_code.GATHERS
        if cheap and not any(refs(node.params)) and not read_as_array(n):
            chosen.add(n)
            wanted.extend(node.args)
    return chosen


_COSTLY = frozenset(
    {
        "exp",
        "log",
        "tanh",
        "sigmoid",
        "erf",
        "gelu",
        "silu",
        "elu",
        "pow",
        "sqrt",
        "rsqrt",
        "log1p",
        "expm1",
        "sin",
        "cos",
    }
)


def _shared_costly(roots, kinds, consumers, nodes) -> set:
    """Nodes inlined into two or more kernels whose inlined work includes a transcendental
    function: each kernel would compute it again, where storing it once costs one pass.
    Only the outermost of such a chain is stored (its inputs are then inlined into it alone),
    so a shared chain costs one extra pass, not one per node; repeated until none is left."""
    added: set = set()
    while True:
        inlined_into: dict = {}
        stored = roots | added
        for root in stored:
            for m in _members(root, kinds, stored, nodes):
                if m != root:
                    inlined_into.setdefault(m, set()).add(root)
        shared = {m for m, users in inlined_into.items() if len(users) > 1 and kinds[m] != "view"}
        costly = {m for m in shared if any(nodes[n].op.name in _COSTLY for n in _members(m, kinds, stored, nodes))}
        if not costly:
            return added
        added |= {m for m in costly if not any(c in costly for c in _through_views(m, kinds, consumers))}


# Note [Views of stored values]: a root that only re-indexes a computed value (a conv gradient
# permuted and reshaped for the weight-gradient matmul) while another kernel inlines that value
# too (the bias gradient's sum) makes the second kernel compute it again. Where eager's memory
# order of the value is known (Note [Eager layouts]), the value is stored instead, in that
# order: the views over it are then zero-copy, as they were eagerly, and the other kernel reads it.
def _stored_under_views(roots, kinds, nodes, layouts) -> set:
    """Values under view-only roots to store instead (Note [Views of stored values])."""
    inlined = {m for r in roots for m in _members(r, kinds, roots, nodes) if m != r}
    added = set()
    for root in roots:
        n = root
        while kinds.get(n) == "view":  # a view has one tensor argument
            n = nodes[n].args[0]
        if n != root and kinds.get(n) == "pointwise" and n in layouts and n in inlined:
            added.add(n)
    return added


def _through_views(i, kinds, consumers):
    """The consumers of ``i``, looking through views (an expand of ``i`` is ``i`` re-indexed)."""
    for c in consumers.get(i, ()):
        if kinds.get(c) == "view":
            yield from _through_views(c, kinds, consumers)
        else:
            yield c


def _must_exist(i, kinds, consumers, live, nodes) -> bool:
    if i in live or not consumers[i] or kinds[i] == "rowwise":
        return True
    if any(kinds[c] is None for c in consumers[i]):
        return True
    return kinds[i] == "reduce" and _read_repeatedly(i, kinds, consumers, nodes)


def _read_repeatedly(i, kinds, consumers, nodes) -> bool:
    """Whether some inlining path from reduction ``i`` grows the element count before it is reduced."""
    size = prod(nodes[i].shape)
    stack = list(consumers[i])
    while stack:
        c = stack.pop()
        if kinds.get(c) == "reduce":
            continue
        if prod(nodes[c].shape) > size:
            return True
        stack.extend(consumers.get(c, ()))
    return False


def _members(root, kinds, roots, nodes) -> list[int]:
    """The root and every fusable node inlined into it."""
    seen, stack = set(), [root]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for a in nodes[n].args:
            if kinds.get(a) and a not in roots:
                stack.append(a)
    return sorted(seen)
