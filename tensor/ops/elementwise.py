"""Elementwise binary arithmetic: add, sub, mul, div (true, floor and trunc), pow, maximum,
minimum and remainder, with their derivatives and PyTorch's integer and bool rules.

The other elementwise ops live beside it: unary math, rounding and predicates in ``unary``,
comparisons, logic and ``where`` in ``comparison``, relu and clamp in ``clamping``; the helpers
their derivatives share in ``derivative_helpers``, dtype refusals in ``dtype_checks``.
"""

from __future__ import annotations

import operator

from .. import _backend, _dispatch
from .comparison import where  # also imported from here by tensor/ops/indexing.py
from .derivative_helpers import _conj_saved, _on_arrays, _product, zeros_like_grad
from .registry import defop, public
from .unary import log

__all__ = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "remainder", "floor_divide"]


# The arithmetic kernels (as the comparison kernels in comparison.py) run bfloat16 (ml_dtypes
# kind "V") operands through float32 (tensor/_backend.py ``in_float32``); other dtypes pay one
# attribute test.
@defop("add", operator=operator.add)
def _add(xp, a, b):
    return xp.add(a, b) if a.dtype.kind != "V" else _backend.in_float32(xp.add, a, b)


@_add.derivative
def _(node, g):
    return g, g


@defop("sub", operator=operator.sub)
def _sub(xp, a, b):
    return xp.subtract(a, b) if a.dtype.kind != "V" else _backend.in_float32(xp.subtract, a, b)


@_sub.derivative
def _(node, g):
    return g, (None if node.next_fns[1] is None else -g)  # no negation for a constant subtrahend


@defop("mul", saves=(0, 1), saved_for=(1, 0), operator=operator.mul)
def _mul(xp, a, b):
    return xp.multiply(a, b) if a.dtype.kind != "V" else _backend.in_float32(xp.multiply, a, b)


@_mul.derivative
def _(node, g):
    # None where no gradient is needed: node.needs_input_grad without its list, and next_fns
    # without its slice (_fns_saved starts with the edges; Note [Graphs and the cyclic GC])
    fns = node._fns_saved
    to_a, to_b = fns[0], fns[1]
    if _on_arrays(g):
        a, b = node.saved_data  # no Tensors rebuilt, no dispatch
        return (None if to_a is None else _product(g, b)), (None if to_b is None else _product(g, a))
    a, b = _conj_saved(node, g)
    return (None if to_a is None else g * b), (None if to_b is None else g * a)


@defop("div", saves=(0, 1), saved_for=(1, None), operator=operator.truediv)
def _div(xp, a, b):
    return xp.true_divide(a, b) if a.dtype.kind != "V" else _backend.in_float32(xp.true_divide, a, b)


@_div.derivative
def _(node, g):
    a, b = _conj_saved(node, g)
    fns = node._fns_saved  # as in mul's rule
    to_a, to_b = fns[0], fns[1]
    return (None if to_a is None else g / b), (None if to_b is None else -g * a / (b * b))


@defop("pow", saves=(0, 1), saves_output=True)
def _pow(xp, a, b):
    try:
        out = xp.power(a, b)
    except ValueError:  # numpy refuses integers to negative integer powers
        if a.dtype.kind not in "iu":
            raise
        return _integer_power(xp, a, b)
    # numpy widens bool ** bool to int8; PyTorch keeps bool.
    return out.astype(bool) if a.dtype.kind == "b" and out.dtype.kind != "b" else out


def _integer_power(xp, a, b):
    """``a ** b`` for integer arrays with negative exponents, as PyTorch computes them: the
    truncated reciprocal, so 0 except for bases 1 (1) and -1 (+-1 by the exponent's parity)."""
    negative = b < 0
    out = xp.power(a, xp.where(negative, 0, b))
    reciprocal = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0))
    return xp.where(negative, reciprocal, out).astype(out.dtype, copy=False)


@_pow.derivative
def _(node, g):
    if g._data.dtype.kind == "c":  # PyTorch's convention: the local derivatives conjugated
        return tuple(None if d is None else d.conj() for d in _pow_derivative(node, g.conj()))
    return _pow_derivative(node, g)


def _pow_derivative(node, g):
    a, b = node.saved
    needs_a, needs_b = node.needs_input_grad
    # PyTorch's conventions at the singular points: x ** 0 has zero gradient everywhere,
    # and 0 ** b (b >= 0) has zero gradient with respect to b.
    ga = gb = None
    if needs_a:
        ga = g * b * a ** (b - 1)
        if _dispatch.is_tensor(b):
            ga = where(b == 0, 0.0, ga)
        elif b == 0:
            ga = zeros_like_grad(ga)
    if needs_b:
        gb = where((a == 0) & _nonnegative_real(b), 0.0, g * node.output * log(a))
    return ga, gb


def _nonnegative_real(b):
    """``b >= 0``; a complex ``b`` must also have no imaginary part (PyTorch's pow_backward_exponent)."""
    if b.dtype.is_complex:
        return (b.real >= 0) & (b.imag == 0)
    return b >= 0


@defop("maximum", saves=(0, 1))
def _maximum(xp, a, b):
    if a.dtype.kind == "c":  # apply_binary has already brought both operands to one kind
        raise RuntimeError("maximum not implemented for complex tensors.")
    return xp.maximum(a, b)


