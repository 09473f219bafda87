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

from . import scalar_code, window_code
from .fusion import REDUCTIONS, ROWWISE
from .symbolic import Sym

__all__ = ["emit_kernel", "Kernel", "column_reduction", "reduce_dims"]


class Kernel:
    """The source of one fused group and what to call it with."""

    def __init__(self, source, inputs, sizes, root, out_shape, out_order=None, in_orders=None, bounds=None,
                 parallel=False) -> None:
        self.source, self.inputs, self.sizes, self.root = source, inputs, sizes, root
        self.parallel = parallel  # whether the outer loop is a ``prange`` (numba's threads run it)
        self.bounds = bounds  # positions in ``sizes`` of the split loop's first and end index
        self.out_shape = out_shape  # the shape ``out`` is allocated with (the root's, or its reduction's)
        self.out_order = out_order  # the root's axes in ``out``'s memory order; None: C order
        self.in_orders = in_orders or {}  # input position -> the axes order it is passed transposed by


class _Emitter:
    def __init__(self, graph, members, split_dim=None) -> None:
        self.nodes = graph.nodes
        self.split_dim = split_dim  # the output dim looped over a range passed in ``sz``
        self.bounds = None
        self.members = set(members)
        self.inputs: list[int] = []
        self.sizes: list[int] = []
        self.numbers: set[int] = set()  # positions in ``sizes`` that are numbers, not extents
        self.lines: list[str] = []
        self.depth = 1
        self.scopes: list[dict] = [{}]
        self.count = 0
        self.canon = _common_subexpressions(graph.nodes, members)
        self.reassoc = False  # a running sum, product, max or min over a runtime extent: Note [Fast-math flags]
        self.layouts = graph.layouts  # Note [Eager layouts] (layout.py)
        self.out_order = None  # set when ``out`` is written in an eager memory order
        self.in_orders: dict[int, tuple] = {}  # inputs passed with their axes in eager memory order

    # ------------------------------------------------------------ helpers
    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def extent(self, size: int) -> str:
        self.sizes.append(int(size))
        return f"sz[{len(self.sizes) - 1}]"

    def number(self, value: int) -> str:
        """A number passed in ``sz`` that is not a loop extent (not counted as work)."""
        self.numbers.add(len(self.sizes))
        return self.extent(value)

    def _memo(self, key):
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        return None

    # ------------------------------------------------------------ values
    def emit(self, n: int, idx: tuple) -> tuple[str, np.dtype]:
        """Code naming element ``idx`` of node ``n``, and its dtype."""
        key = (self.canon.get(n, n), idx)
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
        elif node.op.name in window_code.GATHERS:
            result = window_code.emit(self, node, idx)
        else:
            result = self._pointwise(node, idx)
        self.scopes[-1][key] = result
        return result

    def _load(self, n, idx):
        if n not in self.inputs:
            self.inputs.append(n)
        k = self.inputs.index(n)
        name = f"a{k}"
        order = self.layouts.get(n)
        if order is not None and list(order) != sorted(order):
            # passed as ``array.transpose(order)``: C-contiguous, which numba indexes fastest
            self.in_orders[k] = order
            idx = tuple(idx[d] for d in order)
        var = self.fresh("x")
        self.line(f"{var} = {name}[{', '.join(_unsigned(i) for i in idx) if idx else '0'}]")
        return var, self.nodes[n].dtype

    def _pointwise(self, node, idx):
        operands = [self.emit(a, _broadcast(self.nodes[a].shape, node.shape, idx)) for a in node.args]
        if node.via == "binary" and len(node.args) == 1:
            sized = isinstance(getattr(getattr(node, "template", None), "scalar", None), Sym)
            # a number computed from sizes (a mean's count) is read from ``sz``: Note [Dynamic sizes]
            operands.append((self.number(node.scalar) if sized else scalar_code.literal(node.scalar), None))
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
        loops, in_idx = reduction_loops(node, source.shape, idx, self.fresh)
        acc = self.fresh("acc")
        self.line(f"{acc} = {_INIT[name](node, source.dtype)}  # {node.describe()}")
        if name in ("argmin", "argmax"):
            self.line(f"{acc}_i = 0")
        template = getattr(source, "template", source).shape  # Sym where the size is dynamic
        dims = sorted(reduce_dims(node, len(source.shape))[0]) if source.shape else []  # 0-d: no loop
        loops, dims = _in_memory_order(loops, dims, self.layouts.get(node.args[0]))
        for (var, size), d in zip(loops, dims, strict=True):
            extent = self.extent(size)
            if size <= SMALL_EXTENT and not isinstance(template[d], Sym):
                extent = str(size)  # Note [Small reductions]
            else:
                self.reassoc = self.reassoc or name in _REASSOCIATED
            self.line(f"for {var} in range({extent}):")
            self.depth += 1
        self.scopes.append({})
        value, dtype = self.emit(node.args[0], tuple(in_idx))
        for text in _UPDATE[name](acc, value, loops[0][0] if loops else "0", dtype):
            self.line(text)
        self.scopes.pop()
        self.depth -= len(loops)
        if name in ("argmin", "argmax"):
            return f"{acc}_i", np.dtype(np.int64)
        return scalar_code.cast(acc, node.dtype), node.dtype


