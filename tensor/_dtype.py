"""Dtypes (``tensor.float32`` and friends) and PyTorch's type-promotion rules."""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["dtype", "get_default_dtype", "set_default_dtype", "promote_types", "result_type"]


class dtype:
    """A tensor element type. Instances are interned: compare them with ``is`` or ``==``."""

    __slots__ = ("name", "numpy", "itemsize", "is_floating_point", "is_signed", "_category")

    def __init__(self, name: str, numpy_dtype: np.dtype, category: int) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.itemsize = self.numpy.itemsize
        self.is_floating_point = category == _FLOAT
        self.is_signed = category == _FLOAT or self.numpy.kind == "i"
        self._category = category

    def __repr__(self) -> str:
        return f"tensor.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


_BOOL, _INT, _FLOAT = 0, 1, 2

float16 = dtype("float16", np.float16, _FLOAT)
float32 = dtype("float32", np.float32, _FLOAT)
float64 = dtype("float64", np.float64, _FLOAT)
int8 = dtype("int8", np.int8, _INT)
int16 = dtype("int16", np.int16, _INT)
int32 = dtype("int32", np.int32, _INT)
int64 = dtype("int64", np.int64, _INT)
uint8 = dtype("uint8", np.uint8, _INT)
bool_ = dtype("bool", np.bool_, _BOOL)

ALL_DTYPES = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
_FROM_NUMPY = {d.numpy: d for d in ALL_DTYPES}
_NAMES = {d.name: d for d in ALL_DTYPES}
# PyTorch's aliases: tensor.float, tensor.double, tensor.long, ...
ALIASES = {
    "float": float32, "double": float64, "half": float16,
    "long": int64, "int": int32, "short": int16, "bool": bool_,
}


def _by_name(name: str) -> dtype:
    return _NAMES[name]


class _Defaults:
    float_dtype = float32


_defaults = _Defaults()


def get_default_dtype() -> dtype:
    """Return the dtype that float data and float creation ops use (float32 unless changed)."""
    return _defaults.float_dtype


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype for the whole process.

    Raises:
        TypeError: if ``d`` is not a floating dtype.
    """
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _defaults.float_dtype = d


def as_dtype(d) -> dtype:
    """Convert a dtype, numpy dtype, Python type or name to a ``tensor.dtype``.

    Raises:
        TypeError: naming the value when it is not a supported dtype.
    """
    if isinstance(d, dtype):
        return d
    if d is float:
        return get_default_dtype()
    if d is int:
        return int64
    if d is bool:
        return bool_
    if isinstance(d, str):
        found = _NAMES.get(d) or ALIASES.get(d)
        if found is not None:
            return found
    else:
        try:
            found = _FROM_NUMPY.get(np.dtype(d))
        except TypeError:
            found = None
        if found is not None:
            return found
    supported = ", ".join(x.name for x in ALL_DTYPES)
    raise TypeError(f"unsupported dtype {d!r}; supported dtypes are {supported}")


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """Map a numpy dtype to ours; raises TypeError for kinds we do not support (e.g. complex)."""
    found = _FROM_NUMPY.get(np_dtype)
    if found is None:
        return as_dtype(np_dtype)
    return found


@functools.cache
def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to, following PyTorch.

    Unlike numpy, a float type wins over any integer type without widening
    (``int64`` with ``float16`` gives ``float16``).
    """
    if a is b:
        return a
    if a._category != b._category:
        return a if a._category > b._category else b
    return _FROM_NUMPY[np.promote_types(a.numpy, b.numpy)]


@functools.cache
def _result_type_cached(a: dtype, a_dimless: bool, b: dtype, b_dimless: bool) -> dtype:
    # PyTorch: zero-dim tensors only decide the type when their category is higher
    # than that of every tensor with dimensions.
    if a_dimless != b_dimless:
        dimmed, dimless = (b, a) if a_dimless else (a, b)
        if dimless._category > dimmed._category:
            return dimless
        return dimmed
    return promote_types(a, b)


def result_type(a: dtype, a_ndim: int, b: dtype, b_ndim: int) -> dtype:
    """The result dtype of a binary op on two tensors with these dtypes and ranks."""
    return _result_type_cached(a, a_ndim == 0, b, b_ndim == 0)


def scalar_result_type(t: dtype, scalar) -> dtype:
    """The result dtype of a tensor of dtype ``t`` combined with a Python scalar.

    A Python scalar never widens a tensor within its category; it only lifts
    the category (bool -> int64, integer -> the default float dtype).
    """
    if isinstance(scalar, bool):
        return t
    if isinstance(scalar, int):
        return int64 if t is bool_ else t
    if isinstance(scalar, float):
        return t if t.is_floating_point else get_default_dtype()
    raise TypeError(f"unsupported scalar type {type(scalar).__name__}")


def infer_dtype(np_dtype: np.dtype) -> dtype:
    """The dtype ``tensor.tensor(data)`` gives data that numpy parsed as ``np_dtype``.

    Python floats become the default float dtype, as in PyTorch.
    """
    if np_dtype.kind == "f" and np_dtype == np.float64:
        return get_default_dtype()
    if np_dtype.kind in "iu" and np_dtype not in _FROM_NUMPY:
        return int64
    return from_numpy_dtype(np_dtype)
