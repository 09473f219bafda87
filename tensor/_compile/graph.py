"""The captured program's IR: a flat list of nodes in execution order, FX-style.

A ``Node`` is one value. Its ``kind`` says where the value comes from:

* ``input``  - the i-th tensor among the compiled function's (flattened) arguments;
* ``const``  - a tensor that lives outside the function (a parameter, a global);
  it is read by reference at run time, so in-place updates between calls are seen;
* ``call``   - one op of the op table (``tensor/ops/registry.py``), run through
  the dispatcher entry point named by ``via`` (``apply``, ``unary`` or ``binary``).

Tensor arguments of a ``call`` are ``args`` (node ids). A binary op's second
operand may be a Python number (``scalar``). Index arrays inside ``params`` that
come from traced tensors are replaced by ``Ref(node id)`` so they are read fresh.

``Graph.segments`` splits the nodes at graph breaks: each segment is compiled on
its own; a break is a ``read`` (``bool(t)``, ``t.item()``: the value is guarded)
or an op that runs eagerly. ``str(graph)`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Node", "Ref", "Break", "Graph"]


@dataclass(frozen=True)
class Ref:
    """A traced tensor's array used inside an op's params (an index array)."""

    node: int


@dataclass
class Node:
    """One value of the captured program (see the module docstring for the kinds)."""

    id: int
    kind: str
    op: object = None          # OpDef for calls
    via: str = ""              # dispatcher entry: apply / unary / binary
    args: tuple = ()           # node ids of the tensor inputs
    params: tuple = ()
    scalar: object = None      # binary op with a Python number as second operand
    float_result: bool = False
    shape: tuple = ()
    dtype: object = None       # numpy dtype
    device: object = None
    source: str = ""           # file:line of the user code that made it
    value: object = None       # const: the Tensor; input: its position

    @property
    def name(self) -> str:
        """The printed name, ``%3``."""
        return f"%{self.id}"

    def describe(self) -> str:
        """One line of the printed graph."""
        meta = f"{self.dtype}[{', '.join(map(str, self.shape))}]"
        if self.kind == "input":
            return f"{self.name}: {meta} = input[{self.value}]"
        if self.kind == "const":
            return f"{self.name}: {meta} = const"
        operands = [f"%{a}" for a in self.args]
        if self.via == "binary" and not self.args[1:]:
            operands.append(repr(self.scalar))
        shown = [_short(p) for p in self.params]
        text = ", ".join(operands + shown)
        where = f"  # {self.source}" if self.source else ""
        return f"{self.name}: {meta} = {self.op.name}({text}){where}"


def _short(param) -> str:
    text = repr(param)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass
class Break:
    """A graph break: the segment before it ends at node ``at``.

    ``kind`` is ``read`` (Python read ``node``'s value: ``what`` says how and
    ``value`` is what it saw, guarded on later calls) or ``eager`` (node ``at``
    is an op the compiler does not take; it runs eagerly on its own).
    """

    kind: str
    at: int
    node: int
    what: str
    reason: str
    source: str
    value: object = None


@dataclass
class Graph:
    """The nodes of one captured call, its graph breaks and its outputs."""

    nodes: list = field(default_factory=list)
    breaks: list = field(default_factory=list)
    outputs: object = None     # the return value, with tensors replaced by Ref
    mutations: list = field(default_factory=list)  # (tensor node id, final value node id)
    layouts: dict = field(default_factory=dict)  # node id -> eager memory order (layout.py)

    def add(self, **fields) -> Node:
        """Append a node with the next id; returns it."""
        node = Node(id=len(self.nodes), **fields)
        self.nodes.append(node)
        return node

    def segments(self) -> list[tuple[int, int]]:
        """The node ranges ``[start, stop)`` between graph breaks."""
        bounds, start = [], 0
        for brk in self.breaks:
            bounds.append((start, brk.at))
            start = brk.at + 1 if brk.kind == "eager" else brk.at
        bounds.append((start, len(self.nodes)))
        return bounds

    def __str__(self) -> str:
        lines = []
        for index, (start, stop) in enumerate(self.segments()):
            lines.append(f"graph {index}:")
            lines += ["    " + n.describe() for n in self.nodes[start:stop]]
            if index < len(self.breaks):
                brk = self.breaks[index]
                lines.append(f"  -- graph break at %{brk.node}: {brk.reason} ({brk.source})")
        lines.append(f"return {self.outputs!r}")
        return "\n".join(lines)
