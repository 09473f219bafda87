"""PyTorch's remaining everyday tensor functions, as aliases and compositions of differentiable ops:
long names of existing ops, stacking and splitting helpers, predicates, NaN-aware extrema."""

from __future__ import annotations

import operator
from collections import namedtuple

from .. import _dispatch, _dtype
from . import clamping, comparison, dtype_checks, unary
from . import elementwise as _ew
from . import join_split as _join_split
from . import reduction as _red
from .comparison import where
from .complex_ops import imag
from .diagonals import _diagonal_scatter, diag_embed, diagonal
from .layout import atleast_1d, atleast_2d, atleast_3d
from .math_extra import float_operands
from .reduction import wrap_dim
from .registry import defop, public

__all__ = [
    "gcd",
    "lcm",
    "frexp",
    "nextafter",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "select_scatter",
    "slice_scatter",
    "absolute",
    "clip",
    "divide",
    "multiply",
    "subtract",
    "negative",
    "positive",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "true_divide",
    "fix",
    "rsub",
    "sgn",
    "float_power",
    "concat",
    "concatenate",
    "vstack",
    "row_stack",
    "hstack",
    "dstack",
    "column_stack",
    "ravel",
    "clamp_min",
    "clamp_max",
    "aminmax",
    "std_mean",
    "var_mean",
    "take_along_dim",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "signbit",
    "heaviside",
    "fmax",
    "fmin",
    "ldexp",
    "isin",
    "isneginf",
    "isposinf",
    "isreal",
    "is_floating_point",
    "is_nonzero",
    "is_same_size",
    "is_conj",
    "is_neg",
    "is_signed",
    "resolve_conj",
    "resolve_neg",
    "diagflat",
    "diagonal_scatter",
]

absolute, clip, divide, multiply, subtract, negative = unary.abs, clamping.clamp, _ew.div, _ew.mul, _ew.sub, unary.neg
sgn = unary.sgn
greater, greater_equal, less, less_equal, not_equal = (
    comparison.gt, comparison.ge, comparison.lt, comparison.le, comparison.ne)
fix, concat, concatenate = unary.trunc, _join_split.cat, _join_split.cat
_aminmax = namedtuple("aminmax", ["min", "max"])


def positive(input):
    """``input`` itself."""
    return input


def true_divide(dividend, divisor):
    """``div`` without rounding."""
    return _ew.div(dividend, divisor)


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (``other`` may be a Python number), in the promoted dtype.

    Raises:
        RuntimeError: for bool operands, as ``sub``.
    """
    if not _dispatch.is_tensor(other):
        other = _dispatch.number_operand(other, input)
    return _ew.sub(other, input, alpha=alpha)


def float_power(input, exponent):
    """``input ** exponent`` computed in float64, or complex128 when either is complex; either
    may be a Python number."""
    dtype = _dtype.complex128 if _is_complex(input) or _is_complex(exponent) else _dtype.float64
    device = input._device if _dispatch.is_tensor(input) else exponent._device
    base, power = (t.to(dtype) if _dispatch.is_tensor(t) else _dispatch.scalar_tensor(t, dtype, device)
                   for t in (input, exponent))
    return _ew.pow(base, power)


def _is_complex(operand) -> bool:
    """Whether a Tensor or Python number is complex."""
    return operand.dtype.is_complex if _dispatch.is_tensor(operand) else isinstance(operand, complex)


def vstack(tensors):
    """Concatenate along dim 0 after making each input at least 2-d."""
    return _join_split.cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack


def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-d inputs)."""
    tensors = [atleast_1d(t) for t in tensors]
    return _join_split.cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def dstack(tensors):
    """Concatenate along dim 2 after making each input at least 3-d."""
    return _join_split.cat([atleast_3d(t) for t in tensors], 2)


def column_stack(tensors):
    """Stack 0-/1-d inputs as columns, and concatenate 2-d ones, along dim 1."""
    return _join_split.cat([t.reshape(-1, 1) if t.ndim < 2 else t for t in tensors], 1)


def ravel(input):
    """The flattened input (a view when possible)."""
    return input.reshape(-1)


