"""The scalar expression of each fusable op, in the Python subset numba compiles.

``expression(node, operands)`` gives the code for one element of ``node`` from the
code of its operands' elements (already cast to the dtype the op computes in,
``compute_dtype``). Each formula follows the op's kernel in ``tensor/ops``
(``sigmoid`` as ``1 / (1 + exp(-x))``, ``gelu`` with ``erf`` or ``tanh``, ``relu``
keeping NaN), so fused and eager results agree to rounding (float32 ``tanh`` to 4 ulp
and ``exp`` to 1 ulp, see ``vecmath.py``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["expression", "compute_dtype", "cast", "literal", "exp"]

_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_ARITH = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_CALL = {
    "log": "np.log",
    "sqrt": "np.sqrt",
    "sin": "np.sin",
    "cos": "np.cos",
    "log1p": "np.log1p",
    "expm1": "np.expm1",
    "sign": "np.sign",
    "floor": "np.floor",
    "ceil": "np.ceil",
    "trunc": "np.trunc",
    "round": "np.rint",
    "isnan": "np.isnan",
    "isinf": "np.isinf",
    "isfinite": "np.isfinite",
    "erf": "math.erf",
    "abs": "abs",
}
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def literal(value) -> str:
    """Python source for a number (``np.inf``/``np.nan`` for the special floats)."""
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "np.nan" if value != value else ("np.inf" if value > 0 else "-np.inf")
    return repr(value)


def cast(code: str, dtype) -> str:
    """``code`` converted to ``dtype`` (bool: nonzero)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return f"(({code}) != 0)"
    return f"np.{dtype.name}({code})"


def compute_dtype(node, operand_dtypes):
    """The dtype an op computes in: its output dtype, or the operands' common dtype for tests."""
    name = node.op.name
    if name in _COMPARE:
        return np.result_type(*operand_dtypes)
    if name in ("where",):
        return node.dtype
    if node.dtype.kind == "b":
        return np.dtype(bool)
    return node.dtype


def expression(node, x: list[str]) -> str:
    """One element of ``node`` from its operands' elements ``x``; raises KeyError if not fusable."""
    name = node.op.name
    if name in _ARITH:
        return f"({x[0]} {_ARITH[name]} {x[1]})"
    if name in _COMPARE:
        return f"({x[0]} {_COMPARE[name]} {x[1]})"
    if name in _CALL:
        return f"{_CALL[name]}({x[0]})"
    return _SPECIAL[name](node, x)


def _k(node, value) -> str:
    """A constant in the op's own float dtype, so float32 math stays float32 (as numpy's does)."""
    return cast(literal(float(value)), node.dtype) if node.dtype.kind == "f" else literal(value)


def _clamp(node, x):
    low, high = node.params
    code = x[0]
    if low is not None:
        code = f"np.maximum({code}, {_k(node, low)})"
    if high is not None:
        code = f"np.minimum({code}, {_k(node, high)})"
    return code


def _clamp_backward(node, x):
    """clamp's gradient ``x[0]`` where ``low <= x[1] <= high`` (NaN: 0), else 0."""
    inside = [f"{x[1]} {op} {_k(node, bound)}" for op, bound in ((">=", node.params[0]), ("<=", node.params[1]))
              if bound is not None]
    return f"({x[0]} if ({' and '.join(inside)}) else {_k(node, 0)})"


def _tanh(node, code: str) -> str:
    """tanh: libm's is called per element; float32 uses ``vecmath.tanh_f32``, which vectorises."""
    return f"tanh_f32({code})" if node.dtype == np.float32 else f"np.tanh({code})"


def exp(dtype, code: str) -> str:
    """``exp(code)`` in ``dtype``: libm's is called per element; floats use ``vecmath.exp_f32``/``exp_f64``,
    which vectorise."""
    return {"float32": "exp_f32", "float64": "exp_f64"}.get(np.dtype(dtype).name, "np.exp") + f"({code})"


