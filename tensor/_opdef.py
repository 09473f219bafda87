# cython: auto_pickle=False
"""OpDef: one primitive op of the op table (tensor/ops/registry.py), C struct fields when compiled.

Plain Python, ``OpDef`` is a class with ``__slots__``. Compiled (Note [Compiled dispatch and
graph] in tensor/_accelerator.py), ``_opdef.pxd`` makes it an extension type, so the dispatcher
and the recorder, which run for every op, read an op's flags (``differentiable``, ``is_view``,
``saves`` ...) as C struct fields instead of attribute lookups. Other code reads them as
attributes through member descriptors, as ``__slots__`` makes (Note [Compiled Tensor fields] in
tensor/_tensor_base.py). This module imports nothing, so the compiled dispatcher can ``cimport``
the type without importing the op table.
"""

from __future__ import annotations

from collections.abc import Callable

_COMPILED = not __file__.endswith(".py")

# Every field, in the order of _opdef.pxd's declaration.
FIELDS = ("name", "kernel", "backward", "saves", "saves_output", "differentiable", "is_view", "saved_for", "operator",
          "grad_fn_name")


class OpDef:
    """One primitive op: its name, kernel and derivative rule (see ``tensor.ops.registry.defop``)."""

    __slots__ = FIELDS

    def __init__(self, name, kernel, saves, saves_output, differentiable, is_view, saved_for=None, operator=None,
                 backward=None, grad_fn_name=None):
        """``grad_fn_name``: the name of its nodes (``grad_fn.name()``); by default PyTorch's for
        its built-in ops, e.g. ``MulBackward0`` for ``mul``."""
        self.name = name
        self.kernel = kernel
        self.backward = backward
        self.saves = None if saves is None else tuple(saves)  # tuples: the compiled recorder indexes them as such
        self.saves_output = saves_output
        self.differentiable = differentiable
        self.is_view = is_view
        self.saved_for = None if saved_for is None else tuple(saved_for)
        self.operator = operator
        if grad_fn_name is None:
            grad_fn_name = "".join(p.capitalize() for p in name.split("_")) + "Backward0"
        self.grad_fn_name = grad_fn_name

    def derivative(self, fn: Callable) -> Callable:
        """Register ``fn(node, grad) -> tuple of input grads`` as this op's derivative."""
        self.backward = fn
        return fn

    def __repr__(self) -> str:
        return f"<op {self.name}>"


if _COMPILED:
    _member_slots(OpDef, FIELDS)  # noqa: F821 (C, in tensor/_tensor_base.pxd)
