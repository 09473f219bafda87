"""GPU code generation: each fused group as a CuPy ``RawKernel`` of generated CUDA C.

The group is the same one the CPU compiles with numba (``fusion.py``): one thread per element
of the root's output, which it computes from the group's input arrays; reductions are loops
inside the thread, views and broadcasts are index arithmetic (the index maps of
``emitter.py``). Every extent (the output's dims, each reduction's, each input's) is an
``i64`` argument, so one kernel serves every size whose dims keep their 0/1 pattern.

``emit_cuda(graph, root, members)`` gives the source; ``FusedKernel`` makes it through the
device's backend (``Backend.raw_kernel``: ``cupy.RawKernel``, compiled by NVRTC once per
process and source) and launches it on the output's device with inputs made contiguous.
A group the generator does not take (a dtype without a C type here, ``pow`` of integers, a
long reduction into few outputs) runs its nodes through the dispatcher instead.
``TENSOR_LOGS=output_code`` prints the C.

The CUDA C stays in a small subset (functional casts, the ternary, ``&& ||``, the math
functions of CUDA's C++ overloads) that the CuPy stand-in of the test suite parses and runs
(``tests/_cupy_standin/cupy/_raw_kernel.py``); its README says what that proves.
"""

from __future__ import annotations

import math
import sys
from math import prod

import numpy as np

from .. import _dispatch
from . import scalar_code
from .config import config
from .emitter import _VIEW_INDEX, _broadcast, reduction_loops
from .fusion import REDUCTIONS
from .runner import run_node
from .symbolic import Sym

__all__ = ["FusedKernel", "emit_cuda", "CudaKernel", "BLOCK", "FEW_THREADS", "LONG_LOOP"]

BLOCK = 256  # threads per block
# One thread per output element cannot spread a long reduction into few outputs (a full sum
# would be one thread over every element): such a group runs through the dispatcher, where
# CuPy's reductions use the whole GPU. A block-per-output reduction kernel would fuse them too.
FEW_THREADS, LONG_LOOP = 1 << 12, 1 << 12
_NAME = "tensor_fused"
_CTYPES = {
    np.dtype(np.float64): "double",
    np.dtype(np.float32): "float",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "int",
    np.dtype(np.bool_): "bool",
}
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


class CudaKernel:
    """The CUDA C of one fused group and what to launch it with."""

    def __init__(self, source, inputs, sizes, root) -> None:
        self.source, self.inputs, self.sizes, self.root = source, inputs, sizes, root


def _ctype(dtype) -> str:
    name = _CTYPES.get(np.dtype(dtype))
    if name is None:
        raise NotImplementedError(f"no CUDA C type for {np.dtype(dtype)} in generated kernels")
    return name


def _cast(code: str, dtype) -> str:
    if np.dtype(dtype).kind == "b":
        return f"(({code}) != 0)"
    return f"{_ctype(dtype)}({code})"


def _number(value) -> str:
    value = float(value)
    if math.isnan(value):
        return "(0.0 / 0.0)"
    if math.isinf(value):
        return "(1.0 / 0.0)" if value > 0 else "(-1.0 / 0.0)"
    return repr(value)


def _k(node, value) -> str:
    """A constant in the op's own dtype (a float32 op stays float32, as numpy's does)."""
    if node.dtype.kind == "f":
        return f"{_ctype(node.dtype)}({_number(value)})"
    return repr(int(value))


def _maximum(a: str, b: str) -> str:
    return f"(({a}) != ({a}) || ({a}) > ({b}) ? ({a}) : ({b}))"  # NaN wins, as torch.maximum


def _minimum(a: str, b: str) -> str:
    return f"(({a}) != ({a}) || ({a}) < ({b}) ? ({a}) : ({b}))"


def _clamp(node, x):
    low, high = node.params
    code = x[0]
    if low is not None:
        code = _maximum(code, _k(node, low))
    if high is not None:
        code = _minimum(code, _k(node, high))
    return code


def _clamp_backward(node, x):
    """clamp's gradient ``x[0]`` where ``low <= x[1] <= high`` (NaN: 0), else 0."""
    inside = [f"({x[1]}) {op} {_k(node, bound)}" for op, bound in ((">=", node.params[0]), ("<=", node.params[1]))
              if bound is not None]
    return f"(({' && '.join(inside)}) ? ({x[0]}) : {_k(node, 0)})"


