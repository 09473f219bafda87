"""Activation primitives for ``nn``: leaky_relu, elu, hardtanh, silu and mish, and ``log1pexp``
(softplus) that losses build on.

Each is one graph node with its derivative beside it, as in PyTorch, so that the in-place
forms in ``nn.functional`` record as one in-place op (Note [In-place activations]).

Note [In-place activations]
    ``nn.functional.leaky_relu(x, inplace=True)`` and the other in-place activations run
    their op through ``tensor._inplace.commit``, like ``Tensor.relu_``: the op gets a copy of
    ``x``'s old values, its result is written into ``x``, and ``x`` takes the op's node as its
    history. Writing an out-of-place composition back with ``x.copy_(...)`` instead leaves the
    composition's saved ``x`` stale, and backward refuses it ("modified by an inplace
    operation"). The derivatives read the input, as PyTorch's out-of-place rules do; since
    the in-place form hands the op a copy, that input is never stale. PyTorch's
    ``leaky_relu_`` and ``elu_`` read their result instead, which saves nothing here (the copy
    exists either way) and is why PyTorch refuses them with a negative slope or alpha at
    backward; here they work.
"""

from __future__ import annotations

from .. import _backend, _dispatch
from . import clamping, comparison, unary
from .registry import defop
from .special import _as_float, _via_float32
from .unary import _sigmoid_kernel

__all__: list[str] = []


@defop("leaky_relu", saves=(0,))
def _leaky_relu(xp, a, negative_slope):
    if a.dtype.kind == "V":  # numpy widens bfloat16 beside a Python float
        return _via_float32(_leaky_relu.kernel, xp, a, negative_slope)
    return xp.where(a > 0, a, a * negative_slope)


@_leaky_relu.derivative
def _(node, g):
    (a,) = node.saved
    (negative_slope,) = node.params
    return (comparison.where(a > 0, g, g * negative_slope),)


@defop("hardsigmoid", saves=(0,))
def _hardsigmoid(xp, a):
    if a.dtype.kind == "V":
        return _via_float32(_hardsigmoid.kernel, xp, a)
    return xp.clip(a + 3, 0, 6) / 6


@_hardsigmoid.derivative
def _(node, g):
    (a,) = node.saved
    return (comparison.where((a > -3) & (a < 3), g / 6, 0.0),)  # 0 at the bounds and at NaN, as PyTorch


def hardsigmoid(input):
    """``relu6(x + 3) / 6``; the gradient is ``1/6`` strictly inside ``(-3, 3)``, else 0."""
    return _dispatch.apply_unary(_hardsigmoid, _as_float(input))


@defop("hardswish", saves=(0,))
def _hardswish(xp, a):
    if a.dtype.kind == "V":
        return _via_float32(_hardswish.kernel, xp, a)
    return a * xp.clip(a + 3, 0, 6) / 6


@_hardswish.derivative
def _(node, g):
    (a,) = node.saved
    # PyTorch's hardswish_backward: 0 up to -3, ``x / 3 + 1/2`` inside, g from 3 on and at NaN.
    return (comparison.where(a <= -3, 0.0, comparison.where(a < 3, g * (a / 3 + 0.5), g)),)


def hardswish(input):
    """``x * relu6(x + 3) / 6``, with PyTorch's gradient (``g`` from 3 on and at NaN)."""
    return _dispatch.apply_unary(_hardswish, _as_float(input))


def leaky_relu(input, negative_slope: float = 0.01):
    """``x`` where positive, ``negative_slope * x`` elsewhere (integers become floats)."""
    return _dispatch.apply_unary(_leaky_relu, _as_float(input), (negative_slope,))


@defop("elu", saves=(0,))
def _elu(xp, a, alpha):
    if a.dtype.kind == "V":
        return _via_float32(_elu.kernel, xp, a, alpha)
    return xp.where(a > 0, a, alpha * xp.expm1(xp.minimum(a, 0)))


