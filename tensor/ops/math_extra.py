"""More elementwise math and fused linear-algebra shorthands: inverse trigonometric and hyperbolic
functions, ``atan2``, ``lerp``, ``logaddexp``, ``hypot``, ``xlogy``, ``addmm`` and friends,
``outer``, ``cross``, ``kron``, ``trace``, NaN-aware reductions and closeness tests.

Unary functions are primitives (``_unary``: kernel and derivative side by side); everything else
is a composition of differentiable ops.
"""

from __future__ import annotations

import math

from .. import _autocast, _backend, _dispatch, _dtype
from .._typeinfo import finfo
from . import derivative_helpers, dtype_checks
from . import elementwise as _ew
from .comparison import where
from .diagonals import diagonal
from .edge_grads import float_operands, logit, sinc, xlogy
from .reduction import normalize_dims, wrap_dim
from .registry import defop, public
from .repeats import broadcast_tensors
from .unary import _unary

__all__ = [
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "tan",
    "sinh",
    "cosh",
    "log2",
    "log10",
    "exp2",
    "square",
    "sinc",
    "frac",
    "atan2",
    "arctan2",
    "lerp",
    "logaddexp",
    "logaddexp2",
    "hypot",
    "xlogy",
    "copysign",
    "addmm",
    "addbmm",
    "baddbmm",
    "addmv",
    "addr",
    "addcmul",
    "addcdiv",
    "outer",
    "ger",
    "cross",
    "trace",
    "kron",
    "nan_to_num",
    "nansum",
    "nanmean",
    "isclose",
    "allclose",
    "equal",
    "logit",
    "deg2rad",
    "rad2deg",
    "fmod",
]

_LN2, _LN10 = math.log(2.0), math.log(10.0)

asin = _unary("asin", lambda xp, a: xp.arcsin(a), lambda n, g: (g * (1 - n.saved[0] ** 2).rsqrt(),), saves=(0,))
acos = _unary("acos", lambda xp, a: xp.arccos(a), lambda n, g: (-g * (1 - n.saved[0] ** 2).rsqrt(),), saves=(0,))
atan = _unary("atan", lambda xp, a: xp.arctan(a), lambda n, g: (g / (1 + n.saved[0] ** 2),), saves=(0,))
asinh = _unary("asinh", lambda xp, a: xp.arcsinh(a), lambda n, g: (g * (n.saved[0] ** 2 + 1).rsqrt(),), saves=(0,))
# 1 / sqrt(z**2 - 1) would take the wrong branch for complex z with a negative real part.
acosh = _unary("acosh", lambda xp, a: xp.arccosh(a),
               lambda n, g: (g * (n.saved[0] - 1).rsqrt() * (n.saved[0] + 1).rsqrt(),), saves=(0,))
atanh = _unary("atanh", lambda xp, a: xp.arctanh(a), lambda n, g: (g / (1 - n.saved[0] ** 2),), saves=(0,))
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh
tan = _unary("tan", lambda xp, a: xp.tan(a), lambda n, g: (g * (1 + n.output * n.output),), saves_output=True)
sinh = _unary("sinh", lambda xp, a: xp.sinh(a), lambda n, g: (g * cosh(n.saved[0]),), saves=(0,))
cosh = _unary("cosh", lambda xp, a: xp.cosh(a), lambda n, g: (g * sinh(n.saved[0]),), saves=(0,))
log2 = _unary("log2", lambda xp, a: xp.log2(a), lambda n, g: (g / (n.saved[0] * _LN2),), saves=(0,))
log10 = _unary("log10", lambda xp, a: xp.log10(a), lambda n, g: (g / (n.saved[0] * _LN10),), saves=(0,))
exp2 = _unary("exp2", lambda xp, a: xp.exp2(a), lambda n, g: (g * n.output * _LN2,), saves_output=True)


def _frac(xp, a):
    if a.dtype.kind not in "fV":  # V: bfloat16 (ml_dtypes)
        raise dtype_checks.not_implemented_for("frac_cpu", _dtype.from_numpy_dtype(a.dtype))
    return a - xp.trunc(a)


frac = _unary("frac", _frac, lambda n, g: (g,), floats_only=False)


def _real_only(name, ufunc_name):
    """The kernel of ``xp.<ufunc_name>``, refusing complex arrays with PyTorch's error."""

    def kernel(xp, a):
        if a.dtype.kind == "c":
            raise RuntimeError(f"{name} is not supported for complex tensors.")
        return getattr(xp, ufunc_name)(a)

    return kernel


deg2rad = _unary("deg2rad", _real_only("deg2rad", "deg2rad"), lambda n, g: (g * (math.pi / 180),))
rad2deg = _unary("rad2deg", _real_only("rad2deg", "rad2deg"), lambda n, g: (g * (180 / math.pi),))


