"""``cupy.RawKernel`` for the stand-in: the CUDA C of one-thread-per-element kernels, parsed and
run with numpy, one lane per thread; launches counted.

A real RawKernel is compiled by NVRTC. Here the source must be C of the following shape, which
is all that the kernels ``tensor.compile`` generates use (anything else is refused, so a kernel
that runs here uses no C this does not model):

* before the kernel: ``//`` comments and ``typedef long long i64;``;
* ``extern "C" __global__ void NAME(T* out, const T* a0, ..., i64 n, i64 s0, ...) {``;
* first ``i64 i = i64(blockIdx.x) * i64(blockDim.x) + i64(threadIdx.x);`` and
  ``if (i >= n) return;``, then one statement per line: ``T x = e;``, ``x = e;``, ``x += e;``
  (``-=``, ``*=``), ``p[e] = e;`` (a store through a non-const pointer), ``for (i64 r = 0; r < e;
  ++r) {``, ``if (e) {`` and ``}``;
* expressions with C's operators (ternary, ``|| && | ^ & == != < <= > >= + - * / %``, unary
  ``- ! ~``), int and floating literals (``f``/``LL`` suffixes), loads ``p[e]``, functional casts
  ``double(e) float(e) int(e) i64(e) bool(e)``, the math functions in ``_MATH`` and ``pow``.

Every lane (thread ``i < n`` of ``grid * block``) runs the statements together: values are numpy
arrays over the lanes, ``if`` and the ternary, ``&&``, ``||`` mask the lanes they skip (so a
skipped load is not read), and C's types are kept: the usual arithmetic conversions (``int``
with ``float`` is ``float``, ``float`` with a ``double`` literal is ``double``), integer ``/``
and ``%`` truncating toward zero, a stored or declared value converted to its type. Loop bounds
must be the same in every lane. Stricter than a GPU: a load or store outside its array raises
IndexError (a GPU reads garbage or faults), a pointer argument must be a C-contiguous device
array of the parameter's type and a scalar argument a numpy scalar of its type (CuPy passes raw
bytes and does not check). Each call is one launch (``launches()``).
"""

from __future__ import annotations

import math
import re
import threading

import numpy as np

from . import _kernels, _ndarray

__all__ = ["RawKernel", "launches"]

_TYPES = {"double": np.float64, "float": np.float32, "i64": np.int64, "int": np.int32, "bool": np.bool_}
_erf = np.vectorize(math.erf, otypes=[np.float64])
_MATH = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "rint": np.rint,
    "fabs": np.abs,
    "erf": lambda x: _erf(x).astype(x.dtype),
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
}
_PREDICATES = {"isnan", "isinf", "isfinite"}
_TOKEN = re.compile(
    r"\s*(?:(\d+\.\d*(?:[eE][-+]?\d+)?f?|\d+[eE][-+]?\d+f?|\d+(?:LL)?)|([A-Za-z_]\w*)|"
    r"(\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>!~?:()\[\],&|^]))"
)
_BINARY = {
    "||": 4,
    "&&": 5,
    "|": 6,
    "^": 7,
    "&": 8,
    "==": 9,
    "!=": 9,
    "<": 10,
    "<=": 10,
    ">": 10,
    ">=": 10,
    "+": 12,
    "-": 12,
    "*": 13,
    "/": 13,
    "%": 13,
}
_SIGNATURE = re.compile(r'^extern "C" __global__ void (\w+)\((.*)\) \{$')
_PARAM = re.compile(r"^(const )?(double|float|i64|int|bool)(\*)? (\w+)$")
_THREAD = "i64 i = i64(blockIdx.x) * i64(blockDim.x) + i64(threadIdx.x);"
_lock = threading.Lock()
_launches = [0]


def launches() -> int:
    """How many RawKernel launches this process has made so far."""
    return _launches[0]


class _Refused(ValueError):
    pass


# ------------------------------------------------------------ expressions


def _tokens(text: str) -> list:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _Refused(f"C the stand-in does not model near {text[pos : pos + 20]!r}")
        out.append(m.group(m.lastindex) if m.lastindex != 1 else ("num", m.group(1)))
        pos = m.end()
    return out


