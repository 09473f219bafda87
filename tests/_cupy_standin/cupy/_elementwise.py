"""``cupy.ElementwiseKernel`` for the stand-in: a small C subset run with numpy, launches counted.

CuPy compiles the operation as CUDA C and runs it once per element. An elementwise operation
has no dependence between elements, so running each statement on whole arrays gives the same
values; what is emulated is the C that such kernels use: statements ``T x = e;``, ``x = e;``,
``x += e;`` (``-=``, ``*=``, ``/=``), expressions of names, numbers, ``+ - * /``, parentheses,
``sqrt``, ``fabs``, ``exp``, ``log``, ``pow``, ``max``, ``min``. C's arithmetic conversions are kept (a
``float`` times a ``double`` is a ``double``), and a value stored in a typed variable or an output
is cast to its type. Anything else is refused, so a kernel that runs here uses no C this does
not model. Output parameters are read-write, as in CuPy. Each call is one launch
(``cupy._state.elementwise_launches()``).
"""

from __future__ import annotations

import ast
import re

import numpy as np

from . import _kernels, _ndarray, _state

_FUNCTIONS = {"sqrt": np.sqrt, "fabs": np.abs, "exp": np.exp, "log": np.log, "max": np.maximum,
              "min": np.minimum, "pow": np.power}
_C_TYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "bool": np.bool_}
_STATEMENT = re.compile(r"^\s*(?:const\s+)?(?:(\w+)\s+)?(\w+)\s*([-+*/]?=)\s*(.+?)\s*$", re.S)


def _parse_params(spec: str) -> list[tuple[str, str]]:
    """``'T x, float64 y'`` as ``[('T', 'x'), ('float64', 'y')]``; ``raw`` parameters are refused."""
    params = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        words = part.split()
        if len(words) != 2:
            raise ValueError(f"Unsupported parameter (the stand-in takes 'type name'): {part!r}")
        params.append((words[0], words[1]))
    return params


def _check_expression(tree: ast.AST, source: str) -> None:
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.Constant, ast.Call,
               ast.Add, ast.Sub, ast.Mult, ast.Div, ast.USub, ast.UAdd)
    for node in ast.walk(tree):
        if not isinstance(node, allowed) or (isinstance(node, ast.Call) and (
                not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS)):
            raise ValueError(f"C the stand-in does not model in {source!r}: {ast.dump(node)[:60]}")


class ElementwiseKernel:
    """``cupy.ElementwiseKernel(in_params, out_params, operation, name)``."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 **options) -> None:
        self.in_params, self.out_params = _parse_params(in_params), _parse_params(out_params)
        self.name = name
        self._statements = []
        for text in filter(str.strip, operation.split(";")):
            match = _STATEMENT.match(text)
            if match is None:
                raise ValueError(f"C statement the stand-in does not model: {text.strip()!r}")
            ctype, target, op, expr = match.groups()
            try:
                tree = ast.parse(expr.replace("\n", " "), mode="eval")
            except SyntaxError:
                raise ValueError(f"C the stand-in does not model: {expr!r}") from None
            _check_expression(tree, expr)
            self._statements.append((ctype, target, op, compile(tree, name, "eval")))

    def __call__(self, *args):
        """Run the operation on the arguments (inputs, then outputs, all given)."""
        params = self.in_params + self.out_params
        if len(args) != len(params):
            raise TypeError(f"Wrong number of arguments for {self.name!r}: expected {len(params)}, "
                            f"got {len(args)} (the stand-in needs every output given)")
        arrays = [a for a in args if type(a) is _ndarray.ndarray]
        _kernels.launch(arrays)
        _state.count_elementwise_launch()
        types = self._bind_types(args)
        env = {name: self._operand(value, types[ctype] if ctype in types else np.dtype(ctype))
               for (ctype, name), value in zip(params, args)}
        for ctype, target, op, code in self._statements:
            value = eval(code, {"__builtins__": {}, **_FUNCTIONS}, env)  # noqa: S307 - checked C subset
            if op != "=":
                value = {"+=": np.add, "-=": np.subtract, "*=": np.multiply, "/=": np.divide}[op](env[target], value)
            dtype = types.get(ctype) or _C_TYPES.get(ctype) if ctype else None
            env[target] = np.asarray(value).astype(dtype) if dtype is not None else value
        for (ctype, name), out in zip(self.out_params, args[len(self.in_params):]):
            out._a[...] = np.asarray(env[name]).astype(out.dtype)
        return args[len(self.in_params):][0] if len(self.out_params) == 1 else args[len(self.in_params):]

    def _bind_types(self, args) -> dict[str, np.dtype]:
        """Type placeholders (one capital letter) bound to the dtype of their first array."""
        types = {}
        for (ctype, _), value in zip(self.in_params + self.out_params, args):
            if re.fullmatch(r"[A-Z]", ctype) and type(value) is _ndarray.ndarray:
                types.setdefault(ctype, value.dtype)
        return types

    @staticmethod
    def _operand(value, dtype):
        if type(value) is _ndarray.ndarray:
            return value._a
        if isinstance(value, np.ndarray):
            raise TypeError("Unsupported type <class 'numpy.ndarray'>")
        return np.dtype(dtype).type(value)
