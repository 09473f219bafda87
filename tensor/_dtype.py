"""Dtypes (``tensor.float32`` and friends) and PyTorch's type-promotion rules."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "result_type_of",
]


class dtype:
    """A tensor element type. Instances are interned: compare them with ``is`` or ``==``."""

    __slots__ = ("name", "numpy", "itemsize", "is_floating_point", "is_complex", "is_signed", "_category")

    def __init__(self, name: str, numpy_dtype: np.dtype, category: int) -> None:
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.itemsize = self.numpy.itemsize
        self.is_floating_point = category == _FLOAT
        self.is_complex = category == _COMPLEX
        self.is_signed = category >= _FLOAT or self.numpy.kind == "i"
        self._category = category

    def __repr__(self) -> str:
        return f"tensor.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_complex(self) -> dtype:
        """The complex dtype whose parts have this float dtype (itself for a complex dtype;
        float16 gives complex64, as there is no complex32 here).

        Raises:
            RuntimeError: for integer, bool and float8 dtypes, as PyTorch.
        """
        if self.is_complex:
            return self
        found = _COMPLEX_OF.get(self)
        if found is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type_name(self)}")
        return found

    def to_real(self) -> dtype:
        """The dtype of a complex dtype's parts (other dtypes give themselves)."""
        return _REAL_OF.get(self, self)


_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3

float16 = dtype("float16", np.float16, _FLOAT)
float32 = dtype("float32", np.float32, _FLOAT)
float64 = dtype("float64", np.float64, _FLOAT)
int8 = dtype("int8", np.int8, _INT)
int16 = dtype("int16", np.int16, _INT)
int32 = dtype("int32", np.int32, _INT)
int64 = dtype("int64", np.int64, _INT)
uint8 = dtype("uint8", np.uint8, _INT)
bool_ = dtype("bool", np.bool_, _BOOL)
complex64 = dtype("complex64", np.complex64, _COMPLEX)
complex128 = dtype("complex128", np.complex128, _COMPLEX)
# Note [Low-precision floats]: numpy has no bfloat16 or float8; the ml_dtypes package adds them as
# numpy dtypes (kind "V"), so CPU tensors of these types are plain numpy arrays. GEMMs and reductions
# run in float32 and round back (tensor/_backend.py ``matmul``, ``accumulate``), as PyTorch's CPU
# kernels accumulate bfloat16 in float32; so do pooling and col2im (Note [Low-precision pooling] in
# tensor/ops/pool.py). ml_dtypes' own ufuncs compute each element in float32 and round, ~8x slower
# than float32's: add/sub/mul/div and the comparisons take the same float32 route in whole-array
# passes (``_backend.in_float32``, bit-identical), as do relu and its backward's mask (the
# gradient itself is picked on its bits); other elementwise ufuncs run in the type itself.
# Under CPU autocast a convolution rounds its operands to bfloat16 and keeps them in float32 for
# its GEMM and backward, rounding only its result (Note [Autocast convolution] in
# nn/functional/conv.py).
# The float8 types are storage types, as in PyTorch: conversions and printing, no promotion with
# other dtypes.
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT)
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, _FLOAT)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, _FLOAT)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2)
LOW_PRECISION_NUMPY = frozenset(d.numpy for d in (bfloat16, *FLOAT8_DTYPES))
# The 16-bit floats that PyTorch's norms, softmax-like ops and losses compute in float32 (their
# squares and exponentials overflow float16 long before the result would).
HALF_FLOATS = (float16, bfloat16)
FLOAT8_NUMPY = frozenset(d.numpy for d in FLOAT8_DTYPES)


def check_not_float8(np_dtype, what: str) -> None:
    """Raise NotImplementedError, as PyTorch does, for GEMMs and reductions of a float8 type.

    Elementwise ops on float8 arrays run through ml_dtypes' ufuncs (PyTorch implements a few,
    such as ``mul`` and ``abs``, and refuses ``add``, ``neg`` and ``exp``)."""
    if np_dtype in FLOAT8_NUMPY:
        raise NotImplementedError(f"{what} is not implemented for {_FROM_NUMPY[np_dtype].name} (a storage "
                                  "type: convert to float32 or bfloat16 first)")


