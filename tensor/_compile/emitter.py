"""Writing one fused group as a loop nest: Python source for numba.

``emit_kernel(graph, root, members)`` returns the source of ``kernel(out, sz, a0, a1, ...)``:
one loop per dim of the root's output (the outermost a ``prange``), reductions as inner
loops, every inlined node as one line that names the node it computes. ``a0, a1, ...``
are the group's input arrays (node ids in ``inputs``); ``sz`` holds every loop extent, so
the source does not change with sizes (only with which dims have size 1).
"""

from __future__ import annotations

from math import prod

import numpy as np

from . import scalar_code
from .fusion import REDUCTIONS

__all__ = ["emit_kernel", "Kernel"]


class Kernel:
    """The source of one fused group and what to call it with."""

    def __init__(self, source, inputs, sizes, root) -> None:
        self.source, self.inputs, self.sizes, self.root = source, inputs, sizes, root


class _Emitter:
    def __init__(self, graph, members) -> None:
        self.nodes = graph.nodes
        self.members = set(members)
        self.inputs: list[int] = []
        self.sizes: list[int] = []
        self.lines: list[str] = []
        self.depth = 1
        self.scopes: list[dict] = [{}]
        self.count = 0

    # ------------------------------------------------------------ helpers
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def extent(self, size: int) -> str:
        self.sizes.append(int(size))
        return f"sz[{len(self.sizes) - 1}]"

    def _memo(self, key):
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    # ------------------------------------------------------------ values
    def emit(self, n: int, idx: tuple) -> tuple[str, np.dtype]:
        """Code naming element ``idx`` of node ``n``, and its dtype."""
        key = (n, idx)
        found = self._memo(key)
        if found is not None:
            return found
        node = self.nodes[n]
        if n not in self.members:
            result = self._load(n, idx)
        elif node.op.name in REDUCTIONS:
            result = self._reduce(node, idx)
        elif node.op.name in _VIEW_INDEX:
            return self.emit(node.args[0], _VIEW_INDEX[node.op.name](self, node, idx))
        else:
            result = self._pointwise(node, idx)
        self.scopes[-1][key] = result
        return result

    def _load(self, n, idx):
        if n not in self.inputs:
            self.inputs.append(n)
        name = f"a{self.inputs.index(n)}"
        var = self.fresh("x")
        self.line(f"{var} = {name}[{', '.join(idx) if idx else '0'}]")
        return var, self.nodes[n].dtype

    def _pointwise(self, node, idx):
        operands = [self.emit(a, _broadcast(self.nodes[a].shape, node.shape, idx)) for a in node.args]
        if node.via == "binary" and len(node.args) == 1:
            operands.append((scalar_code.literal(node.scalar), None))
        dtypes = [d for _, d in operands if d is not None]
        ctype = scalar_code.compute_dtype(node, dtypes or [node.dtype])
        if ctype.kind == "b":
            codes = [c for c, _ in operands]
        else:
            codes = [scalar_code.cast(c, ctype) for c, _ in operands]
        if node.op.name == "where":
            codes[0] = operands[0][0]
        var = self.fresh("v")
        expr = scalar_code.expression(node, codes)
        self.line(f"{var} = {scalar_code.cast(expr, node.dtype)}  # {node.describe()}")
        return var, node.dtype

    def _reduce(self, node, idx):
        name = node.op.name
        source = self.nodes[node.args[0]]
        dims, keepdim = _reduce_dims(node, len(source.shape))
        loops, in_idx, out_pos = [], [], 0
        for d, size in enumerate(source.shape):
            if d in dims:
                var = self.fresh("r")
                loops.append((var, size))
                in_idx.append(var)
                out_pos += 1 if keepdim else 0
            else:
                in_idx.append(idx[out_pos])
                out_pos += 1
        acc = self.fresh("acc")
        first = " and ".join(f"{v} == 0" for v, _ in loops) or "True"
        self.line(f"{acc} = {_INIT[name](node, source.dtype)}  # {node.describe()}")
        if name in ("argmin", "argmax"):
            self.line(f"{acc}_i = 0")
        for var, size in loops:
            self.line(f"for {var} in range({self.extent(size)}):")
            self.depth += 1
        self.scopes.append({})
        value, dtype = self.emit(node.args[0], tuple(in_idx))
        for text in _UPDATE[name](acc, value, loops[0][0] if loops else "0", first, dtype):
            self.line(text)
        self.scopes.pop()
        self.depth -= len(loops)
        if name in ("argmin", "argmax"):
            return f"{acc}_i", np.dtype(np.int64)
        return scalar_code.cast(acc, node.dtype), node.dtype


def _reduce_dims(node, ndim):
    if node.op.name in ("argmin", "argmax"):
        dim, keepdim = node.params
        return {dim % max(ndim, 1)}, keepdim
    dims, keepdim = node.params[0], node.params[1]
    return {d % max(ndim, 1) for d in dims}, keepdim


def _acc_dtype(node, source_dtype):
    if node.op.name in ("sum", "prod"):
        return np.dtype(np.float64) if node.dtype.kind == "f" else node.dtype
    return node.dtype


def _extreme(sign):
    def init(node, dtype):
        if dtype.kind == "f":
            return f"np.{dtype.name}({'-' if sign > 0 else ''}np.inf)"
        if dtype.kind == "b":
            return "False" if sign > 0 else "True"
        info = np.iinfo(dtype)
        return f"np.{dtype.name}({info.min if sign > 0 else info.max})"
    return init