def square(input):
    """``input * input`` (integers stay integers, and bool becomes int64, as in PyTorch)."""
    if input.dtype is _dtype.bool_:
        input = input.to(_dtype.int64)
    return input * input


@defop("atan2", saves=(0, 1))
def _atan2(xp, a, b):
    return xp.arctan2(a, b)


@_atan2.derivative
def _(node, g):
    a, b = node.saved
    norm = a * a + b * b
    scale = g / where(norm == 0, 1.0, norm)  # a zero gradient at the origin, as in PyTorch
    return scale * b, -scale * a


atan2 = public(_dispatch.binary_function(_atan2, True), "atan2",
               "The angle of the point ``(other, input)``, elementwise, in ``[-pi, pi]``.")


arctan2 = atan2


@defop("copysign", saves=(0,), saves_output=True)
def _copysign(xp, a, b):
    return xp.copysign(a, b) if a.dtype.kind != "V" else _backend.in_float32(xp.copysign, a, b)


@_copysign.derivative
def _(node, g):
    (a,) = node.saved
    # d/da |a| sign(b) = out / a, and 0 at a == 0, as in PyTorch; ``b`` has a zero gradient.
    return where(a == 0, 0.0, g * node.output / where(a == 0, 1.0, a)), derivative_helpers.zeros_like_grad(g)


copysign = public(_dispatch.binary_function(_copysign, True), "copysign",
                  "``|input|`` with the sign of ``other`` (``-0.0`` counts as negative).")


@defop("fmod", saves=(0, 1))
def _fmod(xp, a, b):
    _ew.check_integer_divisor(xp, a, b)
    return xp.fmod(a, b) if a.dtype.kind != "V" else _backend.in_float32(xp.fmod, a, b)


@_fmod.derivative
def _(node, g):
    a, b = node.saved
    return g, -g * _ew.div(a, b, rounding_mode="trunc")


fmod = public(_dispatch.binary_function(_fmod), "fmod",
              "C's ``fmod``: the remainder with the sign of ``input``.\n\n"
              "Raises:\n    RuntimeError: for an integer division by zero, as PyTorch.")


def lerp(input, end, weight):
    """``input + weight * (end - input)``, computed from ``end`` when ``|weight| >= 0.5`` (as
    PyTorch) so that a weight of 1 gives ``end`` exactly."""
    if not _dispatch.is_tensor(weight):
        if abs(weight) < 0.5:
            return input + weight * (end - input)
        return end - (end - input) * (1 - weight)
    near_start = weight.abs() < 0.5
    return where(near_start, input + weight * (end - input), end - (end - input) * (1 - weight))


def logaddexp(input, other):
    """``log(exp(input) + exp(other))`` without overflow (complex inputs too)."""
    input, other = float_operands(input, other)
    if input.dtype.is_complex:  # shifted by the larger real part
        high = _ew.maximum(input.real, other.real)
    else:
        high = _ew.maximum(input, other)
    shift = where(high.isinf(), 0.0, high).detach()
    return ((input - shift).exp() + (other - shift).exp()).log() + shift


def logaddexp2(input, other):
    """``log2(2**input + 2**other)`` without overflow."""
    input, other = float_operands(input, other)
    return logaddexp(input * _LN2, other * _LN2) / _LN2


@defop("hypot", saves=(0, 1), saves_output=True)
def _hypot(xp, a, b):
    return xp.hypot(a, b) if a.dtype.kind != "V" else _backend.in_float32(xp.hypot, a, b)


@_hypot.derivative
def _(node, g):
    a, b = node.saved
    scale = g / node.output
    return scale * a, scale * b


hypot = public(_dispatch.binary_function(_hypot, True), "hypot",
               "``sqrt(input**2 + other**2)``, without overflow or underflow in the squares.")


def _scaled(t, factor):
    return t if factor == 1 else t * factor