ALL_DTYPES = (
    float16, float32, float64, int8, int16, int32, int64, uint8, bool_, complex64, complex128,
    bfloat16, float8_e4m3fn, float8_e5m2,
)
_FROM_NUMPY = {d.numpy: d for d in ALL_DTYPES}
_NAMES = {d.name: d for d in ALL_DTYPES}
# PyTorch's aliases: tensor.float, tensor.double, tensor.long, ...
ALIASES = {
    "float": float32, "double": float64, "half": float16,
    "long": int64, "int": int32, "short": int16, "bool": bool_,
    "cfloat": complex64, "cdouble": complex128,
}
# PyTorch's C++ names of the dtypes (c10::ScalarType), which its error messages use.
_SCALAR_TYPE_NAMES = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
    "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
    "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
}


def scalar_type_name(d: dtype) -> str:
    """PyTorch's C++ name of ``d`` (``Float`` for float32), as its error messages say it."""
    return _SCALAR_TYPE_NAMES[d.name]


# The complex dtype whose parts are each float dtype (PyTorch's toComplexType), and back.
_COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}
_REAL_OF = {complex64: float32, complex128: float64}


def to_complex(d: dtype) -> dtype:
    """The complex dtype with parts of float dtype ``d`` (complex dtypes map to themselves)."""
    return d if d.is_complex else _COMPLEX_OF.get(d, _COMPLEX_OF[get_default_dtype()])


def to_real(d: dtype) -> dtype:
    """The float dtype of a complex dtype's parts (other dtypes map to themselves)."""
    return _REAL_OF.get(d, d)


def storage_name(np_dtype: np.dtype) -> str:
    """How a checkpoint records an array's dtype: numpy's ``dtype.str`` (``'<f4'``), except our
    name for the ml_dtypes types, whose ``dtype.str`` (``'<V2'``) does not say which they are."""
    return _FROM_NUMPY[np_dtype].name if np_dtype in LOW_PRECISION_NUMPY else np_dtype.str


def from_storage_name(text: str) -> np.dtype:
    """The numpy dtype ``storage_name`` recorded as ``text``."""
    found = _NAMES.get(text)
    return found.numpy if found is not None else np.dtype(text)


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
        TypeError: if ``d`` is not a floating ``tensor.dtype`` (names and Python types are refused,
            as PyTorch).
    """
    if not isinstance(d, dtype):
        raise TypeError(f"invalid dtype object {d!r}: only floating-point types are supported as the default type")
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _defaults.float_dtype = d


# PyTorch's dtypes of the Python number types (``dtype=float`` is float64, whatever the default)
_PYTHON_TYPES = {float: float64, int: int64, bool: bool_, complex: complex128}


def as_dtype(d) -> dtype:
    """Convert a dtype, numpy dtype, Python type or name to a ``tensor.dtype`` (the Python types
    ``float``, ``int``, ``bool`` and ``complex`` are float64, int64, bool and complex128, as in
    PyTorch).

    Raises:
        TypeError: naming the value when it is not a supported dtype.
    """
    if isinstance(d, dtype):
        return d
    found = _PYTHON_TYPES.get(d) if isinstance(d, type) else None
    if found is not None:
        return found
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
    (``int64`` with ``float16`` gives ``float16``); a complex type meets a float type at the
    complex type wide enough for both (``complex64`` with ``float64`` gives ``complex128``).

    Raises:
        TypeError: if ``a`` or ``b`` is neither a dtype nor a Python type (``float``: float64).
    """
    a, b = _PYTHON_TYPES.get(a, a), _PYTHON_TYPES.get(b, b)
    check_dtype_argument("promote_types", "type1", 1, a)
    check_dtype_argument("promote_types", "type2", 2, b)
    if a is b:
        return a
    if a in FLOAT8_DTYPES or b in FLOAT8_DTYPES:
        raise RuntimeError(f"Promotion for Float8 Types is not supported, attempted to promote {a.name} and {b.name}")
    if a is bfloat16 or b is bfloat16:
        return _promote_bfloat16(b if a is bfloat16 else a)
    if a._category != b._category:
        high, low = (a, b) if a._category > b._category else (b, a)
        if high._category == _COMPLEX and low._category == _FLOAT:
            return _FROM_NUMPY[np.promote_types(high.numpy, low.numpy)]
        return high
    return _FROM_NUMPY[np.promote_types(a.numpy, b.numpy)]


