"""Running a captured graph: node by node through the dispatcher (``backend="eager"``),
with its graph breaks, guards on values Python read, and in-place writes back.

A segment runner is any callable ``run(env, leaves)`` that fills ``env`` (node id ->
Tensor) for the nodes of its segment. ``eager_segment`` is the reference one; the
fused backends (``codegen_numba``) produce others with the same contract.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch, _inplace
from .capture import read_value
from .graph import Ref

__all__ = ["run_node", "eager_segment", "resolve", "has_ref", "values_equal", "write_back", "Mismatch"]


class Mismatch(Exception):
    """A value Python read differs from the one the graph was captured with."""


def resolve(param, env):
    """``param`` with every Ref replaced by the array of that node's current value."""
    if isinstance(param, Ref):
        return env[param.node]._data
    if isinstance(param, tuple):
        return tuple(resolve(p, env) for p in param)
    return param


def has_ref(param) -> bool:
    """Whether ``resolve`` would replace anything in ``param``."""
    return isinstance(param, Ref) or (isinstance(param, tuple) and any(has_ref(p) for p in param))


def run_node(node, env, leaves) -> None:
    """Compute one node's value into ``env`` by calling the dispatcher as eager code would."""
    kind = node.kind
    if kind == "input":
        env[node.id] = leaves[node.value]
        return
    if kind == "const":
        env[node.id] = node.value
        return
    args = [env[a] for a in node.args]
    params = resolve(node.params, env) if node.params else ()
    if node.via == "binary":
        other = args[1] if len(args) > 1 else node.scalar
        env[node.id] = _dispatch.apply_binary(node.op, args[0], other, node.float_result)
    elif node.via == "to_device":
        env[node.id] = args[0].to(params[0])
    elif node.via == "unary":
        env[node.id] = _dispatch.apply_unary(node.op, args[0], params)
    else:
        env[node.id] = _dispatch.apply(node.op, args, params)


def eager_segment(nodes):
    """A segment runner that runs ``nodes`` one by one."""

    def run(env, leaves):
        for node in nodes:
            run_node(node, env, leaves)

    return run


def values_equal(a, b) -> bool:
    """Whether two values read from tensors (numbers or host arrays) are the same."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and bool(np.array_equal(a, b, equal_nan=True))
        )
    return type(a) is type(b) and (a == b or (a != a and b != b))


def check_read(brk, env) -> None:
    """Raise Mismatch unless the break's node still reads as it did during capture."""
    if not values_equal(read_value(env[brk.node]._data, brk.what), brk.value):
        raise Mismatch(brk)


def write_back(mutations, env) -> None:
    """Apply the in-place writes the function made to its inputs and to outside tensors."""
    for target, source in mutations:
        t, value = env[target], env[source]
        _inplace._store(t, Ellipsis, value._data)