@defop("minimum", saves=(0, 1))
def _minimum(xp, a, b):
    if a.dtype.kind == "c":
        raise RuntimeError("minimum not implemented for complex tensors.")
    return xp.minimum(a, b)


def _minmax_derivative(node, g, a_wins):
    # Ties split the gradient evenly between both inputs, as in PyTorch.
    a, b = node.saved
    share_a = where(a == b, 0.5, where(a_wins, 1.0, 0.0)).to(g.dtype)
    return g * share_a, g * (1 - share_a)


_maximum.derivative(lambda node, g: _minmax_derivative(node, g, node.saved[0] > node.saved[1]))
_minimum.derivative(lambda node, g: _minmax_derivative(node, g, node.saved[0] < node.saved[1]))


def check_integer_divisor(xp, a, b) -> None:
    """Raise PyTorch's ``RuntimeError("ZeroDivisionError")`` for an integer division (``a`` and
    ``b`` of one integer dtype) by zero, where numpy returns 0 with a warning."""
    if a.dtype.kind in "iu":
        zero = b == 0  # a Python bool when ``b`` is a Python number
        if zero if type(zero) is bool else zero.any():
            raise RuntimeError("ZeroDivisionError")


@defop("remainder", saves=(0, 1))
def _remainder(xp, a, b):
    check_integer_divisor(xp, a, b)
    return xp.remainder(a, b)


@_remainder.derivative
def _(node, g):
    a, b = node.saved
    return g, -g * floor_divide(a, b)


@defop("floor_divide")
def _floor_divide(xp, a, b):
    check_integer_divisor(xp, a, b)
    return xp.floor_divide(a, b)


_floor_divide.derivative(lambda node, g: (zeros_like_grad(g), zeros_like_grad(g)))


@defop("trunc_divide")
def _trunc_divide(xp, a, b):
    if a.dtype.kind == "f":  # apply_binary has already brought both operands to one kind
        return xp.trunc(xp.true_divide(a, b))
    # Exact for integers (true division through a float would round large values).
    check_integer_divisor(xp, a, b)
    q = xp.floor_divide(a, b)
    return q + ((xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(q.dtype)


_trunc_divide.derivative(lambda node, g: (zeros_like_grad(g), zeros_like_grad(g)))


def add(input, other, *, alpha=1):
    """``input + alpha * other`` with broadcasting and PyTorch type promotion (``input`` may be a
    Python number when ``other`` is a Tensor)."""
    if isinstance(input, (int, float)):
        input = _dispatch.number_operand(input, other)
    if alpha != 1:
        other = other * alpha
    return _dispatch.apply_binary(_add, input, other)


# ``a + b``: add without ``alpha``, as a C function when compiled (binary_function).
add_operator = _dispatch.binary_function(_add)


def sub(input, other, *, alpha=1):
    """``input - alpha * other`` (``input`` may be a Python number when ``other`` is a Tensor).

    Raises:
        RuntimeError: for bool operands, as PyTorch does (use ``~`` or ``logical_xor``).
    """
    if isinstance(input, (int, float)):
        input = _dispatch.number_operand(input, other)
    if input._data.dtype.kind == "b" or other.__class__ is bool or (
            _dispatch.is_tensor(other) and other._data.dtype.kind == "b"):
        _bool_sub_error(input, other)
    if alpha != 1:
        other = other * alpha
    return _dispatch.apply_binary(_sub, input, other)


def _bool_sub_error(input, other):
    if input._data.dtype.kind == "b" and _dispatch.is_tensor(other) and other._data.dtype.kind == "b":
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                       "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")


mul = public(_dispatch.binary_function(_mul), "mul", "Elementwise product.")


def div(input, other, *, rounding_mode=None):
    """True division (integers give the default float dtype), or floor/trunc division;
    ``input`` may be a Python number when ``other`` is a Tensor.

    Raises:
        RuntimeError: for an unknown ``rounding_mode``, or an integer division by zero with one.
    """
    if isinstance(input, (int, float)):
        input = _dispatch.number_operand(input, other, rounding_mode is None)
    if rounding_mode is None:
        return _dispatch.apply_binary(_div, input, other, True)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        return _dispatch.apply_binary(_trunc_divide, input, other)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found {rounding_mode!r}")


def pow(input, exponent):
    """``input ** exponent``; either is a Tensor, the other may be a Python number.

    Raises:
        RuntimeError: for an integer or bool tensor to a negative Python int power, as PyTorch
            (a negative exponent tensor gives the truncated reciprocal instead: ``2 ** -1 == 0``).
    """
    if isinstance(input, (int, float)):
        input = _dispatch.number_operand(input, exponent)
    elif type(exponent) is int and exponent < 0 and input._data.dtype.kind in "iub":
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return _dispatch.apply_binary(_pow, input, exponent)


maximum = public(_dispatch.binary_function(_maximum), "maximum", "Elementwise maximum of two tensors.")
minimum = public(_dispatch.binary_function(_minimum), "minimum", "Elementwise minimum of two tensors.")
remainder = public(
    _dispatch.binary_function(_remainder), "remainder", "Python-style modulus (the result has the sign of ``other``).")
floor_divide = public(
    _dispatch.binary_function(_floor_divide), "floor_divide", "Division rounded towards negative infinity.")