# Note [Unsigned indices]: numba wraps a negative index around (``a[-1]``), so every signed
# index costs a sign test, which LLVM removes for a bare loop variable but not for a computed
# one (``a[c, h * 1536 + w * 64 + n]``, a reshape's or a pooling window's index map): the test
# stopped the loop vectoriser, and a max pooling's window scan ran 5.5x slower (0.44 vs 0.079 ms
# for 64x16x12x12 windows, one process). The emitter's indices are never negative, so computed
# ones are passed as ``np.uint64``, which numba does not wrap.
def _unsigned(index: str) -> str:
    """A computed index expression as an unsigned one (Note [Unsigned indices])."""
    return index if index.isidentifier() or index.isdigit() else f"np.uint64({index})"


def _common_subexpressions(nodes, members) -> dict:
    """Each member mapped to the first member computing the same value (same op, operands and
    parameters), so that the emitter computes it once: a joint graph's backward repeats
    products such as ``grad * x`` once per use."""
    canon, first = {}, {}
    for n in sorted(members):
        node = nodes[n]
        key = (
            node.op.name,
            node.via,
            tuple(canon.get(a, a) for a in node.args),
            repr(node.params),
            repr(node.scalar),
            node.dtype,
            node.shape,
        )
        canon[n] = first.setdefault(key, n)
    return canon


# Note [Small reductions]: a reduction over a few elements of a static size (the k-means
# step's 2 coordinates and 8 means) has its extent written into the source, so LLVM
# unrolls it and vectorises more of the loop around it (the 20M-point k-means kernel 9%
# faster at load ~9, 17-27% for the kernel alone on 2M points). Extents stay in ``sz`` too,
# so the parallel-work estimate does not change; a dim that is symbolic keeps its ``sz``
# extent, so the source still does not change with dynamic sizes.
SMALL_EXTENT = 16


def reduction_loops(node, source_shape, idx, fresh):
    """The loops a reduction adds, ``[(var, extent)]``, and its source's index expressions:
    a fresh loop variable on each reduced dim, the output's index ``idx`` on the others."""
    dims, keepdim = reduce_dims(node, len(source_shape))
    loops, in_idx, out_pos = [], [], 0
    for d, extent in enumerate(source_shape):
        if d in dims:
            var = fresh("r")
            loops.append((var, extent))
            in_idx.append(var)
            out_pos += 1 if keepdim else 0
        else:
            in_idx.append(idx[out_pos])
            out_pos += 1
    return loops, in_idx


def _in_memory_order(loops, dims, order):
    """A reduction's ``loops`` (one per reduced dim in ``dims``) sorted by the source's eager
    memory ``order`` (Note [Eager layouts]), the innermost on the smallest stride."""
    if order is None or len(dims) < 2:
        return loops, dims
    pairs = sorted(zip(loops, dims, strict=True), key=lambda pair: order.index(pair[1]))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def reduce_dims(node, ndim):
    """``(dims, keepdim)`` of a reduction ``node`` over a source of ``ndim`` dims, the dims
    wrapped to be non-negative."""
    if node.op.name in ("argmin", "argmax"):
        dim, keepdim = node.params
        return {dim % max(ndim, 1)}, keepdim
    dims, keepdim = node.params[0], node.params[1]
    return {d % max(ndim, 1) for d in dims}, keepdim