def _pow(node, x):
    """``x ** e``; a small constant exponent becomes multiplications (powf per element is slow)."""
    e = node.scalar if node.via == "binary" and len(node.args) == 1 else None
    if isinstance(e, (int, float)) and not isinstance(e, bool):
        if e in (1, 2, 3):
            return "(" + " * ".join([x[0]] * int(e)) + ")"
        if node.dtype.kind == "f" and e == 0.5:
            return f"np.sqrt({x[0]})"
        if node.dtype.kind == "f" and e == -1:
            return f"({_k(node, 1.0)} / {x[0]})"
    return f"({x[0]} ** {x[1]})"


def _gelu(node, x):
    a = x[0]
    one, half = _k(node, 1.0), _k(node, 0.5)
    if node.params[0] == "tanh":
        inner = f"{_k(node, _SQRT_2_OVER_PI)} * ({a} + {_k(node, 0.044715)} * {a} * {a} * {a})"
        return f"({half} * {a} * ({one} + {_tanh(node, inner)}))"
    return f"({half} * {a} * ({one} + math.erf({a} * {_k(node, 1 / math.sqrt(2.0))})))"


_SPECIAL = {
    "maximum": lambda n, x: f"np.maximum({x[0]}, {x[1]})",
    "minimum": lambda n, x: f"np.minimum({x[0]}, {x[1]})",
    "neg": lambda n, x: f"(-{x[0]})",
    "rsqrt": lambda n, x: f"({_k(n, 1.0)} / np.sqrt({x[0]}))",
    "reciprocal": lambda n, x: f"({_k(n, 1.0)} / {x[0]})",
    "exp": lambda n, x: exp(n.dtype, x[0]),
    "sigmoid": lambda n, x: f"({_k(n, 1.0)} / ({_k(n, 1.0)} + {exp(n.dtype, '-' + x[0])}))",
    "relu": lambda n, x: f"({x[0]} if ({x[0]} > 0 or {x[0]} != {x[0]}) else 0)",
    "silu": lambda n, x: f"({x[0]} / ({_k(n, 1.0)} + {exp(n.dtype, '-' + x[0])}))",
    "leaky_relu": lambda n, x: f"({x[0]} if {x[0]} > 0 else {x[0]} * {_k(n, n.params[0])})",
    "elu": lambda n, x: f"({x[0]} if {x[0]} > 0 else {_k(n, n.params[0])} * np.expm1({x[0]}))",
    "clamp": _clamp,
    "hardtanh": _clamp,
    "threshold_backward": lambda n, x: f"({x[0]} if not ({x[1]} <= 0) else {_k(n, 0)})",
    "clamp_backward": _clamp_backward,
    "hardtanh_backward": lambda n, x: (
        f"({x[0]} if not ({x[1]} <= {_k(n, n.params[0])} or {x[1]} >= {_k(n, n.params[1])}) else {_k(n, 0)})"
    ),
    "gelu": _gelu,
    "pow": _pow,
    "tanh": lambda n, x: _tanh(n, x[0]),
    "logical_and": lambda n, x: f"(({x[0]} != 0) and ({x[1]} != 0))",
    "logical_or": lambda n, x: f"(({x[0]} != 0) or ({x[1]} != 0))",
    "logical_xor": lambda n, x: f"(({x[0]} != 0) != ({x[1]} != 0))",
    "logical_not": lambda n, x: f"({x[0]} == 0)",
    "bitwise_and": lambda n, x: f"({x[0]} & {x[1]})",
    "bitwise_or": lambda n, x: f"({x[0]} | {x[1]})",
    "bitwise_xor": lambda n, x: f"({x[0]} ^ {x[1]})",
    "bitwise_not": lambda n, x: f"(not {x[0]})" if n.dtype.kind == "b" else f"(~{x[0]})",
    "where": lambda n, x: f"({x[1]} if {x[0]} else {x[2]})",
    "clone": lambda n, x: x[0],
    "contiguous": lambda n, x: x[0],
    "to_dtype": lambda n, x: x[0],
}