def _gelu(node, x):
    a, one, half = x[0], _k(node, 1.0), _k(node, 0.5)
    if node.params[0] == "tanh":
        inner = f"{_k(node, _SQRT_2_OVER_PI)} * (({a}) + {_k(node, 0.044715)} * ({a}) * ({a}) * ({a}))"
        return f"({half} * ({a}) * ({one} + tanh({inner})))"
    return f"({half} * ({a}) * ({one} + erf(({a}) * {_k(node, 1 / math.sqrt(2.0))})))"


def _pow(node, x):
    if node.dtype.kind != "f":
        raise NotImplementedError("integer pow in generated CUDA C")
    return f"pow({x[0]}, {x[1]})"


def _abs(node, x):
    return f"fabs({x[0]})" if node.dtype.kind == "f" else f"(({x[0]}) < 0 ? -({x[0]}) : ({x[0]}))"


def _sign(node, x):
    a, zero, one = x[0], _k(node, 0), _k(node, 1)
    return f"(({a}) > {zero} ? {one} : (({a}) < {zero} ? -{one} : ({a})))"


_OPERATORS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "div": "/",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
}
_MATH = {
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "sin": "sin",
    "cos": "cos",
    "tanh": "tanh",
    "log1p": "log1p",
    "expm1": "expm1",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "round": "rint",
    "erf": "erf",
    "isnan": "isnan",
    "isinf": "isinf",
    "isfinite": "isfinite",
}
_SPECIAL = {
    "pow": _pow,
    "abs": _abs,
    "sign": _sign,
    "clamp": _clamp,
    "hardtanh": _clamp,
    "threshold_backward": lambda n, x: f"(!(({x[1]}) <= {_k(n, 0)}) ? ({x[0]}) : {_k(n, 0)})",
    "clamp_backward": _clamp_backward,
    "hardtanh_backward": lambda n, x: (
        f"(!(({x[1]}) <= {_k(n, n.params[0])} || ({x[1]}) >= {_k(n, n.params[1])}) ? ({x[0]}) : {_k(n, 0)})"
    ),
    "gelu": _gelu,
    "maximum": lambda n, x: _maximum(x[0], x[1]),
    "minimum": lambda n, x: _minimum(x[0], x[1]),
    "neg": lambda n, x: f"(-({x[0]}))",
    "rsqrt": lambda n, x: f"({_k(n, 1.0)} / sqrt({x[0]}))",
    "reciprocal": lambda n, x: f"({_k(n, 1.0)} / ({x[0]}))",
    "sigmoid": lambda n, x: f"({_k(n, 1.0)} / ({_k(n, 1.0)} + exp(-({x[0]}))))",
    "silu": lambda n, x: f"(({x[0]}) / ({_k(n, 1.0)} + exp(-({x[0]}))))",
    "relu": lambda n, x: f"(({x[0]}) > {_k(n, 0)} || ({x[0]}) != ({x[0]}) ? ({x[0]}) : {_k(n, 0)})",
    "leaky_relu": lambda n, x: f"(({x[0]}) > {_k(n, 0)} ? ({x[0]}) : ({x[0]}) * {_k(n, n.params[0])})",
    "elu": lambda n, x: f"(({x[0]}) > {_k(n, 0)} ? ({x[0]}) : {_k(n, n.params[0])} * expm1({x[0]}))",
    "logical_and": lambda n, x: f"(({x[0]}) != 0 && ({x[1]}) != 0)",
    "logical_or": lambda n, x: f"(({x[0]}) != 0 || ({x[1]}) != 0)",
    "logical_xor": lambda n, x: f"((({x[0]}) != 0) != (({x[1]}) != 0))",
    "logical_not": lambda n, x: f"(({x[0]}) == 0)",
    "bitwise_not": lambda n, x: f"(!({x[0]}))" if n.dtype.kind == "b" else f"(~({x[0]}))",
    "where": lambda n, x: f"(({x[0]}) ? ({x[1]}) : ({x[2]}))",
    "clone": lambda n, x: x[0],
    "contiguous": lambda n, x: x[0],
    "to_dtype": lambda n, x: x[0],
}


def _expression(node, x: list[str]) -> str:
    name = node.op.name
    if name in _OPERATORS:
        return f"(({x[0]}) {_OPERATORS[name]} ({x[1]}))"
    if name in _MATH:
        return f"{_MATH[name]}({x[0]})"
    if name in _SPECIAL:
        return _SPECIAL[name](node, x)
    raise NotImplementedError(f"no CUDA C formula for {name}")


