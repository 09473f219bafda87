"""Split regions: products and the kernels between them run one slice per thread, split
by a dim they share (Note [Split regions]).

Note [Split regions]
    A GELU MLP block ``gelu(x @ w1) @ w2`` has a hidden dim that ``w1``'s columns, the
    activation's columns and ``w2``'s rows all index. Split that dim across the threads
    and each thread computes its columns of ``x @ w1``, their GELU and the product of those
    columns with its rows of ``w2``, a partial sum of the output, with no thread waiting on
    another: Megatron's column- then row-parallel MLP, on cores. The backward splits the
    same way (the gradient of the activation by columns, ``w2``'s gradient by rows, ``w1``'s
    by columns). Done op by op instead, each product is split in row halves on its own
    (Note [Intra-op matmul] in tensor/_threads.py), with a hand-off each, and a half-row
    product does more than half the work of the whole on BLAS (0.97 against 1.65-1.78 ms
    for 256x512 by 512x1024 here); the pointwise kernels between them are too small to
    split at all.

    The dims of a segment's values are grouped into *classes* of dims indexed alike: the
    output and operand dims a pointwise op, a permute, an expand, a product (``matmul`` or
    ``linear`` of an input of 2 or more dims by a matrix) or a reshape (its equal leading and
    trailing sizes: the backward's ``(batch * seq, features)`` views) carries through, and
    the two dims a product contracts. For one class (``find_region``: the one
    whose region splits the most product work, if the region is worth a hand-off, see the
    thresholds below) every step is then *split* (each thread computes the
    slice of its value along that class's dim), *partial* (a product contracting the dim:
    each thread sums its slice of the contraction into a buffer of its own, added up after
    the region), or outside the region. A step reading a partial value, or anything a
    step outside the region computed from region values, is *after* the region; the steps
    before it move ahead, so one hand-off runs the whole region. Fused kernels in a region
    are generated with the split dim's loop bounds as arguments (``emitter.emit_kernel``'s
    ``split_dim``) and run on the whole arrays, so they stay C-contiguous and vectorised.
    Where it can, each thread runs its whole slice as one generated function without the GIL
    (Note [Native regions] in native.py); otherwise op by op from Python.

    The regions are planned here and run by ``region_runner.py``.

    Partial sums add a contraction in another order than one product does: the values
    differ from the unsplit ones by rounding, as BLAS's own blocking differs between sizes.
    With one thread, or the pool busy, the region's steps run one by one as lowered.
    ``tensor.compile(options={"split_regions": False})`` (or ``tensor.compile.config``)
    turns regions off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from .. import _threads
from .emitter import PARALLEL_WORK, column_reduction, reduce_dims
from .fusion import POINTWISE, REDUCTIONS, Step, classify, refs

__all__ = ["find_region", "region_step"]

# A region is planned only where each of two threads gets a slice this wide: narrower ones
# made an MLP's products (64 batch rows a thread) and its step slower (0.93x eager, 0.85x
# without the region). More threads may cut it down (region_runner.py's _MIN_RUN_SLICE).
_MIN_SLICE = 256
# A product split by its contraction must contract this many terms on each of two threads:
# each thread writes an output of the whole size and they are added after the region, which
# pays only for long contractions (a GELU block's 1024-wide hidden dim, not an MLP's batch of
# 128 in its weight gradients: splitting those made its compiled train step 20% slower).
_MIN_PARTIAL_DEPTH = 256
# Regions whose split work is this close to the best are ranked by what their products read.
_NEAR = 0.95
# A region must take a kernel of this many elements that would otherwise run on one thread
# (below the emitter's PARALLEL_WORK): without one, slicing the products costs about what the
# hand-offs it saves do (an MLP's backward, whose only kernel is a 128x512 ReLU mask: its
# compiled train step took 0.86x eager with the region, 0.845x without).
_MIN_KERNEL_WORK = 1 << 17


class _DimClasses:
    """Union-find over ``(node id, dim)`` pairs (see Note [Split regions])."""

    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, key):
        parent = self.parent.setdefault(key, key)
        if parent != key:
            parent = self.parent[key] = self.find(parent)
        return parent

    def union(self, a, b) -> None:
        self.parent[self.find(a)] = self.find(b)

    def dims_in(self, node, cls) -> list[int]:
        """The dims of ``node`` that belong to class ``cls``."""
        return [d for d in range(len(node.shape)) if self.find((node.id, d)) == cls]


def _sized(node) -> bool:
    """Whether every size of ``node`` is a number (not symbolic: Note [Dynamic sizes])."""
    return all(type(s) is int for s in node.shape)


def _link(classes: _DimClasses, nodes, stop: int) -> None:
    """Group the dims of ``nodes[:stop]`` that their ops index alike."""
    for node in nodes[:stop]:
        if node.kind != "call" or not _sized(node):
            continue
        name, out = node.op.name, node.shape
        product = _product_operands(node, nodes)
        if product is not None:
            a, b, transposed, bias = product
            last = len(out) - 1
            for d in range(last):  # the rows, and any batch dims before them
                classes.union((node.id, d), (a, d))
            classes.union((node.id, last), (b, 0 if transposed else 1))
            classes.union((a, last), (b, 1 if transposed else 0))
            if bias is not None:
                classes.union((node.id, last), (bias, 0))
        elif name == "permute":
            for j, d in enumerate(node.params[0]):
                classes.union((node.id, j), (node.args[0], d % len(out)))
        elif name == "view" and _sized(nodes[node.args[0]]):
            for d, e in _kept_dims(nodes[node.args[0]].shape, out):
                classes.union((node.id, e), (node.args[0], d))
        elif name in POINTWISE or name == "expand":
            for a in node.args:
                shape = nodes[a].shape if _sized(nodes[a]) else ()
                for j, size in enumerate(shape):
                    if size != 1 and size == out[len(out) - len(shape) + j]:
                        classes.union((node.id, len(out) - len(shape) + j), (a, j))
        elif name in REDUCTIONS and node.args:
            source = nodes[node.args[0]].shape
            dims, keepdim = reduce_dims(node, len(source))
            kept = [d for d in range(len(source)) if keepdim or d not in dims]
            for j, d in enumerate(kept if not keepdim else range(len(source))):
                if d not in dims:
                    classes.union((node.id, j), (node.args[0], d))


@dataclass
class _Region:
    """The plan of one split region (see ``find_region``)."""

    extent: int
    steps: list  # plan indices in the region, in order
    axis: dict  # node id -> its split dim, for every value a region step reads or writes
    partial: set = field(default_factory=set)  # product nodes summed over the threads
    after: list = field(default_factory=list)  # plan indices that must run after the region
    macs: int = 0
    products: int = 0
    traffic: int = 0  # elements the products read, a sliced operand as half: lower is better
    kernel_work: int = 0  # elements of its largest kernel that would otherwise run serially


def _product_operands(node, nodes):
    """``(a, b, transposed, bias)`` of a product of an ``a`` of 2 or more dims by a matrix,
    ``a @ b`` (matmul) or ``a @ b.T + bias`` (linear, bias None or 1-D), as node ids; None
    for any other node."""
    name, args = node.op.name if node.kind == "call" else None, node.args
    if name not in ("matmul", "linear") or len(args) < 2 or (name == "matmul" and len(args) != 2):
        return None
    a, b = nodes[args[0]], nodes[args[1]]
    if len(b.shape) != 2 or len(a.shape) < 2 or len(node.shape) != len(a.shape):
        return None
    return args[0], args[1], name == "linear", args[2] if len(args) > 2 else None


def _kept_dims(source: tuple, shape: tuple) -> list[tuple[int, int]]:
    """``(source dim, view dim)`` pairs a reshape of ``source`` to ``shape`` keeps: its equal
    leading and trailing sizes (a C-order reshape keeps ``i // rest`` and ``i % last``)."""
    kept, lead = [], 0
    while lead < min(len(source), len(shape)) and source[lead] == shape[lead]:
        kept.append((lead, lead))
        lead += 1
    for back in range(1, min(len(source), len(shape)) - lead + 1):
        if source[-back] != shape[-back]:
            break
        kept.append((len(source) - back, len(shape) - back))
    return kept


def _product_state(node, nodes, axis, extent):
    """``"split"``, ``"partial"`` or None for a 2-D product in the region's class (of size
    ``extent``): split by its rows (``a``'s rows), its columns (``b``'s columns), or its
    contraction."""
    a, b, transposed, _ = _product_operands(node, nodes)
    if node.dtype.kind != "f" or any(nodes[i].dtype != node.dtype for i in node.args):
        return None
    b_dim, last = axis.get(b), len(node.shape) - 1
    out, a_dim, b_dim = axis.get(node.id), axis.get(a), b_dim if b_dim is None or not transposed else 1 - b_dim
    rows = out is not None and out < last and a_dim == out and b_dim is None  # or a batch dim
    if rows or (out == last and (a_dim, b_dim) == (None, 1)):
        return "split"
    return "partial" if (out, a_dim, b_dim) == (None, last, 0) and extent >= 2 * _MIN_PARTIAL_DEPTH else None


def _kernel_splits(graph, step, axis) -> bool:
    """Whether a fused kernel runs on slices along its root's split dim: an elementwise loop
    nest in C order whose members that do not carry the dim read nothing that does."""
    nodes, members = graph.nodes, set(step.members) | {step.node}
    root = nodes[step.node]
    if root.id not in axis or classify(root, nodes) == "rowwise":
        return False
    if column_reduction(graph, step.node, members) is not None or nodes[step.node].op.name == "view":
        return False
    if graph.layouts.get(step.node, tuple(range(len(root.shape)))) != tuple(range(len(root.shape))):
        return False
    if any(axis.get(n, 0) is None for m in members for n in (m, *nodes[m].args)):
        return False
    if not all(_indexes_by_loop(nodes[m]) for m in members):
        return False

    def free_of_split(n, seen):
        if n in axis:
            return False
        if n not in members or n in seen:
            return True
        seen.add(n)
        return all(free_of_split(a, seen) for a in nodes[n].args)

    return all(m in axis or free_of_split(m, set()) for m in members)


def _indexes_by_loop(node) -> bool:
    """Whether the emitter indexes ``node``'s operands by the loop variables themselves, or 0
    (no reshape or slicing index map): the split loop's variable is unsigned, and an index
    expression mixing it with signed numbers would turn into a float in numba."""
    name = node.op.name
    return name in POINTWISE or name in REDUCTIONS or name in ("permute", "expand")


def _is_view_in_region(node, made: set) -> bool:
    """Whether ``node``, a permute of a region value or a reshape of one the region writes
    C-contiguous (its own buffers, or reshapes of them), is a view of that value's array."""
    return node.op.name == "permute" or (node.op.name == "view" and node.args[0] in made)


def _plan_class(graph, plan, classes, cls, extent) -> _Region:
    """The region of class ``cls`` over ``plan`` (see Note [Split regions])."""
    nodes = graph.nodes
    axis: dict = {}
    for node in nodes:
        dims = classes.dims_in(node, cls)
        if len(dims) == 1:
            axis[node.id] = dims[0]
        elif dims:  # two dims in one class (``x.T @ x``): no slice of it is the class's slice
            axis[node.id] = None
    region = _Region(extent, [], axis)
    inside, after = set(), set()
    contiguous = set()  # region values in buffers of their own, C-contiguous, or reshapes of them
    for k, step in enumerate(plan):
        node = nodes[step.node]
        reads = {a for m in [step.node, *step.members] for a in (*nodes[m].args, *refs(nodes[m].params))}
        reads -= {*step.members, step.node}
        blocked = any(a in after or a in region.partial for a in reads)
        # Dynamic sizes (Note [Dynamic sizes]) are not sliced: the region allocates its buffers.
        sliceable = not blocked and _is_cpu(node) and _sized(node)
        state = None
        if sliceable and step.kind == "eager" and node.kind == "call":
            if _product_operands(node, nodes) is not None:
                state = _product_state(node, nodes, axis, extent)
            elif _is_view_in_region(node, contiguous) and node.args[0] in inside and axis.get(node.id) is not None:
                state = "split"
        elif sliceable and step.kind == "kernel" and _kernel_splits(graph, step, axis):
            state = "split"
        if state is None:
            if reads & inside or blocked:
                after.add(step.node)
                region.after.append(k)
            continue
        inside.add(step.node)
        region.steps.append(k)
        if node.op.name != "permute":
            contiguous.add(step.node)
        if state == "partial":
            region.partial.add(step.node)
        if step.kind == "kernel" and prod(node.shape) < PARALLEL_WORK:
            region.kernel_work = max(region.kernel_work, prod(node.shape))
        if step.kind == "eager" and _product_operands(node, nodes) is not None:
            region.macs += prod(nodes[node.args[0]].shape) * node.shape[-1]
            region.products += 1
            region.traffic += sum(prod(nodes[a].shape) // (2 if a in axis else 1) for a in node.args[:2])
            region.traffic += 2 * prod(node.shape) if state == "partial" else 0
    return region


def _is_cpu(node) -> bool:
    return node.device is not None and node.device.backend.fused_codegen == "numba"


def find_region(graph, plan: list) -> _Region | None:
    """The split region of the segment ``plan`` (fusion steps) worth running, or None: the
    class of dims whose region splits the most product work, with two products and some kernel
    work at least; of near equals, the one whose products read the least (each thread then
    streams slices of the weights, not the whole weights)."""
    if not _threads.splits_matmuls():
        return None
    nodes = graph.nodes
    stop = max(s.node for s in plan) + 1 if plan else 0
    classes = _DimClasses()
    _link(classes, nodes, stop)
    candidates = {}
    for step in plan:
        node = nodes[step.node]
        if step.kind == "eager" and _product_operands(node, nodes) is not None:
            a = nodes[node.args[0]]  # the output's dims, and the contraction
            keys = [((node.id, d), size) for d, size in enumerate(node.shape)]
            for key, size in [*keys, ((a.id, len(a.shape) - 1), a.shape[-1])]:
                if type(size) is int and size >= 2 * _MIN_SLICE:
                    candidates[classes.find(key)] = size
    regions = [_plan_class(graph, plan, classes, cls, extent) for cls, extent in candidates.items()]
    regions = [
        r for r in regions
        if r.products >= 2 and r.macs >= 2 * _threads.MIN_SPLIT_MACS and r.kernel_work >= _MIN_KERNEL_WORK
    ]
    if not regions:
        return None
    most = max(r.macs for r in regions)
    return min((r for r in regions if r.macs >= _NEAR * most), key=lambda r: r.traffic)


def region_step(region: _Region, plan: list) -> Step:
    """The fusion step standing for the whole region in a reordered plan."""
    last = plan[region.steps[-1]]
    return Step("region", last.node, [plan[k].node for k in region.steps])