@_autocast.as_op("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``; with ``beta=0`` the input is ignored (NaN too)."""
    product = _scaled(mat1.mm(mat2), alpha)
    return product + input * 0 if beta == 0 else product + _scaled(input, beta)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    product = _scaled(mat.matmul(vec), alpha)
    return product + input * 0 if beta == 0 else product + _scaled(input, beta)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    product = _scaled(outer(vec1, vec2), alpha)
    return product + input * 0 if beta == 0 else product + _scaled(input, beta)


@_autocast.as_op("baddbmm")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    product = _scaled(batch1.bmm(batch2), alpha)
    return product + input * 0 if beta == 0 else product + _scaled(input, beta)


@_autocast.as_op("addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]``."""
    product = _scaled(batch1.bmm(batch2).sum(0), alpha)
    return product + input * 0 if beta == 0 else product + _scaled(input, beta)


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    return input + _scaled(tensor1 * tensor2, value)


def _is_integral(d: _dtype.dtype) -> bool:
    return not (d.is_floating_point or d.is_complex)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``.

    Raises:
        RuntimeError: for integer or bool ``tensor1`` and ``tensor2`` (as PyTorch).
    """
    if _is_integral(tensor1.dtype) and _is_integral(tensor2.dtype):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2."
        )
    return input + _scaled(tensor1 / tensor2, value)


def outer(input, vec2):
    """The outer product of two 1-d tensors.

    Raises:
        RuntimeError: if either is not 1-d.
    """
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError(f"outer: expected 1-d vectors, got {input.ndim}-d and {vec2.ndim}-d")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


ger = outer


def cross(input, other, dim=None):
    """The 3-d cross product along ``dim`` (the first dim of size 3 when None).

    Raises:
        RuntimeError: if the dim does not have size 3 or the shapes do not broadcast.
    """
    if dim is None:
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input (shape {list(input.shape)})")
    a, b = broadcast_tensors(input, other) if input.shape != other.shape else (input, other)
    dim = wrap_dim(dim, a.ndim)
    if a.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[dim]} and {b.shape[dim]}"
        )
    return a.roll(-1, dim) * b.roll(-2, dim) - a.roll(-2, dim) * b.roll(-1, dim)


@_autocast.as_op("trace")
def trace(input):
    """The sum of a matrix's diagonal.

    Raises:
        RuntimeError: if the input is not 2-d.
    """
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return diagonal(input).sum()


def kron(input, other):
    """The Kronecker product (the block matrix of ``input[i] * other``) for any ranks."""
    ndim = max(input.ndim, other.ndim)
    shape_a = (1,) * (ndim - input.ndim) + input.shape
    shape_b = (1,) * (ndim - other.ndim) + other.shape
    a = input.reshape(tuple(x for s in shape_a for x in (s, 1)))
    b = other.reshape(tuple(x for s in shape_b for x in (1, s)))
    return (a * b).reshape(tuple(p * q for p, q in zip(shape_a, shape_b)))


@defop("nan_to_num", saves=(0,))
def _nan_to_num(xp, a, nan, posinf, neginf):
    if a.dtype.kind == "V":  # bfloat16, float8 (ml_dtypes): numpy's nan_to_num passes them through
        return xp.nan_to_num(a.astype("float32"), nan=nan, posinf=posinf, neginf=neginf).astype(a.dtype)
    return xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


_nan_to_num.derivative(lambda node, g: (where(node.saved[0].isfinite(), g, 0.0),))


def nan_to_num(input, nan: float = 0.0, posinf=None, neginf=None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (the dtype's extremes by
    default); for complex inputs in the real and imaginary parts separately."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        return input.clone()
    if input._data.dtype.kind == "V":  # the extremes of the dtype itself, not of float32
        limits = finfo(input.dtype)
        posinf = limits.max if posinf is None else posinf
        neginf = limits.min if neginf is None else neginf
    return _dispatch.apply_unary(_nan_to_num, input, (nan, posinf, neginf))


def nansum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """``sum`` with NaN treated as zero.

    Raises:
        RuntimeError: for a complex input, as PyTorch.
    """
    dtype_checks.refuse_complex(input, "nansum on CPU does not support complex inputs")
    x = where(input.isnan(), 0, input) if input.dtype.is_floating_point else input
    return x.sum(dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """``mean`` over the non-NaN elements.

    Raises:
        RuntimeError: for non-float inputs without a float ``dtype``.
    """
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"nanmean(): expected input to have floating point or complex dtype but got {input.dtype.name}"
        )
    dims = normalize_dims(dim, input.ndim, "nanmean")
    keep = ~input.isnan()
    return nansum(input, dims, keepdim) / keep.sum(dims, keepdim)


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (equal infinities are close).

    Raises:
        RuntimeError: if the dtypes differ.
    """
    if not _dispatch.is_tensor(other):
        other = _dispatch.scalar_tensor(other, input.dtype, input._device)
    elif input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.name} did not match {other.dtype.name}")
    a, b = input, other
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        a, b = a.to(_dtype.float64), b.to(_dtype.float64)
    finite = a.isfinite() & b.isfinite()
    a_f, b_f = where(finite, a, 0.0), where(finite, b, 0.0)  # no inf - inf
    close = (a == b) | (finite & ((a_f - b_f).abs() <= atol + rtol * b_f.abs()))
    if equal_nan:
        close = close | (a.isnan() & b.isnan())
    return close


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``input`` is close to ``other`` (``isclose`` everywhere)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other) -> bool:
    """True if both tensors have the same shape and elements."""
    return input.shape == other.shape and bool((input == other).all())
