"""``tensor.onnx.export``: a captured graph written as an ONNX model (opset 18).

The function (or module) is captured once, as ``tensor.compile`` does; every node
becomes one or a few ONNX nodes (``_EMIT``), operands are cast to the dtype our
dispatcher computed in, and outside tensors (parameters) become initializers. A graph
break, or an op without an ONNX form, is an error naming the op and its source line.
The ``onnx`` package is imported only here.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _autograd_hooks, _creation, _tensor
from .capture import Tracer, tracing
from .graph import Ref
from .guards import flatten, unflatten
from .scalar_code import compute_dtype

__all__ = ["export"]

OPSET = 18
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater",
           "ge": "GreaterOrEqual", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}
_UNARY = {"neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos",
          "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu", "reciprocal": "Reciprocal", "floor": "Floor",
          "ceil": "Ceil", "sign": "Sign", "round": "Round", "erf": "Erf", "isnan": "IsNaN", "logical_not": "Not",
          "clone": "Identity", "contiguous": "Identity"}
_REDUCE = {"sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin", "prod": "ReduceProd"}


class _Builder:
    """Accumulates ONNX nodes and constants for one graph."""

    def __init__(self, onnx, graph) -> None:
        self.onnx, self.h, self.graph = onnx, onnx.helper, graph
        self.nodes: list = []
        self.initializers: list = []
        self.count = 0

    def name(self, node_id: int) -> str:
        return f"v{node_id}"

    def fresh(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def const(self, value, dtype) -> str:
        name = self.fresh()
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def add(self, op: str, inputs: list, output: str | None = None, **attrs) -> str:
        output = output or self.fresh()
        self.nodes.append(self.h.make_node(op, inputs, [output], **attrs))
        return output

    def cast(self, name: str, from_dtype, to_dtype) -> str:
        if np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        return self.add("Cast", [name], to=self.h.np_dtype_to_tensor_dtype(np.dtype(to_dtype)))


def _operands(b, node):
    """The node's operand names, cast to the dtype the op computes in."""
    nodes = b.graph.nodes
    names = [(b.name(a), nodes[a].dtype) for a in node.args]
    if node.via == "binary" and len(node.args) == 1:
        names.append((None, None))
    dtypes = [d for _, d in names if d is not None]
    ctype = compute_dtype(node, dtypes or [node.dtype])
    out = []
    for name, dtype in names:
        out.append(b.const(node.scalar, ctype) if name is None else b.cast(name, dtype, ctype))
    return out, ctype


def _emit_call(b, node) -> None:
    name, out = node.op.name, b.name(node.id)
    if name in _BINARY or name in _UNARY or name == "ne":
        operands, ctype = _operands(b, node)
        if name == "ne":
            b.add("Not", [b.add("Equal", operands)], out)
        else:
            result = b.add(_BINARY.get(name) or _UNARY[name], operands)
            b.add("Identity", [b.cast(result, ctype if name not in _COMPARES else bool, node.dtype)], out)
        return
    _EMIT[name](b, node, out)


_COMPARES = {"eq", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "isnan", "logical_not"}


def _x(b, node, i=0):
    return b.name(node.args[i])


def _reduce(b, node, out):
    dims, keepdim = node.params[0], node.params[1]
    source = b.graph.nodes[node.args[0]]
    x = b.cast(_x(b, node), source.dtype, node.dtype)
    axes = b.const(list(dims) or list(range(len(source.shape))), np.int64)
    b.add(_REDUCE[node.op.name], [x, axes], out, keepdims=int(keepdim))


def _bool_reduce(b, node, out):
    dims, keepdim = node.params
    source = b.graph.nodes[node.args[0]]
    x = b.add("Cast", [_x(b, node)], to=b.h.np_dtype_to_tensor_dtype(np.dtype(np.int32)))
    axes = b.const(list(dims) or list(range(len(source.shape))), np.int64)
    reduced = b.add("ReduceMin" if node.op.name == "all" else "ReduceMax", [x, axes], keepdims=int(keepdim))
    b.add("Cast", [reduced], out, to=b.h.np_dtype_to_tensor_dtype(np.dtype(bool)))


