"""Dynamic sizes: one captured graph replayed at many sizes without capturing again.

Note [Dynamic sizes]
    A graph records concrete sizes (node shapes, ``view``/``expand`` params, the count a
    ``mean`` divides by). Python code between ops is not replayed, so we cannot know from
    one capture how a size was computed. We learn it from two: when a call differs from an
    earlier capture only in sizes (PyTorch's automatic dynamic shapes), the two graphs are
    compared node by node. Every input dim whose size differs becomes a *symbol* (``s0``,
    ``s1``, ...; equal sizes share one, PyTorch's duck sizing), and every int of the graph
    that differs between the two must be a symbol, a constant times a symbol plus a small
    offset (a variance's ``n - 1``), or a product of two symbols, with the same formula at
    both sizes; anything else that differs (a
    float, a const tensor made from a size, the graph's structure, a value Python read)
    means the graph is not size-generic and each size keeps its own capture.

    The generalised graph is guarded by rank, dtype, device, the static sizes, each symbol
    being at least 2 (sizes 0 and 1 are specialised, as PyTorch does: broadcasting and
    empty loops depend on them), and the equalities of duck sizing. A size that user code
    reads (``x.shape``, ``x.size(d)``, ``len(x)``, ``x.numel()``) may steer Python, so a
    dim it reads is specialised: if it differs between the captures, nothing generalises.
    Reads from inside the library are not counted (its ops' shapes are in the graph).
    A call that passes the guards instantiates the graph at its sizes, without running
    the function; kernels take loop extents as arguments, so the kernels compiled for the
    first size are reused (Note [Parallel threshold] may choose a parallel variant once).

    Two captures agreeing is evidence, not proof: a size computed by a rule that is not
    affine in the symbol looks affine at two sizes. The library's one such rule is basic
    slicing, which clips (``x[:8]`` has ``min(n, 8)`` rows: ``n`` at 3 and 5, 8 at 64; on
    proxies of 17 and 19 rows ``x[:100]`` looks like ``x``), so every slice of a symbolic
    dim is also a guard: a call whose sizes give any slice another shape than the graph's
    formula is captured again. Sizes user code computes are covered by the size reads
    above. PyTorch's symbolic tracing guards the same way (on ``min``'s branch).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from math import prod

import numpy as np

from .entry import Entry, Path
from .graph import Graph, Node
from .runner import values_equal

__all__ = ["Sym", "DynamicGraph", "generalise"]

_INSTANCES = 32  # instantiated sizes kept per generalised graph
_OFFSETS = (0, -1, 1, -2, 2)  # n - 1 (Bessel's correction), n + 1, ...: small offsets only


@dataclasses.dataclass(frozen=True)
class Sym:
    """A size as ``factor * s_a * s_b ... + offset`` of the symbols ``symbols`` (indices)."""

    factor: int
    symbols: tuple
    offset: int = 0

    def value(self, values) -> int:
        """The size for symbol values ``values``."""
        return self.factor * prod(values[s] for s in self.symbols) + self.offset

    def __str__(self) -> str:
        names = [f"s{s}" for s in self.symbols]
        text = "*".join(([str(self.factor)] if self.factor != 1 else []) + names)
        return text + (f"{self.offset:+d}" if self.offset else "")

    __repr__ = __str__


@dataclasses.dataclass
class _InstanceNode(Node):
    """A node of a graph instantiated at some sizes; it prints as its symbolic template, so
    that generated kernels (which quote their nodes) have the same source at every size."""

    template: Node = None

    def describe(self) -> str:
        """The template's line: sizes as symbols."""
        return self.template.describe()


class _NotGeneric(Exception):
    """The two captures differ in something that is not a size formula."""