def check_dtype_argument(function: str, name: str, position: int, value) -> None:
    """Raise PyTorch's TypeError unless argument ``name`` of ``function`` is a dtype."""
    if not isinstance(value, dtype):
        raise TypeError(f"{function}(): argument '{name}' (position {position}) must be tensor.dtype, "
                        f"not {type(value).__name__}")


def _promote_bfloat16(other: dtype) -> dtype:
    """PyTorch's promotion of bfloat16 with ``other``: bfloat16 and float16 meet at float32."""
    if other._category < _FLOAT:
        return bfloat16
    if other is float16:
        return float32
    return other  # float32, float64 and the complex types hold every bfloat16


@functools.cache
def _result_type_cached(a: dtype, a_dimless: bool, b: dtype, b_dimless: bool) -> dtype:
    # PyTorch: zero-dim tensors only decide the type when their category is higher
    # than that of every tensor with dimensions.
    if a_dimless != b_dimless:
        dimmed, dimless = (b, a) if a_dimless else (a, b)
        if dimless._category > dimmed._category:
            # a 0-d complex tensor with a float tensor: the complex type of the float's width
            return to_complex(dimmed) if dimless.is_complex and dimmed.is_floating_point else dimless
        return dimmed
    return promote_types(a, b)


def result_type(a: dtype, a_ndim: int, b: dtype, b_ndim: int) -> dtype:
    """The result dtype of a binary op on two tensors with these dtypes and ranks."""
    return _result_type_cached(a, a_ndim == 0, b, b_ndim == 0)


def result_type_of(tensor, other) -> dtype:
    """``tensor.result_type``: the dtype an arithmetic op on ``tensor`` and ``other`` (each a Tensor
    or a Python number) gives, by PyTorch's rules (0-d tensors and Python numbers only lift the
    category).

    Raises:
        TypeError: if an operand is neither a Tensor nor a Python number.
        RuntimeError: for a float8 dtype with another dtype.
    """
    a_is_tensor, b_is_tensor = hasattr(tensor, "dtype"), hasattr(other, "dtype")
    if a_is_tensor and b_is_tensor:
        return result_type(tensor.dtype, tensor.ndim, other.dtype, other.ndim)
    if a_is_tensor or b_is_tensor:
        t, scalar = (tensor, other) if a_is_tensor else (other, tensor)
        return scalar_result_type(t.dtype, scalar)
    return scalar_result_type(scalar_result_type(bool_, tensor), other)


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
        return t if t.is_floating_point or t.is_complex else get_default_dtype()
    if isinstance(scalar, complex):
        return to_complex(t) if t.is_floating_point or t.is_complex else to_complex(get_default_dtype())
    raise TypeError(f"unsupported scalar type {type(scalar).__name__}")


def infer_dtype(np_dtype: np.dtype) -> dtype:
    """The dtype ``tensor.tensor(data)`` gives data that numpy parsed as ``np_dtype``.

    Python floats become the default float dtype, as in PyTorch.
    """
    if np_dtype.kind == "f" and np_dtype == np.float64:
        return get_default_dtype()
    if np_dtype.kind == "c" and np_dtype == np.complex128:  # Python complex numbers
        return to_complex(get_default_dtype())
    if np_dtype.kind in "iu" and np_dtype not in _FROM_NUMPY:
        return int64
    return from_numpy_dtype(np_dtype)
