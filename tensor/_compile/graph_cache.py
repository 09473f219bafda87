"""Captured graphs kept on disk, so that a second process skips the capture.

Capturing runs the function once eagerly; for a big NumPy program that costs as much
as the program. A graph that reads no outside tensors (those are live references) and
needs no eager fallback is saved under ``<cache_dir>/graphs/``, keyed by the function's
code (its bytecode, constants and names, and those of the module-level functions it
calls, recursively), the guard key and the newest change to the library's own sources.
Another process with the same code and guards loads it, and its fused kernels come from
numba's own disk cache.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
import types

from .._device import device
from ..ops.registry import OPS
from .config import config
from .graph import Graph, Node

__all__ = ["cache_key", "load", "store"]

_VERSION = 1


def _code_parts(code, fn_globals, seen: set, parts: list) -> None:
    if id(code) in seen:
        return
    seen.add(id(code))
    parts += [code.co_filename, code.co_qualname, code.co_code, code.co_names]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_parts(const, fn_globals, seen, parts)
        else:
            parts.append(repr(const))
    for name in code.co_names:
        target = fn_globals.get(name)
        if isinstance(target, types.FunctionType) and target.__module__ == fn_globals.get("__name__"):
            _code_parts(target.__code__, target.__globals__, seen, parts)


@functools.lru_cache(maxsize=1)
def _library_stamp() -> tuple:
    """The newest source change in ``tensor``, ``autograd`` and ``nn``: a graph records what their
    code did, so an edited library must not reuse it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    newest = 0.0
    for package in ("tensor", "autograd", "nn"):
        for folder, _, files in os.walk(os.path.join(root, package)):
            newest = max([newest] + [os.stat(os.path.join(folder, f)).st_mtime for f in files if f.endswith(".py")])
    return root, newest


def cache_key(fn, guard_key) -> str | None:
    """A key for ``fn`` under ``guard_key`` that another process computes alike, or None."""
    code = getattr(fn, "__code__", None)
    if code is None or getattr(fn, "__closure__", None):
        return None
    parts: list = [_VERSION, _library_stamp(), repr(guard_key)]
    _code_parts(code, getattr(fn, "__globals__", {}), set(), parts)
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part if isinstance(part, bytes) else repr(part).encode())
    return digest.hexdigest()[:32]


def _path(key: str) -> str:
    return os.path.join(config.cache_dir, "graphs", f"{key}.pkl")


def store(key: str, graph) -> None:
    """Save ``graph`` under ``key`` if it reads no outside tensors (best effort: errors are ignored)."""
    if any(n.kind == "const" for n in graph.nodes):
        return
    nodes = [dict(vars(n), op=n.op.name if n.op is not None else None, device=str(n.device)) for n in graph.nodes]
    payload = dict(nodes=nodes, breaks=graph.breaks, outputs=graph.outputs, mutations=graph.mutations)
    try:
        os.makedirs(os.path.dirname(_path(key)), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(_path(key)), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(payload, f)
        os.replace(tmp, _path(key))
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        return


def load(key: str):
    """The graph saved under ``key``, or None."""
    try:
        with open(_path(key), "rb") as f:
            payload = pickle.load(f)  # our own cache directory, written by store()
    except (OSError, pickle.UnpicklingError, EOFError):
        return None
    graph = Graph(breaks=payload["breaks"], outputs=payload["outputs"], mutations=payload["mutations"])
    for fields in payload["nodes"]:
        op = OPS.get(fields["op"]) if fields["op"] is not None else None
        if fields["op"] is not None and op is None:
            return None
        graph.nodes.append(Node(**dict(fields, op=op, device=device(fields["device"]))))
    return graph