def clamp_min(input, min):  # noqa: A002 - PyTorch's name
    """``clamp(input, min=min)``."""
    return clamping.clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    """``clamp(input, max=max)``."""
    return clamping.clamp(input, max=max)


def aminmax(input, *, dim=None, keepdim: bool = False):
    """``(amin, amax)`` over ``dim`` (all elements by default).

    Raises:
        NotImplementedError: for a complex input, as PyTorch.
    """
    dtype_checks.refuse_complex_kernel(input, "aminmax_cpu")
    dims = () if dim is None else dim
    return _aminmax(_red.amin(input, dims, keepdim), _red.amax(input, dims, keepdim))


def std_mean(input, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    """``(std, mean)`` over ``dim``, with ``std``'s arguments (its legacy ``unbiased`` forms too).

    Raises:
        TypeError: if both ``unbiased`` and ``correction`` are given.
        RuntimeError: for integer and bool inputs.
    """
    std = _red.std(input, dim, unbiased, keepdim, correction=correction)
    return std, _red.mean(input, _mean_dim(dim), keepdim)


def var_mean(input, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    """``(var, mean)`` over ``dim``, with ``var``'s arguments (its legacy ``unbiased`` forms too).

    Raises:
        TypeError: if both ``unbiased`` and ``correction`` are given.
        RuntimeError: for integer and bool inputs.
    """
    var = _red.var(input, dim, unbiased, keepdim, correction=correction)
    return var, _red.mean(input, _mean_dim(dim), keepdim)


def _mean_dim(dim):
    """The ``dim`` of the mean beside a var/std call: none in its legacy form ``(input, unbiased)``."""
    return None if isinstance(dim, bool) else dim


def take_along_dim(input, indices, dim=None):
    """``gather`` with broadcasting of the index (the flattened input when ``dim`` is None); along a
    ``dim``, negative indices count from its end, as in PyTorch.

    Raises:
        RuntimeError: for an index out of range.
    """
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    dim = wrap_dim(dim, input.ndim)
    indices = comparison.where(indices < 0, indices + input.shape[dim], indices)
    shape = [max(a, b) if i != dim else b for i, (a, b) in enumerate(zip(input.shape, indices.shape))]
    source = input.expand([s if i != dim else input.shape[dim] for i, s in enumerate(shape)])
    return source.gather(dim, indices.expand(shape))


def tensor_split(input, indices_or_sections=None, dim: int = 0, *, indices=None, sections=None,
                 tensor_indices_or_sections=None):
    """Split along ``dim`` into ``sections`` nearly equal parts (an int or a 0-d integer tensor),
    or at ``indices`` (a sequence or 1-d integer tensor, negative ones counted from the end as in
    Python slicing). The split is given positionally or by one of its PyTorch keyword names.

    Raises:
        RuntimeError: for a 0-d input, fewer than one section, or a non-integer or >1-d tensor.
        TypeError: unless exactly one form of the split is given.
    """
    given = [a for a in (indices_or_sections, indices, sections, tensor_indices_or_sections) if a is not None]
    if len(given) != 1:
        raise TypeError("tensor_split() takes exactly one of indices_or_sections, indices, sections "
                        "and tensor_indices_or_sections")
    split = _split_argument(given[0])
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    if isinstance(split, int):
        if split <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {split}")
        bounds = [i * (size // split) + min(i, size % split) for i in range(split + 1)]
    else:
        bounds = [0, *(_slice_bound(i, size) for i in split), size]
    return tuple(input.narrow(dim, lo, max(0, hi - lo)) for lo, hi in zip(bounds[:-1], bounds[1:]))


def _split_argument(split):
    """``tensor_split``'s split as an int (sections) or a list of ints (indices)."""
    if not _dispatch.is_tensor(split):
        return [int(i) for i in split] if isinstance(split, (list, tuple)) else operator.index(split)
    if split.dtype is not _dtype.int64:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, "
                           f"but got {_dtype.scalar_type_name(split.dtype)}")
    if split.ndim > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                           f"one-dimensional tensor, but got a tensor with {split.ndim} dims")
    return split.item() if split.ndim == 0 else split.tolist()


def _slice_bound(index: int, size: int) -> int:
    """A split index as a Python slice bound: negative from the end, clipped to ``[0, size]``."""
    if index < 0:
        index += size
    return min(max(index, 0), size)


def _split_by_name(name: str, input, sections, dim: int):
    """``hsplit``/``vsplit``/``dsplit``: ``tensor_split`` along ``dim``, with PyTorch's checks."""
    min_ndim = {"hsplit": 1, "vsplit": 2, "dsplit": 3}[name]
    if input.ndim < min_ndim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_ndim} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections != 0):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                           f"dimension {input.shape[dim]} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input, sections):
    """``tensor_split`` along dim 1 (dim 0 for 1-d inputs); an int must divide that dim.

    Raises:
        RuntimeError: for a 0-d input or sections that do not divide the dim.
    """
    return _split_by_name("hsplit", input, sections, 1 if input.ndim > 1 else 0)