def _arg(b, node, out):
    dim, keepdim = node.params
    b.add("ArgMax" if node.op.name == "argmax" else "ArgMin", [_x(b, node)], out, axis=dim, keepdims=int(keepdim))


def _getitem(b, node, out):
    source = b.graph.nodes[node.args[0]]
    items = node.params[0] if isinstance(node.params[0], tuple) else (node.params[0],)
    if any(isinstance(i, Ref) or not (i is None or i is Ellipsis or isinstance(i, (int, slice))) for i in items):
        raise NotImplementedError("indexing with arrays")
    explicit = sum(1 for i in items if i is not None and i is not Ellipsis)
    expanded = []
    for item in items:
        expanded += [slice(None)] * (len(source.shape) - explicit) if item is Ellipsis else [item]
    current, axis, d = _x(b, node), 0, 0
    for item in expanded:
        if item is None:
            current = b.add("Unsqueeze", [current, b.const([axis], np.int64)])
            axis += 1
        elif isinstance(item, slice):
            start, stop, step = item.indices(source.shape[d])
            if (start, stop, step) != (0, source.shape[d], 1):
                stop = stop if stop >= 0 else -source.shape[d] - 1
                current = b.add("Slice", [current, *(b.const([v], np.int64) for v in (start, stop, axis, step))])
            axis, d = axis + 1, d + 1
        else:
            current = b.add("Gather", [current, b.const(item % source.shape[d], np.int64)], axis=axis)
            d += 1
    b.add("Identity", [current], out)


def _gelu(b, node, out):
    x = _x(b, node)
    dt = node.dtype
    if node.params[0] == "tanh":
        cube = b.add("Mul", [b.add("Mul", [x, x]), x])
        inner = b.add("Add", [x, b.add("Mul", [cube, b.const(0.044715, dt)])])
        t = b.add("Tanh", [b.add("Mul", [inner, b.const(math.sqrt(2 / math.pi), dt)])])
    else:
        t = b.add("Erf", [b.add("Mul", [x, b.const(1 / math.sqrt(2.0), dt)])])
    half = b.add("Mul", [x, b.const(0.5, dt)])
    b.add("Mul", [half, b.add("Add", [t, b.const(1.0, dt)])], out)


def _clamp(b, node, out):
    low, high = node.params
    info = np.finfo(node.dtype) if node.dtype.kind == "f" else np.iinfo(node.dtype)
    bounds = [b.const(info.min if low is None else low, node.dtype),
              b.const(info.max if high is None else high, node.dtype)]
    b.add("Clip", [_x(b, node), *bounds], out)


def _linear(b, node, out):
    y = b.add("MatMul", [_x(b, node), b.add("Transpose", [_x(b, node, 1)], perm=[1, 0])])
    b.add("Add" if len(node.args) > 2 else "Identity", [y, _x(b, node, 2)] if len(node.args) > 2 else [y], out)


_EMIT = {
    "sum": _reduce, "amax": _reduce, "amin": _reduce, "prod": _reduce, "all": _bool_reduce, "any": _bool_reduce,
    "argmax": _arg, "argmin": _arg, "getitem_view": _getitem, "gelu": _gelu, "clamp": _clamp,
    "hardtanh": _clamp, "linear": _linear,
    "matmul": lambda b, n, out: b.add("MatMul", [_x(b, n), _x(b, n, 1)], out),
    "view": lambda b, n, out: b.add("Reshape", [_x(b, n), b.const(list(n.shape), np.int64)], out),
    "permute": lambda b, n, out: b.add("Transpose", [_x(b, n)], out, perm=list(n.params[0])),
    "expand": lambda b, n, out: b.add("Expand", [_x(b, n), b.const(list(n.shape), np.int64)], out),
    "to_dtype": lambda b, n, out: b.add("Cast", [_x(b, n)], out, to=b.h.np_dtype_to_tensor_dtype(n.dtype)),
    "where": lambda b, n, out: b.add("Where", [_x(b, n), *(b.cast(_x(b, n, i), b.graph.nodes[n.args[i]].dtype,
                                                                   n.dtype) for i in (1, 2))], out),
    "softmax": lambda b, n, out: b.add("Softmax", [_x(b, n)], out, axis=n.params[0]),
    "log_softmax": lambda b, n, out: b.add("LogSoftmax", [_x(b, n)], out, axis=n.params[0]),
    "rsqrt": lambda b, n, out: b.add("Reciprocal", [b.add("Sqrt", [_x(b, n)])], out),
}


