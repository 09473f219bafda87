"""The routines whose CuPy behaviour differs from "numpy's function as a kernel": transfers
between host and device, ``full`` (a C cast of the fill value), ``where`` and ``clip`` (ufuncs in
CuPy, with its scalar promotion) and the index grids."""

from __future__ import annotations

import numpy as np

from . import _kernels, _ndarray, _state


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    """A device array on the current device from host data or a device array (copied if asked,
    or if it lives on another device)."""
    if type(obj) is _ndarray.ndarray:
        if obj._dev != _state.get_device():
            out = obj.copy()
            return out.astype(dtype, copy=False) if dtype is not None else out
        out = obj.astype(obj.dtype if dtype is None else dtype, order=order, copy=copy)
    elif hasattr(obj, "__cuda_array_interface__"):
        return array(_from_cuda_array_interface(obj), dtype, copy, order, subok, ndmin)
    else:
        _state.check_usable()
        host = np.array(_host_sequence(obj), dtype=dtype, order=order if order in "CF" else "K", ndmin=ndmin)
        return _kernels.fresh(host)
    if ndmin > out.ndim:
        out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
    return out


def _host_sequence(obj):
    """Nested sequences may hold device arrays (CuPy gathers them); numpy gets host copies."""
    if isinstance(obj, (list, tuple)):
        return [_host_sequence(o) for o in obj]
    if type(obj) is _ndarray.ndarray:
        return obj.get()
    return obj


def _from_cuda_array_interface(obj) -> _ndarray.ndarray:
    from .cuda import MemoryPointer, UnownedMemory

    desc = obj.__cuda_array_interface__
    shape, dtype = tuple(desc["shape"]), np.dtype(desc["typestr"])
    ptr = desc["data"][0]
    mem = UnownedMemory(ptr, int(np.prod(shape)) * dtype.itemsize, obj, -1 if ptr else _state.get_device())
    return _ndarray.ndarray(shape, dtype, MemoryPointer(mem, 0), desc.get("strides"))


def asarray(a, dtype=None, order=None, *, blocking=False):
    """``array(a, dtype, copy=False)``."""
    return array(a, dtype, copy=False, order=order or "K")


def asanyarray(a, dtype=None, order=None):
    """``asarray`` (there are no subclasses)."""
    return asarray(a, dtype, order)


def ascontiguousarray(a, dtype=None):
    """A C-contiguous array: ``a`` itself when it already is one (of ``dtype``)."""
    out = asarray(a, dtype)
    if out._a.flags.c_contiguous:
        return out
    _kernels.launch((out,))
    return _kernels.fresh(np.ascontiguousarray(out._a))


def asfortranarray(a, dtype=None):
    """A Fortran-ordered copy on the current device."""
    out = asarray(a, dtype)
    _kernels.launch((out,))
    return _kernels.fresh(np.asfortranarray(out._a))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    """A host copy of a device array (a synchronisation); host data is passed to numpy."""
    if type(a) is _ndarray.ndarray:
        return a.get(stream, order, out, blocking)
    host = np.asarray(a, order=order)
    if out is not None:
        out[...] = host
        return out
    return host


def get_array_module(*args):
    """``cupy`` if any argument is a device array, else ``numpy``."""
    import cupy

    return cupy if any(type(a) is _ndarray.ndarray for a in args) else np


def full(shape, fill_value, dtype=None, order="C"):
    """An array of ``fill_value``; CuPy casts it in C, so an int out of range wraps around."""
    if type(fill_value) is _ndarray.ndarray:
        dtype = fill_value.dtype if dtype is None else dtype
        out = _ndarray.empty(shape, dtype)
        out.fill(fill_value)
        return out
    value = fill_value if isinstance(fill_value, np.generic) else np.asarray(fill_value)[()]
    out = _ndarray.empty(shape, value.dtype if dtype is None else dtype)
    out.fill(value)
    return out


