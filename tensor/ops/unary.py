"""Unary elementwise ops, made by one factory (``_unary``): math functions (exp, log, sqrt,
trigonometry, sigmoid, ...) with their derivatives, sign, rounding, ``clone``, and the predicates and
logic of one tensor (``isnan``, ``logical_not``, ``bitwise_not``, ...)."""

from __future__ import annotations

from .. import _dispatch, _dtype
from .comparison import where
from .derivative_helpers import _times_output, zeros_like_grad
from .dtype_checks import check_integral, not_implemented_for
from .registry import defop, public

__all__ = [
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "log1p", "expm1",
    "reciprocal", "sign", "floor", "ceil", "round", "trunc", "sigmoid", "logical_not", "bitwise_not",
    "isnan", "isinf", "isfinite", "clone",
]


def _unary(name, kernel, derivative=None, saves=(), saves_output=False, floats_only=True):
    """The public function of the elementwise op ``name``. With ``floats_only`` (a math function)
    integer and bool inputs are computed in the default float dtype, complex ones in complex, and
    ``derivative``, written ``g * f'(z)`` for real inputs, is conjugated for complex ones."""
    if derivative == "zero":
        # Piecewise constant: differentiable with a zero gradient, as in PyTorch.
        derivative = lambda n, g: (zeros_like_grad(g),)  # noqa: E731
    elif floats_only and derivative is not None:
        derivative = _holomorphic(derivative)
    op = defop(name, saves=saves, saves_output=saves_output,
               differentiable=derivative is not None)(kernel)
    if derivative is not None:
        op.derivative(derivative)

    def run(input):
        if floats_only and input._data.dtype.kind not in "fcV":  # V: bfloat16 (ml_dtypes)
            input = input.to(_dtype.get_default_dtype())
        return _dispatch.apply_unary(op, input)

    return public(run, name, f"Elementwise ``{name}``.")


def _holomorphic(derivative):
    """A unary op's ``derivative`` under PyTorch's complex convention: for a holomorphic ``f`` the
    gradient is ``g * conj(f'(z))``, which is ``conj(derivative(node, conj(g)))`` since the
    rule is linear in ``g``. Real gradients take the rule as it is."""

    def run(node, g):
        if g._data.dtype.kind != "c":
            return derivative(node, g)
        (grad,) = derivative(node, g.conj())
        return (grad.conj(),)

    return run


def _negative(xp, a):
    try:
        return xp.negative(a)
    except TypeError:  # numpy refuses bool, and so does PyTorch, with this error
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.") from None


def _sign(xp, a):
    kind = a.dtype.kind
    if kind == "b":  # numpy has no bool sign; PyTorch's is the identity
        return a.copy()
    if kind == "c":
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. "
                                  "Please use torch.sgn instead.")
    return xp.sign(a)


def sgn(input):
    """``sign`` (for complex inputs ``z / |z|``, 0 at 0)."""
    if input.dtype.is_complex:
        size = abs(input)
        return input / where(size == 0, 1.0, size).to(input.dtype) * (size != 0).to(input.dtype)
    return sign(input)


neg = _unary("neg", _negative, lambda n, g: (-g,), floats_only=False)
abs = _unary("abs", lambda xp, a: xp.abs(a), lambda n, g: (g * sgn(n.saved[0]),),
             saves=(0,), floats_only=False)
exp = _unary("exp", lambda xp, a: xp.exp(a), lambda n, g: (_times_output(n, g),), saves_output=True)
log = _unary("log", lambda xp, a: xp.log(a), lambda n, g: (g / n.saved[0],), saves=(0,))
sqrt = _unary("sqrt", lambda xp, a: xp.sqrt(a), lambda n, g: (g / (2 * n.output),),
              saves_output=True)
rsqrt = _unary("rsqrt", lambda xp, a: 1 / xp.sqrt(a),
               lambda n, g: (-0.5 * g * n.output ** 3,), saves_output=True)
