"""relu and clamp, and the backward ops that select their gradients rather than multiply them
(``threshold_backward``, ``clamp_backward``, ``select_bits``): as PyTorch's, a NaN or inf gradient
at a dropped element gives 0."""

from __future__ import annotations

from .. import _backend, _dispatch, _dtype
from .._number_cast import scalar_in_dtype
from .registry import defop
from .unary import _unary

__all__ = ["relu", "clamp"]


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
