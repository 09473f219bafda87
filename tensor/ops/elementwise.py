"""Elementwise ops: arithmetic, math functions, comparisons, logic and ``where``."""

from __future__ import annotations

import operator

from .. import _backend, _dispatch, _dtype
from .._autograd_hooks import grad_mode
from .._number_cast import scalar_in_dtype
from .registry import defop, public

__all__ = [
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "remainder", "floor_divide",
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "log1p", "expm1",
    "reciprocal", "sign", "floor", "ceil", "round", "trunc", "sigmoid", "relu", "clamp",
    "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "isnan", "isinf", "isfinite", "where", "clone",
]

# ---------------------------------------------------------------- binary arithmetic


# The arithmetic and comparison kernels run bfloat16 (ml_dtypes kind "V") operands through
# float32 (tensor/_backend.py ``in_float32``); other dtypes pay one attribute test.
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


def conj_if_complex(t):
    """``t.conj()`` for a complex tensor or Python complex number, else ``t``: derivatives of
    holomorphic ops conjugate (PyTorch's convention: the gradient of a real loss is dL/dx + i dL/dy)."""
    if type(t) is complex:
        return t.conjugate()
    return t.conj() if _dispatch.is_tensor(t) and t._data.dtype.kind == "c" else t


def _conj_saved(node, g):
    """``node.saved``, conjugated when the op ran in complex (only then is ``g`` complex)."""
    if g._data.dtype.kind != "c":
        return node.saved
    return tuple(conj_if_complex(t) for t in node.saved)


def _on_arrays(g) -> bool:
    """Whether a derivative may multiply ``g`` on arrays (``_product``): nothing is recorded (grad
    mode is off: a backward without ``create_graph``), nothing watches the dispatcher (no
    ``tensor.compile`` tracer, profiler or autocast region), and ``g`` is real floating point (no
    conjugation; bfloat16 and float8, kind "V", take the dispatcher's float32 detour)."""
    return (
        not grad_mode.enabled
        and _dispatch.tracer is None
        and _dispatch.profiler is None
        and _dispatch.autocast is None
        and g._data.dtype.kind == "f"
    )


def _product(g, b):
    """``g * b`` for a derivative under ``_on_arrays``, with ``b`` an array on ``g``'s device (from
    ``node.saved_data`` or ``node.output_data``) or a Python number: the kernel runs on the arrays
    and the result has no history. An array of another dtype goes through the dispatcher, which
    promotes as the forward did."""
    device = g._device
    backend = device._backend or device.backend
    gd = g._data
    if isinstance(b, (int, float)):
        b = backend.scalar_operand(b, gd.dtype)
    elif b.dtype is not gd.dtype and b.dtype != gd.dtype:
        return g * _dispatch.make(b, device)
    if device.index is None:  # as in the dispatcher: on the CPU, launch is the plain call
        out = gd * b
    else:
        out = backend.launch(device.index, backend.xp.multiply, gd, b)
    if type(out) is not backend.array_type:  # numpy makes the product of 0-d arrays a scalar
        out = backend.xp.asarray(out)
    return _dispatch.make(out, device)


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


def _times_output(node, g):
    """``g * node.output``, on arrays where ``_on_arrays`` allows (exp's derivative)."""
    return _product(g, node.output_data) if _on_arrays(g) else g * node.output


def zeros_like_grad(g):
    """Zeros shaped like ``g``: the derivative of piecewise-constant ops, as in PyTorch."""
    return g.new_zeros(g.shape)


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


# ---------------------------------------------------------------- unary math


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


def _relu(xp, a):
    kind = a.dtype.kind
    if kind not in "Vc":  # bfloat16/float8 (kind "V") run in float32; complex has no order
        return xp.maximum(a, 0)
    _refuse_complex_clamp(kind)
    return _backend.in_float32(xp.maximum, a, 0)


relu = _unary("relu", _relu, lambda n, g: (_relu_grad(g, n.output),), saves_output=True, floats_only=False)