class DynamicGraph:
    """A graph with sizes as ``Sym`` formulas, and the dims of the inputs that bind them."""

    def __init__(self, graph: Graph, dims: list, input_shapes: list) -> None:
        self.graph = graph  # node shapes/params/scalars hold Sym where dynamic
        self.dims = dims  # dims[s]: the (leaf, dim) pairs that are symbol s
        self.input_shapes = input_shapes  # per leaf: int or Sym per dim
        self.path_args = None  # (backend, options, consts) of the instances' paths
        self.instances: OrderedDict = OrderedDict()
        nodes = graph.nodes
        self.slices = [  # slices of a symbolic dim: each is a guard (Note [Dynamic sizes])
            n for n in nodes if n.kind == "call" and n.op.name == "getitem_view" and _symbolic(nodes[n.args[0]].shape)
        ]

    def describe(self) -> str:
        """The symbols and the inputs' symbolic shapes, for ``explain``."""
        shapes = ", ".join(f"input[{i}]: [{', '.join(map(str, s))}]" for i, s in enumerate(self.input_shapes))
        return f"dynamic sizes {', '.join(f's{k}' for k in range(len(self.dims)))}; {shapes}"

    def bind(self, leaves) -> tuple | None:
        """The symbol values for a call's tensors, or None when a guard fails."""
        values = []
        for pairs in self.dims:
            sizes = {leaves[i]._data.shape[d] for i, d in pairs}
            if len(sizes) != 1:
                return None
            (size,) = sizes
            if size < 2:
                return None
            values.append(size)
        for t, shape in zip(leaves, self.input_shapes):
            if len(t._data.shape) != len(shape) or any(
                not isinstance(s, Sym) and s != actual for s, actual in zip(shape, t._data.shape)
            ):
                return None
        for node in self.slices:
            source = _substitute(self.graph.nodes[node.args[0]].shape, values)
            if _sliced_shape(source, _substitute(node.params[0], values)) != _substitute(node.shape, values):
                return None  # the slice clips differently at these sizes
        return tuple(values)

    def entry(self, values: tuple) -> Entry:
        """The cache entry of the graph at symbol values ``values`` (kept for the last few sizes)."""
        entry = self.instances.get(values)
        if entry is None:
            entry = self.instances[values] = Entry()
            entry.paths.append(Path(_substitute_graph(self.graph, values), None, *self.path_args))
            if len(self.instances) > _INSTANCES:
                self.instances.popitem(last=False)
        self.instances.move_to_end(values)
        return entry


def generalise(first, second, allowed=None) -> DynamicGraph | None:
    """A DynamicGraph from two captures ``(graph, leaf shapes, size reads)`` that differ in
    sizes, or None when they are not the same program at two sizes (Note [Dynamic sizes]).
    ``allowed``, when given, is the set of ``(leaf, dim)`` that may become symbols."""
    graph_a, shapes_a, reads_a = first
    graph_b, shapes_b, reads_b = second
    pairs: dict = {}
    dims: list = []
    for leaf, (sa, sb) in enumerate(zip(shapes_a, shapes_b)):
        if len(sa) != len(sb):
            return None
        for d, (x, y) in enumerate(zip(sa, sb)):
            if x != y:
                if min(x, y) < 2 or (allowed is not None and (leaf, d) not in allowed):
                    return None  # 0 and 1 are specialised
                if (x, y) not in pairs:
                    pairs[(x, y)] = len(dims)
                    dims.append([])
                dims[pairs[(x, y)]].append((leaf, d))
    if not dims:
        return None
    symbols = list(pairs)
    try:
        graph = _general_graph(graph_a, graph_b, symbols)
        for node, dim in reads_a | reads_b:
            shape = graph.nodes[node].shape
            if any(isinstance(s, Sym) for s in (shape if dim is None else shape[dim : dim + 1])):
                raise _NotGeneric("user code read a size that differs")
    except _NotGeneric:
        return None
    input_shapes = [None] * len(shapes_a)
    for node in graph.nodes:
        if node.kind == "input":
            input_shapes[node.value] = node.shape
    input_shapes = [s if s is not None else tuple(shapes_a[i]) for i, s in enumerate(input_shapes)]
    return DynamicGraph(graph, dims, input_shapes)


# ------------------------------------------------------------ comparing two captures


