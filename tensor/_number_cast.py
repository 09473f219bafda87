"""Python numbers as PyTorch converts them to a tensor's dtype (its ``checked_convert``): the
fills, bounds and values of ``fill_``, ``full``, setitem, ``clamp``, ``masked_fill``,
``index_fill`` and ``scatter``."""

from __future__ import annotations

import math

from . import _dtype, _typeinfo

__all__ = ["scalar_in_dtype"]


def scalar_in_dtype(value, d: _dtype.dtype):
    """A Python number as PyTorch converts it to dtype ``d`` (its ``checked_convert``): an int
    taken by an unsigned dtype down to minus its maximum wraps around (``-1`` is 255 for uint8);
    other numbers are returned as they are. None, bools and complex numbers pass unchecked.

    Raises:
        RuntimeError: "value cannot be converted to type uint8_t without overflow" for a finite
            number beyond ``d``'s range (an int beyond an integer dtype's, a float beyond a float
            dtype's largest value or outside an integer dtype's range, before truncation) or NaN
            for an integer dtype.
    """
    if type(value) is not int and type(value) is not float or d is _dtype.bool_:
        return value
    low, high = _scalar_range(d)
    if type(value) is int:
        if not low <= value <= high:
            raise _overflow(d)
        return value & high if value < 0 and not d.is_signed else value
    if not math.isfinite(value):  # inf and NaN fit only a float dtype
        fits = d.is_floating_point or d.is_complex
    else:  # floats never wrap: -1.0 does not fit uint8
        fits = (low if d.is_signed else 0) <= value <= high
    if not fits:
        raise _overflow(d)
    return value


def _overflow(d: _dtype.dtype) -> RuntimeError:
    return RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES.get(d.name, d.name)} without overflow")


def _scalar_range(d: _dtype.dtype) -> tuple:
    """The ints PyTorch converts to the non-bool dtype ``d`` without overflow, ``(low, high)``: for
    an unsigned dtype ``low`` is minus its maximum (negative ints wrap), for a float dtype
    ``(-max, max)``, which bounds finite floats too."""
    found = _SCALAR_RANGES.get(d)
    if found is None:
        if d.is_floating_point or d.is_complex:
            top = _typeinfo.finfo(d).max
            found = -top, top
        else:
            info = _typeinfo.iinfo(d)
            found = (info.min if info.min else -info.max), info.max
        _SCALAR_RANGES[d] = found
    return found


_SCALAR_RANGES: dict = {}  # _scalar_range's, by dtype (a dict: clamp calls it on its hot path)


# PyTorch names the C++ type in its overflow message.
_C_TYPE_NAMES = {
    "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
    "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
    "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
}