class _CudaEmitter:
    def __init__(self, graph, members) -> None:
        self.nodes = graph.nodes
        self.members = set(members)
        self.inputs: list[int] = []
        self.sizes: list[int] = []
        self.lines: list[str] = []
        self.depth = 1
        self.scopes: list[dict] = [{}]
        self.count = 0
        self.loop_work = 1  # elements one thread reads in its reduction loops (an upper bound)

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def size(self, value: int) -> str:
        self.sizes.append(int(value))
        return f"s{len(self.sizes) - 1}"

    def emit(self, n: int, idx: tuple) -> tuple[str, np.dtype]:
        """A C variable holding element ``idx`` of node ``n``, and its dtype."""
        key = (n, idx)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        node = self.nodes[n]
        if n not in self.members:
            result = self._load(n, idx)
        elif node.op.name in REDUCTIONS:
            result = self._reduce(node, idx)
        elif node.op.name in _VIEW_INDEX:
            mapped = _VIEW_INDEX[node.op.name](self, node, idx)
            return self.emit(node.args[0], tuple(i.replace("//", "/") for i in mapped))
        else:
            result = self._pointwise(node, idx)
        self.scopes[-1][key] = result
        return result

    def _load(self, n, idx):
        if n not in self.inputs:
            self.inputs.append(n)
        shape = self.nodes[n].shape
        offset = idx[0] if idx else "0"
        for d in range(1, len(shape)):
            offset = f"({offset}) * {self.size(shape[d])} + {idx[d]}"
        var, dtype = self.fresh("x"), self.nodes[n].dtype
        self.line(f"{_ctype(dtype)} {var} = a{self.inputs.index(n)}[{offset}];")
        return var, dtype

    def _pointwise(self, node, idx):
        operands = [self.emit(a, _broadcast(self.nodes[a].shape, node.shape, idx)) for a in node.args]
        if node.via == "binary" and len(node.args) == 1:
            operands.append((self._scalar(node), None))
        dtypes = [d for _, d in operands if d is not None]
        ctype = scalar_code.compute_dtype(node, dtypes or [node.dtype])
        codes = [c if ctype.kind == "b" else _cast(c, ctype) for c, _ in operands]
        if node.op.name == "where":
            codes[0] = operands[0][0]
        var = self.fresh("v")
        self.line(f"{_ctype(node.dtype)} {var} = {_cast(_expression(node, codes), node.dtype)};  // {node.describe()}")
        return var, node.dtype

    def _scalar(self, node) -> str:
        """A binary op's Python number; one computed from sizes (Note [Dynamic sizes]) is an
        argument, so the kernel's source does not change with it."""
        template = getattr(node, "template", None)
        if template is not None and isinstance(template.scalar, Sym):
            return self.size(node.scalar)
        if isinstance(node.scalar, bool):
            return "true" if node.scalar else "false"
        return _number(node.scalar) if isinstance(node.scalar, float) else repr(node.scalar)

    def _reduce(self, node, idx):
        name = node.op.name
        source = self.nodes[node.args[0]]
        loops, in_idx = reduction_loops(node, source.shape, idx, self.fresh)
        acc = self.fresh("acc")
        acc_type = (
            np.dtype(np.float64)
            if name in ("sum", "prod") and node.dtype.kind == "f"
            else (source.dtype if name in ("amax", "amin", "argmax", "argmin") else node.dtype)
        )
        init = {"prod": "1", "all": "true", "any": "false"}.get(name, "0")
        self.line(f"{_ctype(acc_type)} {acc} = {_ctype(acc_type)}({init});  // {node.describe()}")
        if name in ("argmin", "argmax"):
            self.line(f"i64 {acc}_i = 0;")
        for var, extent in loops:
            self.loop_work *= max(int(extent), 1)
            self.line(f"for (i64 {var} = 0; {var} < {self.size(extent)}; ++{var}) {{")
            self.depth += 1
        self.scopes.append({})
        value, _ = self.emit(node.args[0], tuple(in_idx))
        first = " && ".join(f"{v} == 0" for v, _ in loops) or "true"
        if name == "sum":
            self.line(f"{acc} += {_ctype(acc_type)}({value});")
        elif name == "prod":
            self.line(f"{acc} *= {_ctype(acc_type)}({value});")
        elif name in ("all", "any"):
            self.line(f"{acc} = {acc} {'&&' if name == 'all' else '||'} ({value}) != 0;")
        else:
            better = ">" if name in ("amax", "argmax") else "<"
            nan = f"({value}) != ({value})" + (f" && {acc} == {acc}" if name.startswith("arg") else "")
            self.line(f"if ({first} || ({value}) {better} {acc} || ({nan})) {{")
            self.line(f"    {acc} = {value};")
            if name.startswith("arg"):
                self.line(f"    {acc}_i = {loops[0][0] if loops else '0'};")
            self.line("}")
        self.scopes.pop()
        for _ in loops:
            self.depth -= 1
            self.line("}")
        if name in ("argmin", "argmax"):
            return f"{acc}_i", np.dtype(np.int64)
        return _cast(acc, node.dtype), node.dtype