def _relu_grad(g, output):
    if g.dtype is output.dtype:
        return _dispatch.apply(_threshold_backward, (g, output))
    return g * (output > 0)


def select_bits(xp, g, keep):
    """``g`` where the bool ``keep``, +0.0 elsewhere: a select, so a NaN or inf gradient at a
    dropped element gives 0 (as PyTorch's threshold and clamp backward), done as ``g``'s bits
    times the 0/1 mask (a multiply costs what ``g * mask`` does; ``where`` is 3x slower on
    random masks, and low precision is neither widened nor rounded)."""
    bits = _UNSIGNED_OF_SIZE.get(g.dtype.itemsize) if g.dtype.kind != "c" else None
    if bits is None:  # no unsigned integer as wide as complex128
        return xp.where(keep, g, xp.zeros((), g.dtype))
    return (g.view(bits) * keep).view(g.dtype)


_UNSIGNED_OF_SIZE = {1: "u1", 2: "u2", 4: "u4", 8: "u8"}


@defop("threshold_backward", saves=(1,))
def _threshold_backward(xp, g, output):
    """relu's gradient from its output: ``g`` except where ``output <= 0`` (kept at a NaN
    output, as PyTorch's threshold_backward)."""
    dropped = xp.less_equal(output, 0) if output.dtype.kind != "V" else _backend.in_float32(xp.less_equal, output, 0)
    return select_bits(xp, g, xp.logical_not(dropped, out=dropped))


@_threshold_backward.derivative
def _(node, gg):
    return _relu_grad(gg, node.saved[0]), None


def _refuse_complex_clamp(kind: str) -> None:
    if kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")


@defop("clamp", saves=(0,))
def _clamp(xp, a, low, high):
    kind = a.dtype.kind
    if kind not in "Vc":
        return xp.clip(a, low, high)
    _refuse_complex_clamp(kind)
    # bfloat16, float8: numpy would widen them to float32 beside a Python float
    return xp.clip(a.astype("float32"), low, high).astype(a.dtype)


@_clamp.derivative
def _(node, g):
    (a,) = node.saved
    low, high = node.params
    if g.dtype is not a.dtype or not isinstance(low, _NUMBER_BOUNDS) or not isinstance(high, _NUMBER_BOUNDS):
        if low is not None:
            g = g * (a >= low)
        return (g if high is None else g * (a <= high),)
    return (_dispatch.apply(_clamp_backward, (g, a), (low, high)),)


@defop("clamp_backward", saves=(1,))
def _clamp_backward(xp, g, a, low, high):
    """clamp's gradient: ``g`` where ``low <= a <= high`` (a bound may be None), 0 elsewhere and
    at NaN, selected as PyTorch does (a NaN or inf ``g`` at a clamped element gives 0)."""
    keep = None
    for compare, bound in ((xp.greater_equal, low), (xp.less_equal, high)):
        if bound is not None:
            inside = _backend.in_float32(compare, a, bound)
            keep = inside if keep is None else xp.logical_and(keep, inside, out=keep)
    return select_bits(xp, g, keep)


@_clamp_backward.derivative
def _(node, gg):
    return _dispatch.apply(_clamp_backward, (gg, node.saved[0]), node.params), None


def clamp(input, min=None, max=None):
    """Clamp every element into ``[min, max]``; either bound may be None. A number bound is
    first read in the input's dtype, as PyTorch: ``-1`` is 255 for uint8 (see ``scalar_in_dtype``).

    Raises:
        RuntimeError: if both bounds are None, tensor bounds do not broadcast with ``input``, or a
            number bound is out of the range of the input's dtype (float32's is not checked).
        NotImplementedError: for a complex input, as PyTorch.
    """
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    if type(min) not in _NUMBER_BOUNDS or type(max) not in _NUMBER_BOUNDS:
        if not _dispatch.is_tensor(min) and not _dispatch.is_tensor(max):  # numpy scalars, bools: Python numbers
            return clamp(input, _python_number(min), _python_number(max))
        input, min, max = _promote_bounds(input, min, max)
    else:
        if input._data.dtype.kind not in "fV" and (isinstance(min, float) or isinstance(max, float)):
            input = input.to(_dtype.get_default_dtype())
        if input.dtype not in _WIDE_FLOATS:  # off the hot path: only a float32 bound past 3.4e38 goes unchecked
            min, max = scalar_in_dtype(min, input.dtype), scalar_in_dtype(max, input.dtype)
    try:
        return _dispatch.apply_unary(_clamp, input, (min, max))
    except ValueError as exc:  # numpy's broadcast error for tensor bounds
        raise RuntimeError(str(exc)) from None