sin = _unary("sin", lambda xp, a: xp.sin(a), lambda n, g: (g * cos(n.saved[0]),), saves=(0,))
cos = _unary("cos", lambda xp, a: xp.cos(a), lambda n, g: (-g * sin(n.saved[0]),), saves=(0,))
tanh = _unary("tanh", lambda xp, a: xp.tanh(a),
              lambda n, g: (g * (1 - n.output * n.output),), saves_output=True)
log1p = _unary("log1p", lambda xp, a: xp.log1p(a), lambda n, g: (g / (1 + n.saved[0]),),
               saves=(0,))
expm1 = _unary("expm1", lambda xp, a: xp.expm1(a), lambda n, g: (g * (n.output + 1),),
               saves_output=True)
reciprocal = _unary("reciprocal", lambda xp, a: xp.reciprocal(a),
                    lambda n, g: (-g * n.output * n.output,), saves_output=True)
clone = _unary("clone", lambda xp, a: a.copy(order="K"), lambda n, g: (g,), floats_only=False)
clone.__doc__ = "A copy with its own storage; gradients flow back to the input."
sign = _unary("sign", _sign, "zero", floats_only=False)


def _rounding_kernel(name: str):
    """The kernel of the rounding op ``name`` (the xp ufunc of that name): PyTorch's
    NotImplementedError for bool and complex inputs, where numpy would raise its own TypeError."""
    def kernel(xp, a):
        if a.dtype.kind in "bc":
            _refuse_rounding(name, a.dtype)
        return getattr(xp, name)(a)

    return kernel


def _refuse_rounding(name: str, np_dtype) -> None:
    if np_dtype.kind == "c" and name != "round":
        raise NotImplementedError(f"{name} is not supported for complex inputs")
    raise not_implemented_for(f"{name}_vml_cpu", _dtype.from_numpy_dtype(np_dtype))


floor = _unary("floor", _rounding_kernel("floor"), "zero", floats_only=False)
ceil = _unary("ceil", _rounding_kernel("ceil"), "zero", floats_only=False)
_round_to_integer = _unary("round", _rounding_kernel("round"), "zero", floats_only=False)


@defop("round_decimals")
def _round_decimals(xp, a, decimals):
    if a.dtype.kind == "V":  # bfloat16, float8 (ml_dtypes): rounded in float32
        return xp.round(a.astype("float32"), decimals).astype(a.dtype)
    return xp.round(a, decimals)


_round_decimals.derivative(lambda n, g: (zeros_like_grad(g),))


def round(input, *, decimals: int = 0):  # noqa: A001 - torch.round
    """Round to the nearest integer, halves to even; with ``decimals``, to that many decimal places
    (negative: to tens, hundreds, ...), as ``torch.round``. Its gradient is zero.

    Raises:
        NotImplementedError: for ``decimals`` other than 0 on an integer or bool tensor, as PyTorch.
    """
    if decimals == 0:
        return _round_to_integer(input)
    if input._data.dtype.kind not in "fcV":
        raise NotImplementedError(f"round with decimals={decimals} is not implemented for {input.dtype.name} tensors")
    return _dispatch.apply_unary(_round_decimals, input, (int(decimals),))


trunc = _unary("trunc", _rounding_kernel("trunc"), "zero", floats_only=False)


def _sigmoid_kernel(xp, a):
    if a.dtype.kind == "c":
        return 1 / (1 + xp.exp(-a))
    # exp(-|a|) never overflows; pick the matching branch per sign.
    e = xp.exp(-xp.abs(a))
    return xp.where(a >= 0, 1 / (1 + e), e / (1 + e))


sigmoid = _unary("sigmoid", _sigmoid_kernel,
                 lambda n, g: (g * n.output * (1 - n.output),), saves_output=True)


def _invert(xp, a):
    check_integral("bitwise_not", a)
    return xp.invert(a)


logical_not = _unary("logical_not", lambda xp, a: xp.logical_not(a), floats_only=False)
bitwise_not = _unary("bitwise_not", _invert, floats_only=False)
isnan = _unary("isnan", lambda xp, a: xp.isnan(a), floats_only=False)
isinf = _unary("isinf", lambda xp, a: xp.isinf(a), floats_only=False)
isfinite = _unary("isfinite", lambda xp, a: xp.isfinite(a), floats_only=False)