class _Parser:
    """C expressions as nested tuples, by precedence climbing."""

    def __init__(self, text: str) -> None:
        self.toks, self.pos, self.text = _tokens(text), 0, text

    def peek(self):
        return self.toks[self.pos] if self.pos < len(self.toks) else None

    def take(self, expected=None):
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise _Refused(f"C the stand-in does not model: expected {expected!r} in {self.text!r}")
        self.pos += 1
        return tok

    def whole(self):
        tree = self.expr(0)
        if self.peek() is not None:
            raise _Refused(f"C the stand-in does not model: trailing {self.peek()!r} in {self.text!r}")
        return tree

    def expr(self, min_prec: int):
        left = self.unary()
        while True:
            tok = self.peek()
            if tok == "?" and min_prec <= 3:
                self.take()
                then = self.expr(0)
                self.take(":")
                left = ("?", left, then, self.expr(3))
                continue
            prec = _BINARY.get(tok) if isinstance(tok, str) else None
            if prec is None or prec < min_prec:
                return left
            self.take()
            left = (tok, left, self.expr(prec + 1))

    def unary(self):
        tok = self.take()
        if tok in ("-", "!", "~"):
            return ("u" + tok, self.unary())
        if tok == "(":
            inner = self.expr(0)
            self.take(")")
            return self.postfix(inner)
        if isinstance(tok, tuple):
            return ("num", tok[1])
        if not isinstance(tok, str) or not re.fullmatch(r"[A-Za-z_]\w*", tok):
            raise _Refused(f"C the stand-in does not model {tok!r} in {self.text!r}")
        if self.peek() == "(":
            self.take()
            args = []
            while self.peek() != ")":
                args.append(self.expr(0))
                if self.peek() == ",":
                    self.take()
            self.take(")")
            if tok not in _TYPES and tok not in _MATH and tok != "pow":
                raise _Refused(f"function {tok!r}: the stand-in does not model it (only {sorted(_MATH)}, pow, casts)")
            return ("call", tok, args)
        return self.postfix(("name", tok))

    def postfix(self, node):
        while self.peek() == "[":
            self.take()
            index = self.expr(0)
            self.take("]")
            node = ("load", node, index)
        return node


def _literal(text: str):
    if text.endswith("LL"):
        return np.int64(int(text[:-2]))
    if text.endswith("f"):
        return np.float32(float(text[:-1]))
    if any(c in text for c in ".eE"):
        return np.float64(float(text))
    value = int(text)
    return np.int32(value) if value <= np.iinfo(np.int32).max else np.int64(value)


def _common(a, b) -> np.dtype:
    """C's usual arithmetic conversions for the types we model."""
    ta, tb = np.asarray(a).dtype, np.asarray(b).dtype
    if ta.kind == "f" or tb.kind == "f":
        return np.dtype(np.float64) if np.float64 in (ta, tb) else np.dtype(np.float32)
    return np.dtype(np.int64) if np.int64 in (ta, tb) else np.dtype(np.int32)


# ------------------------------------------------------------ running