# Note [Fast-math flags]: a kernel is compiled with numba's ``fastmath={"reassoc"}`` only when it
# accumulates a sum, product, maximum or minimum over a runtime extent (a long row sum, the row
# sum of a softmax): reassociation is what lets LLVM keep several partial sums in vector lanes,
# and numpy's own sums there are pairwise, in another order than the loop's anyway. Elsewhere
# no flag: every operation rounds as numpy's does, so that comparisons give numpy's answers on
# ties (the k-means step's argmin over distances). Contraction into fused multiply-adds is never
# enabled: ``fma(d1, d1, d0 * d0)`` and ``fma(d0, d0, d1 * d1)`` differ where numpy's two
# distances ``d0 * d0 + d1 * d1`` are equal, which moved the argmin of 7.7% of points placed
# at equal distance from two means. numpy's error model (x / 0 is inf, as in numpy) keeps the
# division-by-zero branch that would stop the loop vectoriser out of the loop body.
_REASSOCIATED = frozenset({"sum", "prod", "amax", "amin"})


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
    "amax": _extreme(+1),
    "amin": _extreme(-1),
    "argmax": _extreme(+1),
    "argmin": _extreme(-1),
    "all": lambda n, d: "True",
    "any": lambda n, d: "False",
}


# Note [First index]: an argmin/argmax starts from the dtype's extreme and index 0, and takes a
# later element only if it is strictly better or the first NaN, so the first element needs no
# test of its own: one equal to the extreme keeps index 0, as numpy's does. A ``r == 0 or``
# clause cost the vectorised k-means loop its blends (20.3 -> 12.4 ms on 2M points).
def _arg_update(op):
    def update(acc, v, r, dtype):
        return [
            f"if {v} {op} {acc} or ({v} != {v} and {acc} == {acc}):",
            f"    {acc} = {v}",
            f"    {acc}_i = {r}",
        ]

    return update


def _extreme_update(op, vector):
    def update(acc, v, r, dtype):
        if dtype is not None and dtype.name in ("float32", "float64"):  # vectorises (Note [Vector max] in vecmath.py)
            return [f"{acc} = {vector}({acc}, {v})"]
        return [f"if {v} {op} {acc} or {v} != {v}:", f"    {acc} = {v}"]

    return update


