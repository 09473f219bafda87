"""``tensor.testing``: ``assert_close`` and ``make_tensor``, as ``torch.testing``, for the tests
users port.

Tensors, numpy arrays, Python numbers, None and (nested) sequences and mappings of them are
compared element-wise:
``|actual - expected| <= atol + rtol * |expected|``, with PyTorch's default tolerances for the
dtype when neither is given (exact for integers and bool), after checking shape, dtype and
device. A failure is an AssertionError in PyTorch's words, naming how many elements differ and
where the largest differences are.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from . import _creation, _dispatch, _dtype, _random
from ._typeinfo import finfo, iinfo
from .ops.complex_ops import complex as _complex

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# (rtol, atol) by dtype name, PyTorch's defaults; other dtypes compare exactly.
_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}


class _Mismatch(AssertionError):
    pass


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Assert that ``actual`` and ``expected`` are close (see the module docstring).

    Raises:
        AssertionError: when they differ in structure, shape, dtype (for numbers: Python type),
            device or values.
        ValueError: when only one of ``rtol`` and ``atol`` is given.
        RuntimeError: for a negative or NaN ``rtol`` or ``atol``.
        TypeError: for inputs that cannot be compared (a tensor against a number, say).
    """
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if tolerance is not None and not tolerance >= 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tolerance}")
    try:
        _compare(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride)
    except _Mismatch as exc:
        text = str(exc)
        if msg is not None:
            text = msg(text) if callable(msg) else msg
        raise AssertionError(text) from None


def _compare(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride) -> None:
    args = (rtol, atol, equal_nan, check_device, check_dtype, check_stride)
    if _dispatch.is_tensor(actual) and _dispatch.is_tensor(expected):
        _compare_tensors(actual, expected, *args)
    elif isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        _compare_tensors(_creation.as_tensor(actual), _creation.as_tensor(expected), *args)
    elif _is_number(actual) and _is_number(expected):
        _compare_numbers(_python_number(actual), _python_number(expected), rtol, atol, equal_nan, check_dtype)
    elif actual is None or expected is None:
        if actual is not expected:
            raise _Mismatch(f"None mismatch: {actual} is not {expected}")
    elif isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if actual.keys() != expected.keys():
            raise _Mismatch("The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(expected.keys() - actual.keys())}\n"
                            f"Additional keys in the actual mapping: {sorted(actual.keys() - expected.keys())}")
        for key in expected:
            _item(actual[key], expected[key], repr(key), args)
    elif _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _item(a, e, str(i), args)
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def _item(actual, expected, where: str, args) -> None:
    try:
        _compare(actual, expected, *args)
    except _Mismatch as exc:
        raise _Mismatch(f"{exc}\n\nThe failure occurred for item [{where}]") from None


def _is_number(x) -> bool:
    return isinstance(x, (bool, int, float, complex, np.number))


def _python_number(x):
    return x.item() if isinstance(x, np.number) else x


def _is_sequence(x) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, (str, bytes))


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride) -> None:
    for name, a, e, checked in (("shape", actual.shape, expected.shape, True),
                                ("device", actual.device, expected.device, check_device),
                                ("dtype", actual.dtype, expected.dtype, check_dtype),
                                ("stride()", actual.stride(), expected.stride(), check_stride)):
        if checked and a != e:
            raise _Mismatch(f"The values for attribute '{name}' do not match: {a} != {e}.")
    if rtol is None:
        rtol, atol = max(_TOLERANCES.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected))
    a, e = actual.detach().cpu().numpy(), expected.detach().cpu().numpy()
    exact = not (np.issubdtype(a.dtype, np.inexact) or np.issubdtype(e.dtype, np.inexact))
    if a.dtype == bool or e.dtype == bool:
        a, e = a.astype(np.int64), e.astype(np.int64)
    wide = np.complex128 if np.iscomplexobj(a) or np.iscomplexobj(e) else np.float64
    a64, e64 = a.astype(wide), e.astype(wide)
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan) | ((a64 == e64) & ~np.isnan(a64))
    if close.all():
        return
    kind = "equal" if rtol == 0 and atol == 0 else "close"
    if a.ndim == 0:
        raise _Mismatch(_scalar_message(a.item(), e.item(), kind, rtol, atol, exact))
    # The differences in the inputs' common dtype (integers: float32 for the relative one), as PyTorch
    # reports them.
    common = np.float32 if exact else np.promote_types(a.dtype, e.dtype)
    wide_a, wide_e = (a.astype(np.int64), e.astype(np.int64)) if exact else (a.astype(common), e.astype(common))
    difference = np.abs(wide_a - wide_e)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = difference.astype(common) / np.abs(e.astype(common))
    bad = ~close
    lines = [f"Tensor-likes are not {kind}!", "",
             f"Mismatched elements: {int(bad.sum())} / {bad.size} ({100 * bad.sum() / bad.size:.1f}%)"]
    for label, values, allowed in (("absolute", difference, atol), ("relative", relative, rtol)):
        flat = int(np.nanargmax(np.where(bad, values, -np.inf))) if not np.isnan(values[bad]).all() else \
            int(np.flatnonzero(bad)[0])
        index = tuple(int(i) for i in np.unravel_index(flat, values.shape))
        value = values.flat[flat]
        shown = int(value) if exact and label == "absolute" else float(value)
        limit = f" (up to {allowed} allowed)" if kind == "close" else ""
        lines.append(f"Greatest {label} difference: {shown} at index {index}{limit}")
    raise _Mismatch("\n".join(lines))


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype) -> None:
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    exact = not any(isinstance(x, (float, complex)) for x in (actual, expected))
    if rtol is None:
        rtol, atol = (0.0, 0.0) if exact else _TOLERANCES["float64"]
    a, e = complex(actual), complex(expected)
    if (equal_nan and a != a and e != e) or abs(a - e) <= atol + rtol * abs(e):
        return
    kind = "equal" if rtol == 0 and atol == 0 else "close"
    raise _Mismatch(_scalar_message(actual, expected, kind, rtol, atol, exact))


