"""``cupyx``: the scatter functions (with CuPy 13's dtype limits) and ``allow_synchronize``."""

from __future__ import annotations

import contextlib

import numpy as np
from cupy import _kernels, _state
from cupy._state import DeviceSynchronized

__all__ = ["scatter_add", "scatter_max", "scatter_min", "allow_synchronize", "DeviceSynchronized"]

# CuPy 13.6 (_routines_indexing.pyx): atomicAdd/atomicMax/atomicMin exist only for these.
_ADD = (np.int32, np.float16, np.float32, np.float64, np.uint32, np.uint64, np.intc, np.uintc, np.ulonglong)
_MAX_MIN = (np.int32, np.float32, np.float64, np.uint32, np.uint64, np.intc, np.uintc, np.ulonglong)


def _scatter(ufunc: np.ufunc, allowed, name: str, a, slices, value) -> None:
    arrays = [a]
    key, advanced, mask = _kernels._index(slices, arrays)
    if type(value) is type(a):
        arrays.append(value)
        value = value._a
    _kernels.launch(arrays)
    if advanced and not mask:
        if not issubclass(a.dtype.type, allowed):
            raise TypeError(f"cupy.{name}.at only supports {_names(allowed)} as data type")
        key = _kernels.wrap_indices(key, a.shape)  # CuPy wraps out-of-range indices instead of raising
    ufunc.at(a._a, key, np.asarray(value).astype(a.dtype, copy=False))


def _names(types) -> str:
    return ", ".join(dict.fromkeys(np.dtype(t).name for t in types))


def scatter_add(a, slices, value) -> None:
    """``a[slices] += value``, accumulating repeated indices (int64, int8, int16, uint8, bool refused)."""
    _scatter(np.add, _ADD, "add", a, slices, value)


def scatter_max(a, slices, value) -> None:
    """``a[slices] = max(a[slices], value)`` over repeated indices."""
    _scatter(np.maximum, _MAX_MIN, "maximum", a, slices, value)


def scatter_min(a, slices, value) -> None:
    """``a[slices] = min(a[slices], value)`` over repeated indices."""
    _scatter(np.minimum, _MAX_MIN, "minimum", a, slices, value)


@contextlib.contextmanager
def allow_synchronize(allow: bool):
    """Allow or forbid host synchronisation in this thread (DeviceSynchronized when forbidden)."""
    old = _state.thread.allow_synchronize
    _state.thread.allow_synchronize = allow
    try:
        yield
    finally:
        _state.thread.allow_synchronize = old