class _Lanes:
    """The state of one launch: variables per lane and the pointer arguments."""

    def __init__(self, pointers: dict, scalars: dict, lanes: int) -> None:
        self.pointers, self.lanes = pointers, lanes
        self.scopes = [dict(scalars)]
        self.types = [{k: np.asarray(v).dtype for k, v in scalars.items()}]

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise _Refused(f"undeclared name {name!r}")

    def type_of(self, name) -> np.dtype:
        for scope, types in zip(reversed(self.scopes), reversed(self.types)):
            if name in scope:
                return types[name]
        raise _Refused(f"assignment to undeclared {name!r}")

    def set(self, name, value, mask) -> None:
        for scope in reversed(self.scopes):
            if name in scope:
                old = np.broadcast_to(scope[name], (self.lanes,))
                scope[name] = np.where(mask, np.broadcast_to(value, (self.lanes,)), old)
                return
        raise _Refused(f"assignment to undeclared {name!r}")

    def declare(self, name, ctype, value) -> None:
        if name in self.scopes[-1] or name in self.pointers:
            raise _Refused(f"{name!r} is declared twice in one block")
        self.scopes[-1][name] = np.broadcast_to(np.asarray(value).astype(ctype), (self.lanes,))
        self.types[-1][name] = np.dtype(ctype)

    def value(self, node, mask):
        kind = node[0]
        if kind == "num":
            return _literal(node[1])
        if kind == "name":
            if node[1] in ("true", "false"):
                return np.bool_(node[1] == "true")
            if node[1] in self.pointers:
                raise _Refused(f"pointer {node[1]!r} used as a value")
            return self.lookup(node[1])
        if kind == "load":
            return self._load(node, mask)
        if kind == "call":
            return self._call(node[1], [self.value(a, mask) for a in node[2]])
        if kind == "?":
            cond = np.broadcast_to(self.value(node[1], mask) != 0, (self.lanes,))
            a, b = self.value(node[2], mask & cond), self.value(node[3], mask & ~cond)
            return np.where(cond, a, b).astype(
                _common(a, b) if np.asarray(a).dtype != np.asarray(b).dtype else np.asarray(a).dtype
            )
        if kind == "u-":
            return -self.value(node[1], mask)
        if kind == "u!":
            return self.value(node[1], mask) == 0
        if kind == "u~":
            return ~self.value(node[1], mask)
        op = kind
        left = self.value(node[1], mask)
        if op in ("&&", "||"):
            lb = np.broadcast_to(left != 0, (self.lanes,))
            right = self.value(node[2], mask & (lb if op == "&&" else ~lb)) != 0
            return (lb & right) if op == "&&" else (lb | right)
        right = self.value(node[2], mask)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            ct = _common(left, right)
            a, b = np.asarray(left).astype(ct), np.asarray(right).astype(ct)
            return {
                "==": np.equal,
                "!=": np.not_equal,
                "<": np.less,
                "<=": np.less_equal,
                ">": np.greater,
                ">=": np.greater_equal,
            }[op](a, b)
        ct = _common(left, right)
        a, b = np.asarray(left).astype(ct), np.asarray(right).astype(ct)
        with np.errstate(all="ignore"):
            if op in ("/", "%") and ct.kind == "i":
                safe = np.where(b == 0, 1, b)
                q = np.trunc(a / safe).astype(ct) if op == "/" else np.fmod(a, safe)
                return q
            fn = {
                "+": np.add,
                "-": np.subtract,
                "*": np.multiply,
                "/": np.divide,
                "%": np.fmod,
                "&": np.bitwise_and,
                "|": np.bitwise_or,
                "^": np.bitwise_xor,
            }[op]
            if op in "&|^" and ct.kind == "f":
                raise _Refused(f"bitwise {op} on floating values")
            return fn(a, b).astype(ct)

    def _call(self, name, args):
        if name in _TYPES:
            if len(args) != 1:
                raise _Refused(f"cast {name}() takes one value")
            value = np.asarray(args[0])
            return (value != 0) if name == "bool" else value.astype(_TYPES[name])
        if name == "pow" and len(args) == 2:
            ct = _common(*args)
            ct = ct if ct.kind == "f" else np.dtype(np.float64)
            with np.errstate(all="ignore"):
                return np.power(np.asarray(args[0]).astype(ct), np.asarray(args[1]).astype(ct))
        fn = _MATH.get(name)
        if fn is None or len(args) != 1:
            raise _Refused(f"function {name!r} (the stand-in models {sorted(_MATH)} and pow)")
        x = np.asarray(args[0])
        if x.dtype.kind != "f":
            x = x.astype(np.float64)  # C++'s math overloads take an integer as a double
        with np.errstate(all="ignore"):
            return fn(x)

    def _pointer(self, name):
        if name not in self.pointers:
            raise _Refused(f"{name!r} is not a pointer parameter")
        return self.pointers[name]

    def _load(self, node, mask):
        if node[1][0] != "name":
            raise _Refused("only p[e] loads are modelled")
        flat, _ = self._pointer(node[1][1])
        index = np.broadcast_to(np.asarray(self.value(node[2], mask)), (self.lanes,))
        if index.dtype.kind not in "iu":
            raise _Refused("a pointer index must be an integer")
        bad = mask & ((index < 0) | (index >= flat.size))
        if bad.any():
            raise IndexError(f"RawKernel reads {node[1][1]}[{int(index[bad][0])}] outside its {flat.size} elements")
        return flat[np.where(mask, index, 0)]

    def store(self, name, index_node, value_node, mask) -> None:
        flat, const = self._pointer(name)
        if const:
            raise _Refused(f"store through const pointer {name!r}")
        index = np.broadcast_to(np.asarray(self.value(index_node, mask)), (self.lanes,))
        value = np.broadcast_to(np.asarray(self.value(value_node, mask)), (self.lanes,))
        bad = mask & ((index < 0) | (index >= flat.size))
        if bad.any():
            raise IndexError(f"RawKernel writes {name}[{int(index[bad][0])}] outside its {flat.size} elements")
        flat[index[mask]] = value[mask].astype(flat.dtype)