_UPDATE = {
    "sum": lambda acc, v, r, d: [f"{acc} += {v}"],
    "prod": lambda acc, v, r, d: [f"{acc} *= {v}"],
    "amax": _extreme_update(">", "fmaximum"),
    "amin": _extreme_update("<", "fminimum"),
    "argmax": _arg_update(">"),
    "argmin": _arg_update("<"),
    "all": lambda acc, v, r, d: [f"{acc} = {acc} and ({v} != 0)"],
    "any": lambda acc, v, r, d: [f"{acc} = {acc} or ({v} != 0)"],
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
    """A reshape's index map, group by group: runs of dims whose sizes multiply to the same
    count on both sides (a split or a merge of adjacent dims). Only a merge needs ``//`` and
    ``%``, and only for its own dims."""
    in_shape, out_shape = em.nodes[node.args[0]].shape, node.shape
    out, i, j = [], 0, 0
    while i < len(in_shape) or j < len(out_shape):
        gi, gj = [i], [j]
        if i == len(in_shape) or j == len(out_shape):  # trailing dims of size 1
            out.extend("0" for _ in range(i, len(in_shape)))
            break
        n_in, n_out = in_shape[i], out_shape[j]
        while n_in != n_out:
            if n_in < n_out:
                i += 1
                gi.append(i)
                n_in *= in_shape[i]
            else:
                j += 1
                gj.append(j)
                n_out *= out_shape[j]
        flat = " + ".join(f"{idx[k]} * {prod(out_shape[k + 1 : j + 1])}" for k in gj)
        if len(gi) == 1:
            out.append(f"({flat})" if len(gj) > 1 else idx[j])
        else:
            out.extend(f"(({flat}) // {prod(in_shape[k + 1 : i + 1])}) % {in_shape[k]}" for k in gi)
        i, j = i + 1, j + 1
    return tuple(out)


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
# for themselves, so small kernels are serial and compile fast. Each parallel call also
# wakes numba's workers: a ReLU over 128x512 float32 took 0.084 ms parallel vs 0.009 ms
# serial, 0.61 vs 0.22 ms at 1M elements (load average ~7), and in a compiled MLP train
# step, between our matmul pool's calls, its 65k-element kernels took 1-2.5 ms each.
PARALLEL_WORK = 1 << 20


# Note [Column reductions]: a reduction that keeps the source's last (contiguous) dim, such
# as a bias gradient ``g.sum(0)``, would read its source with a stride if its reduced dims
# were the inner loops. Instead the last dim is the innermost loop, accumulated row by row
# into a buffer as long as a row: a contiguous loop LLVM vectorises. The parallel loop is
# the outermost kept dim if there is one; otherwise the first reduced dim is cut into
# COLUMN_CHUNKS ranges, each with its own buffer, combined at the end, so no two threads
# write one accumulator.
COLUMN_CHUNKS = 4
_COLUMN_OPS = frozenset({"sum", "prod", "amax", "amin"})


def column_reduction(graph, root: int, members) -> int | None:
    """The reduction the group ``members`` of ``root`` computes in column form (Note [Column
    reductions]): ``root`` itself or a reshape of it, keeping its source's last dim; else None."""
    nodes, n = graph.nodes, root
    while nodes[n].op.name == "view" and nodes[n].args[0] in members:
        n = nodes[n].args[0]
    node = nodes[n]
    if node.op.name not in _COLUMN_OPS or prod(node.shape) != prod(nodes[root].shape):
        return None
    ndim = len(nodes[node.args[0]].shape)
    dims, _ = reduce_dims(node, ndim)
    return n if ndim >= 2 and dims and ndim - 1 not in dims else None


def _emit_column(em, node) -> None:
    """The loop nest of reduction ``node`` in column form, writing ``out`` in ``node``'s shape."""
    source = em.nodes[node.args[0]]
    ndim, name = len(source.shape), node.op.name
    dims, keepdim = reduce_dims(node, ndim)
    last = ndim - 1
    idx = {d: (f"r{d}" if d in dims else f"i{d}") for d in range(ndim)}
    idx[last] = "c"
    ext = {d: em.extent(source.shape[d]) for d in range(ndim)}
    outer = [d for d in range(last) if d not in dims]
    reduced = sorted(dims)
    init = _INIT[name](node, source.dtype)
    out_idx = ", ".join("0" if d in dims else idx[d] for d in range(ndim) if keepdim or d not in dims)
    chunked = not outer
    for k, d in enumerate(outer):
        em.line(f"for {idx[d]} in {'@LOOP@' if k == 0 else 'range'}({ext[d]}):")
        em.depth += 1
    if chunked:
        em.line(f"parts = np.full(({COLUMN_CHUNKS}, {ext[last]}), {init})  # {node.describe()}")
        em.line(f"for t in @LOOP@({COLUMN_CHUNKS}):")
        em.depth += 1
        first = reduced[0]
        em.line(
            f"for {idx[first]} in range(t * {ext[first]} // {COLUMN_CHUNKS}, "
            f"(t + 1) * {ext[first]} // {COLUMN_CHUNKS}):"
        )
        acc = "parts[t, c]"
    else:
        em.line(f"acc = np.full({ext[last]}, {init})  # {node.describe()}")
        first = None
        em.line(f"for {idx[reduced[0]]} in range({ext[reduced[0]]}):")
        acc = "acc[c]"
    em.depth += 1
    for d in reduced[1:]:
        em.line(f"for {idx[d]} in range({ext[d]}):")
        em.depth += 1
    em.line(f"for c in range({ext[last]}):")
    em.depth += 1
    em.scopes.append({})
    value, dtype = em.emit(node.args[0], tuple(idx[d] for d in range(ndim)))
    for text in _UPDATE[name](acc, value, "0", dtype):
        em.line(text)
    em.scopes.pop()
    em.depth -= 2 + len(reduced[1:]) + (1 if chunked else 0)
    em.line(f"for c in range({ext[last]}):")
    em.depth += 1
    if chunked:
        em.line("a = parts[0, c]")
        em.line(f"for t in range(1, {COLUMN_CHUNKS}):")
        em.lines.extend("    " * (em.depth + 1) + text for text in _UPDATE[name]("a", "parts[t, c]", "0", None))
        acc = "a"
    em.line(f"out[{out_idx}] = {scalar_code.cast(acc, node.dtype)}")


def emit_kernel(graph, root: int, members, split_dim: int | None = None) -> Kernel:
    """The numba source of the fused group ``members`` whose result is node ``root``.

    With ``split_dim``, the loop over that dim of the root runs from ``sz[lo]`` to ``sz[hi]``
    (``Kernel.bounds``), the kernel is serial and releases the GIL: each thread of a split
    region (Note [Split regions] in split_region.py) computes its slice of the whole arrays."""
    em = _Emitter(graph, members, split_dim)
    column = column_reduction(graph, root, members)
    if column is not None:
        _emit_column(em, graph.nodes[column])
        out_shape = graph.nodes[column].shape
    else:
        body = _unreshaped(graph, root, members)
        emit = _emit_rowwise if graph.nodes[body].op.name in ROWWISE else _emit_elements
        out_shape = emit(em, graph.nodes[body], body)
    node = graph.nodes[root]
    parallel = split_dim is None and prod(s for k, s in enumerate(em.sizes) if k not in em.numbers) >= PARALLEL_WORK
    body = [line.replace("@LOOP@", "prange" if parallel else "range") for line in _with_static_sizes(em)]
    args = ", ".join(["out", "sz"] + [f"a{k}" for k in range(len(em.inputs))])
    fastmath = 'fastmath={"reassoc"}, ' if em.reassoc else ""  # Note [Fast-math flags]
    nogil = "nogil=True, " if split_dim is not None else ""
    flags = f'{fastmath}{nogil}error_model="numpy", cache=True'
    decorator = f"@njit(parallel=True, {flags})" if parallel else f"@njit({flags})"
    header = [f"# {node.describe()}", decorator, f"def kernel({args}):"]
    source = "\n".join(header + body) + "\n"
    return Kernel(
        source, em.inputs, tuple(em.sizes), root, out_shape or (1,), em.out_order, em.in_orders, em.bounds, parallel
    )


def _with_static_sizes(em) -> list[str]:
    """The kernel's lines with each input's static sizes stated (``assume_equal``, Note [Static
    shapes] in vecmath.py) first thing in the outer loop's body: numba outlines a ``prange``'s
    body into a function of its own, which knows nothing stated outside it. Dim 0 is left out
    (numba's address of an element of a C-contiguous array does not use it), and so are
    dynamic dims."""
    states = []
    for k, n in enumerate(em.inputs):
        node = em.nodes[n]
        sizes = list(zip(node.shape, getattr(node, "template", node).shape, strict=True))
        order = em.in_orders.get(k)  # passed transposed: its dims in that order
        for d, (size, template) in enumerate(sizes if order is None else [sizes[j] for j in order]):
            if d and not isinstance(template, Sym):
                states.append(f"assume_equal(a{k}.shape[{d}], {size})")
    at = next((j + 1 for j, line in enumerate(em.lines) if "@LOOP@(" in line), 0)
    indent = len(em.lines[at - 1]) - len(em.lines[at - 1].lstrip()) + 4 if at else 4
    return em.lines[:at] + [" " * indent + text for text in states] + em.lines[at:]


def _unreshaped(graph, root: int, members) -> int:
    """The node under the reshapes (``view``) that end the group: ``out`` is allocated
    contiguous, so the kernel writes that node's elements and the runner reshapes for free,
    where index maps through the reshapes would divide per element."""
    nodes, n = graph.nodes, root
    while nodes[n].op.name == "view" and nodes[n].args[0] in members and nodes[nodes[n].args[0]].kind == "call":
        n = nodes[n].args[0]
    return n


def _emit_elements(em, node, root) -> tuple:
    """One loop per dim of ``node``'s output, the element's expression in the innermost. Dims of
    size 1 get no loop, so the parallel loop is the first one with work to share.

    Note [Transposed writes]: when ``node`` permutes a value the kernel computes (a conv
    gradient brought to channels-first), looping in the permuted order would read every
    input of that value across its rows, a cache line per element. The loops follow the
    value's own order instead, and the permutation moves to the writes into ``out``.

    A value whose eager memory order is known (Note [Eager layouts]) is looped in that order
    and ``out`` is allocated in it: ``out`` holds the axes in that order, C-contiguous."""
    shape = node.shape or (1,)
    order = list(range(len(shape)))
    eager = em.layouts.get(root)
    if eager is not None:
        order = list(eager)
        em.out_order = None if order == sorted(order) else tuple(order)
    elif node.op.name == "permute" and node.args[0] in em.members and em.nodes[node.args[0]].kind == "call":
        dims = [d % len(shape) for d in node.params[0]]
        order = [dims.index(k) for k in range(len(shape))]  # out dim looped at each depth
    idx, looped = ["0"] * len(shape), 0
    for j in order:
        if shape[j] == 1 and len(shape) > 1:
            continue
        var = f"i{j}"
        if j == em.split_dim:
            lo, hi = em.number(0), em.number(shape[j])
            em.bounds = (len(em.sizes) - 2, len(em.sizes) - 1)
            # Unsigned bounds: LLVM cannot tell a start passed in ``sz`` is not negative, and a
            # signed index that may be keeps numba's wrap-around test in the loop, which stopped
            # the vectoriser (a GELU over half a 256x1024 array: 122 vs 62 us).
            em.line(f"for {var} in range(np.uint64({lo}), np.uint64({hi})):")
        else:
            em.line(f"for {var} in {'@LOOP@' if looped == 0 else 'range'}({em.extent(shape[j])}):")
        em.depth += 1
        looped += 1
        idx[j] = var
    value, _ = em.emit(root, tuple(idx) if node.shape else ())
    if em.out_order is None:
        em.line(f"out[{', '.join(idx)}] = {value}")
        return shape
    em.line(f"out[{', '.join(idx[j] for j in order)}] = {value}")
    return tuple(shape[j] for j in order)


# Note [Row-wise ops]: softmax and log_softmax are the root of one kernel with the pointwise
# work before them inlined. For each row (every index but ``dim``) a first loop computes the
# input's elements into ``out`` and their maximum, a second sums the exps of the shifted
# values (softmax stores them), a third normalises, as the ops' eager kernels do: the inputs
# are read once and the row stays in cache between the loops. The sum is in the op's dtype,
# as torch's CPU kernel sums: a float64 accumulator of float32 exps stops the vectoriser
# (2x slower), and LLVM keeps 64 float32 partial sums, so a 64k-element row adds ~1k terms
# into each. A row whose maximum is NaN or infinite gives NaN, as eagerly.
def _emit_rowwise(em, node, root) -> tuple:
    """The loop nest of a softmax or log_softmax ``node`` writing ``out`` (Note [Row-wise ops])."""
    shape, (dim,), dtype = node.shape, node.params, node.dtype
    idx, looped = ["0"] * len(shape), 0
    for j, size in enumerate(shape):
        if j == dim or size == 1:
            continue
        em.line(f"for i{j} in {'@LOOP@' if looped == 0 else 'range'}({em.extent(size)}):")
        em.depth += 1
        looped += 1
        idx[j] = f"i{j}"
    idx[dim] = "r"
    at, n = f"out[{', '.join(idx)}]", em.extent(shape[dim])
    em.line(f"m = np.{dtype.name}(-np.inf)  # {node.describe()}")
    em.line(f"for r in range({n}):")
    em.depth += 1
    em.scopes.append({})
    value, _ = em.emit(node.args[0], tuple(idx))
    em.scopes.pop()
    em.line(f"v = {scalar_code.cast(value, dtype)}")
    em.line(f"{at} = v")
    em.line("m = fmaximum(m, v)")
    em.depth -= 1
    em.line(f"s = np.{dtype.name}(0)")
    em.reassoc = True
    em.line(f"for r in range({n}):")
    shifted = scalar_code.exp(dtype, f"{at} - m")
    if node.op.name == "softmax":
        em.lines.extend("    " * (em.depth + 1) + text for text in (f"e = {shifted}", f"{at} = e", "s += e"))
        em.line(f"for r in range({n}):")
        em.line(f"    {at} = {at} / s")
    else:
        em.line(f"    s += {shifted}")
        em.line("lse = np.log(s)")
        em.line(f"for r in range({n}):")
        em.line(f"    {at} = ({at} - m) - lse")
    return shape