def _scalar_message(actual, expected, kind: str, rtol, atol, exact: bool) -> str:
    difference = abs(actual - expected)
    relative = difference / abs(expected) if expected != 0 else float("inf")
    limits = ("", "") if kind == "equal" else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
    return (f"Scalars are not {kind}!\n\nExpected {expected} but got {actual}.\n"
            f"Absolute difference: {difference}{limits[0]}\nRelative difference: {relative}{limits[1]}")


# assert_allclose's (rtol, atol) by dtype name; other dtypes compare exactly.
_ALLCLOSE_TOLERANCES = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol: float | None = None, atol: float | None = None, equal_nan: bool = True,
                    msg: str = "") -> None:
    """Deprecated (as in PyTorch): ``assert_close`` with ``check_dtype=False``, NaN equal by default,
    non-tensors made tensors (``expected`` in ``actual``'s dtype) and looser default tolerances.

    Warns:
        FutureWarning: always.

    Raises:
        AssertionError: as ``assert_close``.
    """
    warnings.warn("`tensor.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `tensor.testing.assert_close()` instead.", FutureWarning, stacklevel=2)
    if not _dispatch.is_tensor(actual):
        actual = _creation.tensor(actual)
    if not _dispatch.is_tensor(expected):
        expected = _creation.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        tolerances = [_ALLCLOSE_TOLERANCES.get(t.dtype.name, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = (max(pair) for pair in zip(*tolerances))
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)


def make_tensor(*shape, dtype: _dtype.dtype, device, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None):
    """A tensor of ``shape`` (sizes, or one sequence) with values drawn uniformly from
    ``[low, high)``, as ``torch.testing.make_tensor``: by default [-9, 10) for integers ([0, 10)
    for uint8), [-9, 9) for floats and each part of complex numbers, and False/True for bool.
    Bounds are clamped to the dtype's range. ``noncontiguous`` returns a strided view,
    ``exclude_zero`` replaces zeros by 1 (integers) or the dtype's smallest normal number.

    Raises:
        ValueError: for NaN bounds, ``low >= high``, a range outside the dtype's,
            ``requires_grad`` with an integer or bool dtype, or both ``noncontiguous`` and
            ``memory_format``.
    """
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    exact = not (dtype.is_floating_point or dtype.is_complex)
    if requires_grad and exact:
        raise ValueError(
            f"`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice the last dim, sliced back below, so that the view skips real values
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is _dtype.bool_:
        low, high = _bounds(dtype, low, high, 0, 2, 0, 2)
        result = _random.randint(low, high, shape, dtype=dtype, device=device)
    elif exact:
        # randint cannot draw int64's largest value (its exclusive bound would overflow).
        info = iinfo(dtype)
        top = info.max + (dtype is not _dtype.int64)
        low, high = _bounds(dtype, low, high, info.min, top, -9, 10)
        result = _random.randint(low, high, shape, dtype=dtype, device=device)
    else:
        info = finfo(dtype)
        low, high = _bounds(dtype, low, high, info.min, info.max, -9, 9)
        result = _uniform_values(shape, dtype, device, low, high)
    if noncontiguous:  # offset by one to catch offset errors too
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if exact else finfo(dtype).tiny
    if not exact:
        result.requires_grad_(requires_grad)
    return result


def _bounds(dtype, low, high, lowest, highest, default_low, default_high) -> tuple:
    """make_tensor's ``[low, high)``: the defaults filled in, checked and clamped to
    ``[lowest, highest)`` (integer bounds rounded up)."""
    exact = not (dtype.is_floating_point or dtype.is_complex)
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and exact or low > high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    return (math.ceil(low), math.ceil(high)) if exact else (low, high)


def _uniform_values(shape, dtype, device, low, high):
    """Uniform draws from ``[low, high)`` of a float or complex (each part) ``dtype``; float8 is
    drawn in float32 and rounded."""
    if dtype.is_complex:
        part = dtype.to_real()
        return _complex(*(_uniform_values(shape, part, device, low, high) for _ in range(2)))
    draw_dtype = _dtype.float32 if dtype in _dtype.FLOAT8_DTYPES else dtype
    out = _creation.empty(shape, dtype=draw_dtype, device=device)
    if high - low >= finfo(draw_dtype).max:  # uniform_ needs high - low to be finite: draw half and double
        out = out.uniform_(low / 2, high / 2).mul_(2)
    else:
        out = out.uniform_(low, high)
    return out.to(dtype)