def emit_cuda(graph, root: int, members) -> CudaKernel:
    """The CUDA C of the fused group ``members`` whose result is node ``root``.

    Raises:
        NotImplementedError: for a dtype or op the generator does not take.
    """
    em = _CudaEmitter(graph, members)
    node = graph.nodes[root]
    shape = node.shape or (1,)
    extents = [em.size(s) for s in shape]
    rest = "i"
    for d in range(len(shape) - 1, 0, -1):
        em.line(f"i64 i{d} = {rest} % {extents[d]};")
        em.line(f"i64 q{d} = {rest} / {extents[d]};")
        rest = f"q{d}"
    em.line(f"i64 i0 = {rest};")
    idx = tuple(f"i{d}" for d in range(len(shape)))
    value, _ = em.emit(root, idx if node.shape else ())
    em.line(f"out[i] = {value};")
    threads = prod(shape)
    if threads < FEW_THREADS and em.loop_work > LONG_LOOP:
        raise NotImplementedError(
            f"{threads} threads would each loop over {em.loop_work} elements: CuPy's own reductions are parallel"
        )
    params = [f"{_ctype(node.dtype)}* out"]
    params += [f"const {_ctype(graph.nodes[n].dtype)}* a{k}" for k, n in enumerate(em.inputs)]
    params += ["i64 n"] + [f"i64 s{k}" for k in range(len(em.sizes))]
    source = (
        "\n".join(
            [
                f"// {node.describe()}",
                "typedef long long i64;",
                f'extern "C" __global__ void {_NAME}({", ".join(params)}) {{',
                "    i64 i = i64(blockIdx.x) * i64(blockDim.x) + i64(threadIdx.x);",
                "    if (i >= n) return;",
                *em.lines,
                "}",
            ]
        )
        + "\n"
    )
    return CudaKernel(source, em.inputs, tuple(em.sizes), root)


class FusedKernel:
    """Runs one fused group on its device: reads its inputs from ``env``, writes its root's value."""

    def __init__(self, graph, root: int, members) -> None:
        node = graph.nodes[root]
        self.root, self.shape, self.dtype, self.device = root, node.shape, node.dtype, node.device
        self.members = [graph.nodes[m] for m in members]
        try:
            self.spec = emit_cuda(graph, root, members)
            self.source = self.spec.source
        except NotImplementedError as why:
            self.spec, self.source = None, f"// %{root} runs through the dispatcher: {why}\n"
        self._printed = False

    def __call__(self, env) -> None:
        if config.output_code and not self._printed:
            print(f"// tensor.compile output_code (CUDA kernel for %{self.root}):\n{self.source}", file=sys.stderr)
            self._printed = True
        if self.spec is None:
            for node in self.members:
                run_node(node, env, ())
            return
        backend, index = self.device.backend, self.device.index
        kernel = backend.raw_kernel(self.source, _NAME)
        with backend.device_guard(index):
            arrays = [backend.xp.ascontiguousarray(env[i]._data) for i in self.spec.inputs]
            out = backend.xp.empty(self.shape or (1,), self.dtype)
        n = prod(self.shape or (1,))
        grid = (max(1, -(-n // BLOCK)),)
        sizes = [np.int64(s) for s in self.spec.sizes]
        backend.launch(index, kernel, grid, (BLOCK,), (out, *arrays, np.int64(n), *sizes))
        env[self.root] = _dispatch.make(out.reshape(self.shape), self.device)