_DECL = re.compile(r"^(double|float|i64|int|bool) (\w+) = (.+);$")
_ASSIGN = re.compile(r"^(\w+) ([-+*]?=) (.+);$")
_STORE = re.compile(r"^(\w+)\[(.+)\] = (.+);$")
_FOR = re.compile(r"^for \(i64 (\w+) = 0; (\w+) < (.+); \+\+(\w+)\) \{$")
_IF = re.compile(r"^if \((.+)\) \{$")


def _parse_body(lines: list[str]):
    """The statements as a tree: ``(kind, ...)`` with nested lists for blocks."""
    stack = [[]]
    for line in lines:
        if line == "}":
            if len(stack) == 1:
                raise _Refused("unbalanced }")
            block = stack.pop()
            stack[-1][-1] = stack[-1][-1] + (block,)
            continue
        m = _FOR.match(line)
        if m:
            var, cond_var, bound, inc = m.groups()
            if not var == cond_var == inc:
                raise _Refused(f"loop the stand-in does not model: {line!r}")
            stack[-1].append(("for", var, _Parser(bound).whole()))
            stack.append([])
            continue
        m = _IF.match(line)
        if m:
            stack[-1].append(("if", _Parser(m.group(1)).whole()))
            stack.append([])
            continue
        m = _DECL.match(line)
        if m:
            stack[-1].append(("decl", m.group(1), m.group(2), _Parser(m.group(3)).whole()))
            continue
        m = _STORE.match(line)
        if m:
            stack[-1].append(("store", m.group(1), _Parser(m.group(2)).whole(), _Parser(m.group(3)).whole()))
            continue
        m = _ASSIGN.match(line)
        if m:
            stack[-1].append(("assign", m.group(1), m.group(2), _Parser(m.group(3)).whole()))
            continue
        raise _Refused(f"C statement the stand-in does not model: {line!r}")
    if len(stack) != 1:
        raise _Refused("unbalanced {")
    return stack[0]


def _run(block, lanes: _Lanes, mask) -> None:
    for stmt in block:
        kind = stmt[0]
        if kind == "decl":
            lanes.declare(stmt[2], _TYPES[stmt[1]], lanes.value(stmt[3], mask))
        elif kind == "assign":
            _, name, op, expr = stmt
            value = lanes.value(expr, mask)
            if op != "=":
                old = lanes.lookup(name)
                ct = _common(old, value)
                value = {"+=": np.add, "-=": np.subtract, "*=": np.multiply}[op](
                    np.asarray(old).astype(ct), np.asarray(value).astype(ct)
                )
            lanes.set(name, np.asarray(value).astype(lanes.type_of(name)), mask)
        elif kind == "store":
            lanes.store(stmt[1], stmt[2], stmt[3], mask)
        elif kind == "for":
            _, var, bound, body = stmt
            ends = np.broadcast_to(np.asarray(lanes.value(bound, mask)), (lanes.lanes,))[mask]
            if ends.size and (ends != ends[0]).any():
                raise _Refused("a loop bound that differs between threads")
            for r in range(int(ends[0]) if ends.size else 0):
                lanes.scopes.append({var: np.int64(r)})
                lanes.types.append({var: np.dtype(np.int64)})
                _run(body, lanes, mask)
                lanes.scopes.pop()
                lanes.types.pop()
        elif kind == "if":
            _, cond, body = stmt
            inner = mask & np.broadcast_to(lanes.value(cond, mask) != 0, (lanes.lanes,))
            lanes.scopes.append({})
            lanes.types.append({})
            _run(body, lanes, inner)
            lanes.scopes.pop()
            lanes.types.pop()