_INIT = {
    "sum": lambda n, d: f"np.{_acc_dtype(n, d).name}(0)",
    "prod": lambda n, d: f"np.{_acc_dtype(n, d).name}(1)",
    "amax": _extreme(+1), "amin": _extreme(-1), "argmax": _extreme(+1), "argmin": _extreme(-1),
    "all": lambda n, d: "True", "any": lambda n, d: "False",
}


def _arg_update(op):
    def update(acc, v, r, first, dtype):
        return [f"if {first} or {v} {op} {acc} or ({v} != {v} and {acc} == {acc}):",
                f"    {acc} = {v}", f"    {acc}_i = {r}"]
    return update


_UPDATE = {
    "sum": lambda acc, v, r, first, d: [f"{acc} += {v}"],
    "prod": lambda acc, v, r, first, d: [f"{acc} *= {v}"],
    "amax": lambda acc, v, r, first, d: [f"if {v} > {acc} or {v} != {v}:", f"    {acc} = {v}"],
    "amin": lambda acc, v, r, first, d: [f"if {v} < {acc} or {v} != {v}:", f"    {acc} = {v}"],
    "argmax": _arg_update(">"), "argmin": _arg_update("<"),
    "all": lambda acc, v, r, first, d: [f"{acc} = {acc} and ({v} != 0)"],
    "any": lambda acc, v, r, first, d: [f"{acc} = {acc} or ({v} != 0)"],
}


# ------------------------------------------------------------ index maps of views and broadcasts


def _broadcast(in_shape, out_shape, idx) -> tuple:
    """Indices into an operand of shape ``in_shape`` broadcast to ``out_shape``."""
    lead = len(out_shape) - len(in_shape)
    return tuple("0" if size == 1 else idx[lead + j] for j, size in enumerate(in_shape))


def _permute(em, node, idx):
    dims = node.params[0]
    out = [None] * len(dims)
    for j, d in enumerate(dims):
        out[d % len(dims)] = idx[j]
    return tuple(out)


def _expand(em, node, idx):
    return _broadcast(em.nodes[node.args[0]].shape, node.shape, idx)


def _view(em, node, idx):
    in_shape, out_shape = em.nodes[node.args[0]].shape, node.shape
    kept_out = [j for j, s in enumerate(out_shape) if s != 1]
    kept_in = [j for j, s in enumerate(in_shape) if s != 1]
    if [out_shape[j] for j in kept_out] == [in_shape[j] for j in kept_in]:
        out = ["0"] * len(in_shape)
        for i, j in zip(kept_in, kept_out):
            out[i] = idx[j]
        return tuple(out)
    flat = " + ".join(f"{idx[j]} * {prod(out_shape[j + 1:])}" for j in range(len(out_shape))) or "0"
    return tuple(f"(({flat}) // {prod(in_shape[i + 1:])}) % {size}" for i, size in enumerate(in_shape))


def _getitem(em, node, idx):
    in_shape = em.nodes[node.args[0]].shape
    items = node.params[0] if isinstance(node.params[0], tuple) else (node.params[0],)
    explicit = sum(1 for i in items if i is not None and i is not Ellipsis)
    expanded = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([slice(None)] * (len(in_shape) - explicit))
        else:
            expanded.append(item)
    expanded.extend([slice(None)] * (len(in_shape) - sum(1 for i in expanded if i is not None)))
    out, d, j = [], 0, 0
    for item in expanded:
        if item is None:
            j += 1
        elif isinstance(item, slice):
            start, _, step = item.indices(in_shape[d])
            out.append(idx[j] if (start, step) == (0, 1) else f"({start} + {step} * {idx[j]})")
            d, j = d + 1, j + 1
        else:
            out.append(str(item % in_shape[d]))
            d += 1
    return tuple(out)


_VIEW_INDEX = {"permute": _permute, "expand": _expand, "view": _view, "getitem_view": _getitem}


# Note [Parallel threshold]: numba compiles a parallel kernel in ~3-7 s on a busy 2-core
# machine and a serial one in ~1 s; below this much work (loop trips) threads cannot pay
# for themselves, so small kernels are serial and compile fast.
PARALLEL_WORK = 1 << 16


def emit_kernel(graph, root: int, members) -> Kernel:
    """The numba source of the fused group ``members`` whose result is node ``root``."""
    em = _Emitter(graph, members)
    node = graph.nodes[root]
    shape = node.shape or (1,)
    idx = []
    for d, size in enumerate(shape):
        var = f"i{d}"
        em.line(f"for {var} in {'@LOOP@' if d == 0 else 'range'}({em.extent(size)}):")
        em.depth += 1
        idx.append(var)
    value, _ = em.emit(root, tuple(idx) if node.shape else ())
    em.line(f"out[{', '.join(idx)}] = {value}")
    parallel = prod(em.sizes) >= PARALLEL_WORK
    body = [line.replace("@LOOP@", "prange" if parallel else "range") for line in em.lines]
    args = ", ".join(["out", "sz"] + [f"a{k}" for k in range(len(em.inputs))])
    # Reassociation lets LLVM vectorise the accumulations of reductions (numpy's own sums are
    # pairwise and vectorised); NaN and infinity semantics stay exact.
    flags = 'fastmath={"reassoc"}, cache=True'
    decorator = f"@njit(parallel=True, {flags})" if parallel else f"@njit({flags})"
    header = [f"# {node.describe()}", decorator, f"def kernel({args}):"]
    return Kernel("\n".join(header + body) + "\n", em.inputs, tuple(em.sizes), root)