# Bounds that clamp's kernel takes as they are (a Python number, or None for no bound).
_NUMBER_BOUNDS = (int, float, type(None))


def _python_number(value):
    """A numpy scalar (or bool) bound as the Python number it holds: numpy's float64 would make
    a float32 result float64.

    Raises:
        TypeError: for a bound that is no number, as PyTorch.
    """
    if hasattr(value, "item"):
        value = value.item()
    if type(value) is bool:
        return int(value)
    if type(value) not in _NUMBER_BOUNDS:
        raise TypeError(f"clamp(): argument 'min'/'max' must be Number or Tensor, not {type(value).__name__}")
    return value


_WIDE_FLOATS = (_dtype.float32, _dtype.float64)


def _promote_bounds(input, min, max):  # noqa: A002 - clamp's names
    """``input`` and the bounds of ``clamp``, when a bound is a Tensor, in their promoted dtype,
    as PyTorch (``clamp(int_tensor, min=float_tensor)`` is a float tensor)."""
    bounds = [b for b in (min, max) if _dispatch.is_tensor(b)]
    target = input.dtype
    for bound in bounds:
        target = _dtype.result_type(target, input.ndim, bound.dtype, bound.ndim)
    return tuple(t.to(target) if _dispatch.is_tensor(t) else t for t in (input, min, max))


# ---------------------------------------------------------------- comparisons and logic


def not_implemented_for(kernel_name: str, d: _dtype.dtype) -> NotImplementedError:
    """PyTorch's error for a kernel that has no implementation for dtype ``d``
    (``"lt_cpu" not implemented for 'ComplexFloat'``)."""
    return NotImplementedError(f'"{kernel_name}" not implemented for \'{_dtype.scalar_type_name(d)}\'')


def check_integral(kernel_name: str, array) -> None:
    """Raise PyTorch's ``NotImplementedError`` for an integer-only kernel (bitwise ops, shifts,
    ``gcd``) given a floating or complex array (its inputs' promoted dtype)."""
    if array.dtype.kind in "fcV":
        raise not_implemented_for(kernel_name, _dtype.from_numpy_dtype(array.dtype))


def refuse_complex(input, message: str) -> None:
    """Raise PyTorch's ``RuntimeError(message)`` for an op that orders values (complex numbers
    have no order) given a complex tensor."""
    if input.dtype.is_complex:
        raise RuntimeError(message)


def refuse_complex_kernel(input, kernel_name: str) -> None:
    """Raise PyTorch's ``NotImplementedError`` naming ``kernel_name`` for an op that orders values
    given a complex tensor."""
    if input.dtype.is_complex:
        raise not_implemented_for(kernel_name, input.dtype)


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


def _invert(xp, a):
    check_integral("bitwise_not", a)
    return xp.invert(a)


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
logical_not = _unary("logical_not", lambda xp, a: xp.logical_not(a), floats_only=False)
bitwise_not = _unary("bitwise_not", _invert, floats_only=False)
isnan = _unary("isnan", lambda xp, a: xp.isnan(a), floats_only=False)
isinf = _unary("isinf", lambda xp, a: xp.isinf(a), floats_only=False)
isfinite = _unary("isfinite", lambda xp, a: xp.isfinite(a), floats_only=False)


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