def _size(x, y, symbols):
    """The formula that gives ``x`` at the first capture's sizes and ``y`` at the second's."""
    if x == y:
        return x
    for s, (a, b) in enumerate(symbols):
        if (a, b) == (x, y):
            return Sym(1, (s,))
    for offset in _OFFSETS:
        for s, (a, b) in enumerate(symbols):
            if (x - offset) % a == 0 and x != offset and b * ((x - offset) // a) + offset == y:
                return Sym((x - offset) // a, (s,), offset)
    for s, (a, b) in enumerate(symbols):
        for t in range(s, len(symbols)):
            if (a * symbols[t][0], b * symbols[t][1]) == (x, y):
                return Sym(1, (s, t))
    raise _NotGeneric(f"{x} and {y}")


def _general(a, b, symbols):
    """``a`` with every int that differs from ``b`` as a Sym; raises _NotGeneric."""
    if type(a) is not type(b):
        raise _NotGeneric(f"{a!r} and {b!r}")
    if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)):
        return _size(int(a), int(b), symbols)
    if isinstance(a, slice):
        return slice(
            *(
                None if p is None else _general(p, q, symbols)
                for p, q in zip((a.start, a.stop, a.step), (b.start, b.stop, b.step))
            )
        )
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            raise _NotGeneric("lengths")
        return type(a)(_general(p, q, symbols) for p, q in zip(a, b))
    if isinstance(a, dict):
        if a.keys() != b.keys():
            raise _NotGeneric("keys")
        return {k: _general(a[k], b[k], symbols) for k in a}
    if isinstance(a, (np.ndarray, np.generic)):
        if not values_equal(np.asarray(a), np.asarray(b)):
            raise _NotGeneric("arrays")
        return a
    if not (a is b or a == b or (a != a and b != b)):
        raise _NotGeneric(f"{a!r} and {b!r}")
    return a


def _same_const(a, b) -> bool:
    if a is b:
        return True
    da, db = a._data, b._data
    if da.shape != db.shape or da.dtype != db.dtype:
        return False
    backend = a._device.backend
    return values_equal(backend.to_numpy(da), backend.to_numpy(db))


def _general_graph(a: Graph, b: Graph, symbols) -> Graph:
    if len(a.nodes) != len(b.nodes) or len(a.breaks) != len(b.breaks) or a.mutations != b.mutations:
        raise _NotGeneric("structure")
    nodes = []
    for na, nb in zip(a.nodes, b.nodes):
        same = (na.kind, na.op, na.via, na.args, na.float_result, na.dtype, str(na.device), len(na.shape))
        if same != (nb.kind, nb.op, nb.via, nb.args, nb.float_result, nb.dtype, str(nb.device), len(nb.shape)):
            raise _NotGeneric(f"node %{na.id}")
        if na.kind == "const" and not _same_const(na.value, nb.value):
            raise _NotGeneric(f"const %{na.id}")
        value = na.value if na.kind == "const" else _general(na.value, nb.value, symbols)
        nodes.append(
            dataclasses.replace(
                na,
                shape=_general(tuple(na.shape), tuple(nb.shape), symbols),
                params=_general(na.params, nb.params, symbols),
                scalar=_general(na.scalar, nb.scalar, symbols),
                value=value,
            )
        )
    breaks = []
    for ba, bb in zip(a.breaks, b.breaks):
        if (ba.kind, ba.at, ba.node, ba.what) != (bb.kind, bb.at, bb.node, bb.what) or not values_equal(
            ba.value, bb.value
        ):
            raise _NotGeneric("breaks")
        breaks.append(ba)
    return Graph(
        nodes=nodes, breaks=breaks, outputs=_general(a.outputs, b.outputs, symbols), mutations=list(a.mutations)
    )


# ------------------------------------------------------------ instantiating


def _symbolic(shape) -> bool:
    return any(isinstance(s, Sym) for s in shape)


def _sliced_shape(shape, index) -> tuple:
    """The shape of ``x[index]`` for ``x`` of ``shape`` (basic indexing), without any data."""
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape=shape, strides=(0,) * len(shape))
    return probe[index].shape


def _substitute(value, values):
    if isinstance(value, Sym):
        return value.value(values)
    if isinstance(value, slice):
        return slice(*(_substitute(p, values) for p in (value.start, value.stop, value.step)))
    if isinstance(value, (tuple, list)):
        return type(value)(_substitute(v, values) for v in value)
    if isinstance(value, dict):
        return {k: _substitute(v, values) for k, v in value.items()}
    return value


def _substitute_graph(graph: Graph, values) -> Graph:
    nodes = [
        _InstanceNode(
            **{f.name: getattr(n, f.name) for f in dataclasses.fields(n)}
            | dict(
                shape=_substitute(n.shape, values),
                params=_substitute(n.params, values),
                scalar=_substitute(n.scalar, values),
                value=n.value if n.kind == "const" else _substitute(n.value, values),
                template=n,
            )
        )
        for n in graph.nodes
    ]
    return Graph(
        nodes=nodes,
        breaks=list(graph.breaks),
        outputs=_substitute(graph.outputs, values),
        mutations=list(graph.mutations),
    )