def full_like(a, fill_value, dtype=None, order="K", subok=None, shape=None):
    """``full`` with ``a``'s shape and dtype unless given."""
    return full(a.shape if shape is None else shape, fill_value, a.dtype if dtype is None else dtype)


_WHERE_LOOPS = tuple(f"?{c}{c}->{c}" for c in "?bBhHiIlLqQefdFD")
_CLIP_LOOPS = tuple(f"{c}{c}{c}->{c}" for c in "?bBhHiIlLqQefdFD")


def where(condition, x=None, y=None):
    """``condition ? x : y`` (CuPy's ``_where_ufunc``: its scalar promotion), or ``nonzero``."""
    if x is None and y is None:
        return condition.nonzero()
    if x is None or y is None:
        raise ValueError("Must provide with zero or two arguments.")
    return _ternary(np.where, "where", _WHERE_LOOPS, (condition, x, y), 1)


def clip(a, a_min, a_max, out=None):
    """``a`` limited to ``[a_min, a_max]`` (CuPy's ``_clip`` ufunc); None is the dtype's limit."""
    if a_min is None and a_max is None:
        raise ValueError("array_clip: must set either max or min")
    kind = a.dtype.kind
    if a_min is None:
        a_min = a.dtype.type("-inf") if kind in "fc" else np.iinfo(a.dtype).min if kind in "iu" else a_min
    if a_max is None:
        a_max = a.dtype.type("inf") if kind in "fc" else np.iinfo(a.dtype).max if kind in "iu" else a_max
    return _ternary(np.clip, "clip", _CLIP_LOOPS, (a, a_min, a_max), 0, out)


def _ternary(np_func, name, loops, args, first_typed: int, out=None):
    arrays: list = []
    ins = [_kernels.unwrap(a, arrays) for a in args]
    _kernels.launch(arrays + ([out] if out is not None else []))
    if name == "where":
        ins[0] = ins[0].astype(bool, copy=False) if isinstance(ins[0], np.ndarray) else bool(ins[0])
    loop = _kernels.cupy13_loop(name, loops, 3, ins)
    if loop is not None:
        ins = [a if isinstance(a, np.ndarray) else loop[i].type(a) for i, a in enumerate(ins)]
        ins[first_typed:] = [a.astype(loop[-1], copy=False) if isinstance(a, np.ndarray) else a
                             for a in ins[first_typed:]]
    if out is not None:
        np.copyto(out._a, np_func(*ins), casting="same_kind")
        return out
    return _kernels.wrap(np_func(*ins), arrays)


class _Grid:
    """``ogrid``/``mgrid``: numpy's index grids as device arrays."""

    def __init__(self, grid) -> None:
        self._grid = grid

    def __getitem__(self, key):
        _state.check_usable()
        result = self._grid[key]
        if isinstance(result, (list, tuple)):
            return type(result)(_kernels.fresh(r) for r in result)
        return _kernels.fresh(result)


ogrid = _Grid(np.ogrid)
mgrid = _Grid(np.mgrid)


def from_dlpack(array_, *, device=None, copy=None):
    """A device array sharing a DLPack producer's CUDA memory (CuPy refuses host producers)."""
    from . import _dlpack

    return _dlpack.import_(array_, device, copy)


def fromDlpack(capsule):
    """The legacy capsule-only form of ``from_dlpack``."""
    from . import _dlpack

    return _dlpack.import_capsule(capsule)


def _take(a, indices, axis=None, out=None):
    """numpy's ``take`` as CuPy's: an out-of-range index wraps around instead of raising."""
    return np.take(a, indices, axis=axis, out=out, mode="wrap")


def _take_along_axis(arr, indices, axis):
    """numpy's ``take_along_axis`` as CuPy's (fancy indexing): out-of-range indices wrap around."""
    size = arr.size if axis is None else arr.shape[axis]
    return np.take_along_axis(arr, indices % size if size else indices, axis)


WRAPPING = {"take": _take, "take_along_axis": _take_along_axis}  # host functions CuPy's differ from