def _capture(fn, args):
    leaves: list = []
    spec = flatten((tuple(args), {}), leaves)
    tensors = [_creation.from_numpy(x) if isinstance(x, np.ndarray) else x for x in leaves]
    tracer = Tracer(tensors, fullgraph=True)
    call_args, call_kwargs = unflatten(spec, tensors)
    with _autograd_hooks.api.no_grad(), tracing(tracer):
        result = fn(*call_args, **call_kwargs)
        tracer.finish(result, _tensor.Tensor)
    if tracer.unreplayable:
        raise RuntimeError(f"tensor.onnx.export: cannot export: {tracer.unreplayable}")
    return tracer.graph


def _emit_nodes(b, input_names) -> list:
    """Emit every node of ``b.graph``; returns the graph's input value infos."""
    inputs = []
    for node in b.graph.nodes:
        if node.kind == "input":
            name = input_names[node.value] if input_names else f"input_{node.value}"
            b.add("Identity", [name], b.name(node.id))
            inputs.append(_value_info(b.h, name, node))
        elif node.kind == "const":
            array = node.value.cpu().numpy(force=True)
            b.initializers.append(b.onnx.numpy_helper.from_array(array, b.name(node.id)))
        else:
            try:
                _emit_call(b, node)
            except (KeyError, NotImplementedError) as exc:
                raise NotImplementedError(f"tensor.onnx.export: op {node.op.name!r} at {node.source} has no "
                                          f"ONNX form here ({exc})") from None
    return inputs


def _value_info(h, name, node):
    return h.make_tensor_value_info(name, h.np_dtype_to_tensor_dtype(node.dtype), list(node.shape))


def export(model, args, f, *, input_names=None, output_names=None, opset_version: int = OPSET):
    """Capture ``model(*args)`` (a module or function) and write it to ``f`` as an ONNX model.

    Returns the ``onnx.ModelProto``, which ``onnx.checker`` has accepted.

    Raises:
        GraphBreakError: where the function needs a graph break (data-dependent Python code).
        NotImplementedError: for an op without an ONNX form, naming it and its source line.
        ImportError: without the ``onnx`` package (the ``onnx`` extra).
    """
    import onnx  # noqa: PLC0415 - optional, loaded only to export

    args = args if isinstance(args, tuple) else (args,)
    graph = _capture(model, args)
    b = _Builder(onnx, graph)
    inputs = _emit_nodes(b, input_names)
    refs = graph.outputs if isinstance(graph.outputs, (tuple, list)) else (graph.outputs,)
    outputs = []
    for i, ref in enumerate(refs):
        name = output_names[i] if output_names else f"output_{i}"
        b.add("Identity", [b.name(ref.node)], name)
        outputs.append(_value_info(b.h, name, graph.nodes[ref.node]))
    onnx_graph = b.h.make_graph(b.nodes, "tensor_compile", inputs, outputs, b.initializers)
    proto = b.h.make_model(onnx_graph, opset_imports=[b.h.make_opsetid("", opset_version)],
                           producer_name="distrib tensor.onnx")
    onnx.checker.check_model(proto, full_check=True)
    onnx.save(proto, f)
    return proto
