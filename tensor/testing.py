"""``tensor.testing``: ``assert_close``, as ``torch.testing.assert_close``, for the tests users port.

Tensors, Python numbers and (nested) sequences and mappings of them are compared element-wise:
``|actual - expected| <= atol + rtol * |expected|``, with PyTorch's default tolerances for the
dtype when neither is given (exact for integers and bool), after checking shape, dtype and
device. A failure is an AssertionError in PyTorch's words, naming how many elements differ and
where the largest differences are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from . import _dispatch

__all__ = ["assert_close"]

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
        AssertionError: when they differ in structure, shape, dtype, device or values.
        ValueError: when only one of ``rtol`` and ``atol`` is given.
        TypeError: for inputs that cannot be compared (a tensor against a number, say).
    """
    if (rtol is None) != (atol is None):
        missing = "atol" if atol is None else "rtol"
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}.")
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
    elif _is_number(actual) and _is_number(expected):
        _compare_numbers(actual, expected, rtol, atol, equal_nan)
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
    return isinstance(x, (bool, int, float, complex))


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


def _compare_numbers(actual, expected, rtol, atol, equal_nan) -> None:
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