@_elu.derivative
def _(node, g):
    (a,) = node.saved
    (alpha,) = node.params
    # exp of the clamped input: the discarded branch must not overflow to inf (inf * 0 = nan).
    return (comparison.where(a > 0, g, g * alpha * unary.exp(clamping.clamp(a, max=0))),)


def elu(input, alpha: float = 1.0):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere (integers become floats)."""
    return _dispatch.apply_unary(_elu, _as_float(input), (alpha,))


# clamp's kernel; only the derivative differs.
_hardtanh = defop("hardtanh", saves=(0,))(clamping._clamp.kernel)


@_hardtanh.derivative
def _(node, g):
    (a,) = node.saved
    if g.dtype is not a.dtype:
        min_val, max_val = node.params
        return (g * (a > min_val) * (a < max_val),)
    return (_dispatch.apply(_hardtanh_backward, (g, a), node.params),)


@defop("hardtanh_backward", saves=(1,))
def _hardtanh_backward(xp, g, a, min_val, max_val):
    """hardtanh's gradient, selected as PyTorch's: 0 where ``a <= min_val`` or ``a >= max_val``
    (the bounds themselves included, where clamp passes it), ``g`` elsewhere and at NaN."""
    outside = _backend.in_float32(xp.less_equal, a, min_val)
    xp.logical_or(outside, _backend.in_float32(xp.greater_equal, a, max_val), out=outside)
    return clamping.select_bits(xp, g, xp.logical_not(outside, out=outside))


@_hardtanh_backward.derivative
def _(node, gg):
    return _dispatch.apply(_hardtanh_backward, (gg, node.saved[0]), node.params), None


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0):
    """Clamp into ``[min_val, max_val]``; the gradient is zero outside the open interval."""
    return _dispatch.apply_unary(_hardtanh, _as_float(input), (min_val, max_val))


@defop("silu", saves=(0,))
def _silu(xp, a):
    if a.dtype.kind == "V":
        return _via_float32(_silu.kernel, xp, a)
    return a * _sigmoid_kernel(xp, a)


@_silu.derivative
def _(node, g):
    (a,) = node.saved
    s = unary.sigmoid(a)
    return (g * s * (1 + a * (1 - s)),)


def silu(input):
    """``x * sigmoid(x)`` (swish), as one op (integers become floats)."""
    return _dispatch.apply_unary(_silu, _as_float(input))


@defop("mish", saves=(0,))
def _mish(xp, a):
    if a.dtype.kind == "V":
        return _via_float32(_mish.kernel, xp, a)
    return a * xp.tanh(xp.logaddexp(a, 0))


@_mish.derivative
def _(node, g):
    (a,) = node.saved
    t = unary.tanh(log1pexp(a))
    return (g * (t + a * unary.sigmoid(a) * (1 - t * t)),)


def log1pexp(input):
    """``log(1 + exp(x))`` (softplus without a threshold), for a tensor of floats: exact and finite
    for every ``x`` in every float dtype, and differentiable to any order with derivative
    ``sigmoid(x)``, 0.5 at 0.

    Computed as ``c + log1p(exp(x - 2c))`` with ``c = clamp(x, min=0)`` (``x - 2c = -|x|``, so
    ``exp`` cannot overflow). The usual ``relu(x) + log1p(exp(-|x|))`` has the same values but,
    with ``abs'(0) = relu'(0) = 0``, a derivative of 0 at ``x = 0``; clamp's derivative is 1 at
    its bound, which gives ``1 + sigmoid(0) * (1 - 2) = 0.5`` there, and 0.25 the second.
    """
    positive = clamping.clamp(input, min=0)
    return positive + unary.log1p(unary.exp(input - 2 * positive))


def mish(input):
    """``x * tanh(softplus(x))``, as one op (integers become floats)."""
    return _dispatch.apply_unary(_mish, _as_float(input))
