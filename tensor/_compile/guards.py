"""Guards: what a captured graph assumed about its inputs, as one hashable key.

A compiled function keeps one entry per guard key. The key holds, for every
tensor argument, its shape (dynamic dims as ``None``), dtype, device and
``requires_grad``; every other argument by value; the Python values the function
reads from its globals and closure (numbers, strings, bools, None); the
``training`` flags of a module; and the global modes that change what ops do
(grad mode, default dtype, default device: NumPy programs run there). A call whose key has no entry recompiles.
"""

from __future__ import annotations

import weakref

import numpy as np

from .. import _autograd_hooks, _device, _dtype, _tensor

__all__ = [
    "flatten",
    "flatten_call",
    "unflatten",
    "guard_key",
    "const_metas",
    "captured_values",
    "TensorSlot",
    "mark_dynamic",
    "marked_dynamic",
    "marked_dims",
]

_SIMPLE = (int, float, bool, str, type(None), complex)


class TensorSlot:
    """Marks the i-th tensor leaf in a flattened argument structure."""

    __slots__ = ("index", "numpy")

    def __init__(self, index: int, numpy: bool) -> None:
        self.index, self.numpy = index, numpy

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorSlot) and (self.index, self.numpy) == (other.index, other.numpy)

    def __hash__(self) -> int:
        return hash((self.index, self.numpy))

    def __repr__(self) -> str:
        return f"<{'ndarray' if self.numpy else 'tensor'} {self.index}>"


def flatten(value, leaves: list):
    """``value`` with every Tensor or ndarray moved into ``leaves`` and replaced by a TensorSlot.

    Raises:
        TypeError: for an argument that is neither a tensor, a container, nor hashable.
    """
    if isinstance(value, (_tensor.Tensor, np.ndarray)):
        leaves.append(value)
        return TensorSlot(len(leaves) - 1, isinstance(value, np.ndarray))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(flatten(v, leaves) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, flatten(v, leaves)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"tensor.compile: cannot guard on an argument of type {type(value).__name__}; "
            "pass tensors, numbers, strings or containers of them"
        ) from None
    return value


_POSITIONAL: dict = {}  # n -> flatten's spec of a call with n tensor arguments and no keywords


def flatten_call(args: tuple, kwargs: dict) -> tuple:
    """``(spec, leaves)`` of ``flatten((args, kwargs), leaves)``; a call with only tensor arguments
    (a model's forward) reuses the spec of its arity. Raises what ``flatten`` raises."""
    if not kwargs and all(isinstance(a, _tensor.Tensor) for a in args):
        spec = _POSITIONAL.get(len(args))
        if spec is None:
            spec = _POSITIONAL[len(args)] = flatten((args, kwargs), [])
        return spec, list(args)
    leaves: list = []
    return flatten((args, kwargs), leaves), leaves


def unflatten(spec, leaves: list):
    """The inverse of ``flatten``: rebuild the structure with ``leaves`` in the slots."""
    if isinstance(spec, TensorSlot):
        return leaves[spec.index]
    if isinstance(spec, tuple) and len(spec) == 2 and spec[0] in ("tuple", "list", "dict"):
        kind, items = spec
        if kind == "dict":
            return {k: unflatten(v, leaves) for k, v in items}
        built = [unflatten(v, leaves) for v in items]
        return built if kind == "list" else tuple(built)
    return spec


def _meta(t, dynamic_dims) -> tuple:
    data = t._data if isinstance(t, _tensor.Tensor) else t
    shape = data.shape
    if dynamic_dims:
        shape = tuple(None if (i in dynamic_dims) else s for i, s in enumerate(shape))
    # Contiguity is guarded: a captured ``view`` of a contiguous input fails on a strided one.
    contiguous = data.flags.c_contiguous
    if isinstance(t, _tensor.Tensor):
        return shape, data.dtype.str, str(t._device), t._requires_grad, contiguous
    return shape, data.dtype.str, "numpy", False, contiguous


def guard_key(spec, leaves, python_values, dynamic: dict) -> tuple:
    """The key a call is looked up by (see the module docstring).

    ``dynamic`` maps a leaf index to the set of its dims whose size is not guarded.
    """
    metas = tuple(_meta(t, dynamic.get(i, ())) for i, t in enumerate(leaves))
    modes = (_autograd_hooks.grad_mode.enabled, _dtype.get_default_dtype().name, str(_device.get_default_device()))
    return spec, metas, python_values, modes


def const_metas(consts) -> tuple:
    """Shapes, dtypes, devices and requires_grad of the tensors a graph reads from outside."""
    return tuple(_meta(t, ()) for t in consts)


def captured_values(fn) -> tuple:
    """The simple Python values ``fn`` reads from its globals and closure, and module flags."""
    module = getattr(fn, "__self__", None)
    flags = tuple(m.training for m in module.modules()) if hasattr(module, "modules") else ()
    code = getattr(fn, "__code__", None)
    if code is None:
        return flags
    found = []
    glob = getattr(fn, "__globals__", {})
    for name in code.co_names:
        value = glob.get(name, _MISSING)
        if isinstance(value, _SIMPLE):
            found.append((name, value))
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, _SIMPLE):
            found.append((name, value))
    return flags + tuple(found)


_MISSING = object()


_MARKED: dict = {}  # id(tensor or ndarray) -> (weak reference, set of dims)


def mark_dynamic(t, index) -> None:
    """Mark dim ``index`` (an int or a list of ints) of ``t`` as dynamic, as
    ``torch._dynamo.mark_dynamic``: a compiled function then generalises that dim over sizes
    even with ``dynamic=False`` (Note [Dynamic sizes] in ``symbolic.py``). Where PyTorch raises
    ``ConstraintViolationError`` for a marked dim the program specialises, each size of it is
    captured on its own instead (``explain`` shows no dynamic sizes).

    Raises:
        TypeError: if ``t`` is neither a Tensor nor an ndarray.
        IndexError: for a dim out of range for ``t``.
    """
    if not isinstance(t, (_tensor.Tensor, np.ndarray)):
        raise TypeError(f"mark_dynamic: expected a Tensor or ndarray, got {type(t).__name__}")
    ndim = len(t.shape)
    dims = set()
    for d in [index] if isinstance(index, int) else list(index):
        if not -ndim <= d < ndim:
            raise IndexError(f"mark_dynamic: dim {d} is out of range for a tensor of {ndim} dims")
        dims.add(d % ndim)
    entry = _MARKED.get(id(t))
    if entry is not None and entry[0]() is t:
        entry[1].update(dims)
        return
    key = id(t)
    _MARKED[key] = (weakref.ref(t, lambda _, key=key: _MARKED.pop(key, None)), dims)


def marked_dynamic(t) -> set:
    """The dims of ``t`` marked by ``mark_dynamic`` (empty when none)."""
    entry = _MARKED.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else set()


def marked_dims(leaves) -> set:
    """``(leaf index, dim)`` for every marked dim of the flattened arguments."""
    return {(i, d) for i, t in enumerate(leaves) for d in marked_dynamic(t)}
