"""Elementwise comparisons, logic and bit operations of two tensors (no gradient), and ``where``."""

from __future__ import annotations

from .. import _backend, _dispatch, _dtype
from .dtype_checks import not_implemented_for
from .registry import defop, public

__all__ = [
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "where",
]


def _no_grad_binary(name, ufunc_name, result, integral=False, ordered=False):
    """The public function ``name``: the xp ufunc ``ufunc_name`` on two broadcast inputs, as a
    non-differentiable op whose output is ``result`` (said in its docstring); with ``integral``,
    of integer or bool inputs only, with ``ordered`` (an order comparison) of real inputs only
    (``NotImplementedError`` otherwise, as in PyTorch)."""
    refused_kinds = "fcV" if integral else "c" if ordered else ""

    def kernel(xp, a, b):
        kind = a.dtype.kind
        if kind in refused_kinds:  # apply_binary has already brought both operands to one kind
            raise not_implemented_for(name if integral else f"{name}_cpu", _dtype.from_numpy_dtype(a.dtype))
        ufunc = getattr(xp, ufunc_name)
        return ufunc(a, b) if kind != "V" else _backend.in_float32(ufunc, a, b)

    op = defop(name, differentiable=False)(kernel)
    return public(_dispatch.binary_function(op), name, f"Elementwise ``{ufunc_name}``; returns {result}.")


_BOOL = "a bool tensor"
_BITS = "a tensor of the inputs' promoted integer or bool dtype"
eq = _no_grad_binary("eq", "equal", _BOOL)
ne = _no_grad_binary("ne", "not_equal", _BOOL)
lt = _no_grad_binary("lt", "less", _BOOL, ordered=True)
le = _no_grad_binary("le", "less_equal", _BOOL, ordered=True)
gt = _no_grad_binary("gt", "greater", _BOOL, ordered=True)
ge = _no_grad_binary("ge", "greater_equal", _BOOL, ordered=True)
logical_and = _no_grad_binary("logical_and", "logical_and", _BOOL)
logical_or = _no_grad_binary("logical_or", "logical_or", _BOOL)
logical_xor = _no_grad_binary("logical_xor", "logical_xor", _BOOL)
bitwise_and = _no_grad_binary("bitwise_and", "bitwise_and", _BITS, integral=True)
bitwise_or = _no_grad_binary("bitwise_or", "bitwise_or", _BITS, integral=True)
bitwise_xor = _no_grad_binary("bitwise_xor", "bitwise_xor", _BITS, integral=True)


@defop("where", saves=(0,))
def _where(xp, cond, a, b):
    return xp.where(cond, a, b)


@_where.derivative
def _(node, g):
    cond = node.saved[0]
    zero = g.new_zeros(())
    return None, where(cond, g, zero), where(cond, zero, g)


def where(condition, input=None, other=None):
    """Pick ``input`` where ``condition`` holds and ``other`` elsewhere (numbers allowed); given
    ``condition`` alone, ``condition.nonzero(as_tuple=True)``.

    Raises:
        RuntimeError: if ``condition`` is not a bool tensor (with ``input`` and ``other``).
        TypeError: if only one of ``input`` and ``other`` is given.
    """
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() takes the condition alone, or the condition, input and other")
    if condition.dtype is not _dtype.bool_:
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with "
            f"dtype {condition.dtype.name}"
        )
    device = condition._device
    if not _dispatch.is_tensor(input):
        like = other if _dispatch.is_tensor(other) else None
        dt = _dtype.scalar_result_type(like.dtype, input) if like is not None else None
        input = _dispatch.scalar_tensor(input, dt, device)
    if not _dispatch.is_tensor(other):
        other = _dispatch.scalar_tensor(other, _dtype.scalar_result_type(input.dtype, other), device)
    target = _dtype.result_type(input.dtype, input.ndim, other.dtype, other.ndim)
    if input.dtype is not target:
        input = input.to(target)
    if other.dtype is not target:
        other = other.to(target)
    return _dispatch.apply(_where, (condition, input, other))