def vsplit(input, sections):
    """``tensor_split`` along dim 0; an int must divide that dim.

    Raises:
        RuntimeError: for an input of fewer than 2 dims or sections that do not divide the dim.
    """
    return _split_by_name("vsplit", input, sections, 0)


def dsplit(input, sections):
    """``tensor_split`` along dim 2; an int must divide that dim.

    Raises:
        RuntimeError: for an input of fewer than 3 dims or sections that do not divide the dim.
    """
    return _split_by_name("dsplit", input, sections, 2)


@defop("signbit", differentiable=False)
def _signbit(xp, a):
    return xp.signbit(a)


def signbit(input):
    """True where the sign bit is set (also for -0.0)."""
    return _dispatch.apply_unary(_signbit, input)


def heaviside(input, values):
    """0 for negative, ``values`` at 0, 1 for positive elements.

    Raises:
        RuntimeError: for complex inputs, as PyTorch.
    """
    dtype_checks.refuse_complex(input, "heaviside is not yet implemented for complex tensors.")
    dtype_checks.refuse_complex(values, "heaviside is not yet implemented for complex tensors.")
    return where(input == 0, values.to(input.dtype), (input > 0).to(input.dtype))


def fmax(input, other):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN); at ties the gradient
    goes to ``input``, as in PyTorch.

    Raises:
        RuntimeError: for complex inputs, as PyTorch.
    """
    _refuse_complex_operands("fmax", input, other)
    return where((input >= other) | other.isnan(), input, other)


def fmin(input, other):
    """Elementwise minimum that ignores NaN; at ties the gradient goes to ``input`` (errors as
    ``fmax``)."""
    _refuse_complex_operands("fmin", input, other)
    return where((input <= other) | other.isnan(), input, other)


def _refuse_complex_operands(name, input, other):
    for operand in (input, other):
        dtype_checks.refuse_complex(operand, f"{name} not implemented for complex tensors.")


def ldexp(input, other):
    """``input * 2 ** other``, in the promoted dtype of both (the default float for integers)."""
    input, other = float_operands(input, other)
    return input * _ew.pow(2.0, other)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """True where an element of ``elements`` occurs in ``test_elements``.

    Raises:
        RuntimeError: for complex elements, as PyTorch.
    """
    test = (
        test_elements.reshape(-1)
        if _dispatch.is_tensor(test_elements)
        else elements.new_tensor(test_elements).reshape(-1)
    )
    for operand in (elements, test):
        if operand.dtype.is_complex:
            type_name = _dtype.scalar_type_name(operand.dtype)
            raise RuntimeError(f"Unsupported input type encountered for isin(): {type_name}")
    hit = (elements.unsqueeze(-1) == test).any(-1)
    return ~hit if invert else hit


def isneginf(input):
    """True at -inf.

    Raises:
        RuntimeError: for a complex input, as PyTorch.
    """
    dtype_checks.refuse_complex(input, "isneginf does not support complex inputs.")
    return input.isinf() & (input < 0)


def isposinf(input):
    """True at +inf.

    Raises:
        RuntimeError: for a complex input, as PyTorch.
    """
    dtype_checks.refuse_complex(input, "isposinf does not support complex inputs.")
    return input.isinf() & (input > 0)


def isreal(input):
    """True where the imaginary part is 0 (everywhere for real dtypes)."""
    if input.dtype.is_complex:
        return imag(input) == 0
    return input.new_ones(input.shape, dtype=_dtype.bool_)


def is_floating_point(input) -> bool:
    """True for floating dtypes.

    Raises:
        TypeError: if ``input`` is not a Tensor, as PyTorch.
    """
    if not _dispatch.is_tensor(input):
        raise TypeError(
            f"is_floating_point(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.is_floating_point()


def is_nonzero(input) -> bool:
    """The truth value of a one-element tensor.

    Raises:
        RuntimeError: unless the tensor has exactly one element.
    """
    if input.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with {input.numel()} values is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input, other) -> bool:
    """True if both tensors have the same shape."""
    return input.shape == other.shape


def is_conj(input) -> bool:
    """Always False: conjugation is never lazy here."""
    return False


def is_neg(input) -> bool:
    """Always False: negation is never lazy here."""
    return False


def is_signed(input) -> bool:
    """True for signed dtypes."""
    return input.dtype.is_signed


def resolve_conj(input):
    """``input`` itself (conjugation is never lazy here)."""
    return input


resolve_neg = resolve_conj


def diagflat(input, offset: int = 0):
    """The flattened input on diagonal ``offset`` of a square matrix."""
    return diag_embed(input.reshape(-1), offset)


def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """``input`` with its diagonal ``offset`` of planes ``(dim1, dim2)`` replaced by ``src``."""
    d1, d2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    ones = diagonal(input.new_ones(input.shape), offset, d1, d2)
    mask = _dispatch.apply_unary(_diagonal_scatter, ones, (input.shape, offset, d1, d2)) != 0
    placed = _dispatch.apply_unary(_diagonal_scatter, src.to(input.dtype), (input.shape, offset, d1, d2))
    return where(mask, placed, input)


def _integer_binary(name, kernel):
    op = defop(name, differentiable=False)(kernel)
    doc = f"Elementwise ``{name}`` of integers (numpy's ``{kernel.__name__}``)."
    return public(_dispatch.binary_function(op), name, doc)


def _gcd_kernel(xp, a, b):
    dtype_checks.check_integral("gcd", a)
    return xp.gcd(a, b)


def _lcm_kernel(xp, a, b):
    dtype_checks.check_integral("lcm", a)
    return xp.lcm(a, b)


def _left_shift_kernel(xp, a, b):
    dtype_checks.check_integral("lshift", a)
    return xp.left_shift(a, b)


def _right_shift_kernel(xp, a, b):
    dtype_checks.check_integral("rshift", a)
    return xp.right_shift(a, b)


gcd = _integer_binary("gcd", _gcd_kernel)
lcm = _integer_binary("lcm", _lcm_kernel)
bitwise_left_shift = _integer_binary("bitwise_left_shift", _left_shift_kernel)
bitwise_right_shift = _integer_binary("bitwise_right_shift", _right_shift_kernel)


@defop("nextafter", differentiable=False)
def _nextafter(xp, a, b):
    return xp.nextafter(a, b)


nextafter = public(_dispatch.binary_function(_nextafter), "nextafter",
                   "The next floating-point value after ``input`` towards ``other``.")


_frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


@defop("frexp", differentiable=False)
def _frexp(xp, a):
    mantissa, exponent = xp.frexp(a)
    return xp.stack([mantissa, exponent.astype(a.dtype)])


def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent`` and ``0.5 <= |mantissa| < 1``.

    Raises:
        RuntimeError: for non-float inputs, as PyTorch.
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype.name}")
    packed = _dispatch.apply_unary(_frexp, input)
    return _frexp_result(packed[0], packed[1].to(_dtype.int32))


def select_scatter(input, src, dim: int, index: int):
    """``input`` with the slice ``index`` along ``dim`` replaced by ``src``."""
    dim = wrap_dim(dim, input.ndim)
    key = (slice(None),) * dim + (index,)
    return input.index_put(key, src.to(input.dtype))


def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1):
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``."""
    dim = wrap_dim(dim, input.ndim)
    key = (slice(None),) * dim + (slice(start, end, step),)
    return input.index_put(key, src.to(input.dtype))