class RawKernel:
    """``cupy.RawKernel(code, name)``: parsed when made (NVRTC compiles on first use)."""

    def __init__(self, code: str, name: str, options=(), backend: str = "nvrtc", **kwargs) -> None:
        self.code, self.name, self.options = code, name, options
        lines = [line.split("//")[0].strip() for line in code.splitlines()]
        lines = [line for line in lines if line]
        try:
            start = next(k for k, line in enumerate(lines) if line.startswith('extern "C"'))
        except StopIteration:
            raise ValueError(f'no extern "C" __global__ function in the source of {name!r}') from None
        for line in lines[:start]:
            if line != "typedef long long i64;":
                raise ValueError(f"C the stand-in does not model before the kernel: {line!r}")
        m = _SIGNATURE.match(lines[start])
        if m is None or m.group(1) != name:
            raise ValueError(f"kernel {name!r} not found as 'extern \"C\" __global__ void {name}(...) {{'")
        self.params = []
        for part in m.group(2).split(", "):
            p = _PARAM.match(part)
            if p is None:
                raise ValueError(f"parameter the stand-in does not model: {part!r}")
            const, ctype, pointer, pname = p.groups()
            self.params.append((pname, np.dtype(_TYPES[ctype]), bool(pointer), bool(const)))
        body = lines[start + 1 :]
        if body[:2] != [_THREAD, "if (i >= n) return;"] or body[-1] != "}":
            raise ValueError(f"{name!r} must start with {_THREAD!r} and 'if (i >= n) return;'")
        try:
            self._body = _parse_body(body[2:-1])
        except _Refused as exc:
            raise ValueError(f"in RawKernel {name!r}: {exc}") from None

    def __call__(self, grid, block, args, *, shared_mem: int = 0) -> None:
        """Launch ``grid`` x ``block`` threads over ``args`` (a tuple, as CuPy's RawKernel)."""
        if len(args) != len(self.params):
            raise TypeError(f"{self.name!r} takes {len(self.params)} arguments, got {len(args)}")
        arrays = [a for a in args if type(a) is _ndarray.ndarray]
        _kernels.launch(arrays)
        with _lock:
            _launches[0] += 1
        pointers, scalars = {}, {}
        for (pname, dtype, pointer, const), value in zip(self.params, args):
            if pointer:
                if type(value) is not _ndarray.ndarray:
                    raise TypeError(f"argument {pname!r}: a device array is needed, got {type(value).__name__}")
                if value.dtype != dtype or not value._a.flags.c_contiguous:
                    raise TypeError(
                        f"argument {pname!r}: a C-contiguous {dtype} array is needed, "
                        f"got {value.dtype} (contiguous: {value._a.flags.c_contiguous})"
                    )
                pointers[pname] = (value._a.reshape(-1), const)
            else:
                if not isinstance(value, np.generic) or value.dtype != dtype:
                    raise TypeError(f"argument {pname!r}: a numpy {dtype} scalar is needed, got {value!r}")
                scalars[pname] = value
        if "n" not in scalars:
            raise TypeError(f"{self.name!r} has no 'i64 n' parameter")
        threads = int(np.prod(grid)) * int(np.prod(block))
        lanes = min(threads, int(scalars["n"]))
        state = _Lanes(pointers, scalars, lanes)
        state.scopes[0]["i"] = np.arange(lanes, dtype=np.int64)
        state.types[0]["i"] = np.dtype(np.int64)
        try:
            _run(self._body, state, np.ones(lanes, bool))
        except _Refused as exc:
            raise ValueError(f"in RawKernel {self.name!r}: {exc}") from None
