"""``cupy.ndarray``: an array in emulated device memory, refusing what CuPy refuses.

It is not an ``np.ndarray`` subclass: it holds a numpy view (``_a``) of its device memory, the
pointer that keeps that memory alive (``_mem``) and its device (``_dev``). Every operation that
would launch a kernel goes through ``_kernels.launch``: it must run on the array's device, so an
array on device 1 used from a thread whose current device is 0 raises CuPy's error. Metadata
and view operations (reshape without copy, transpose, slicing) need no kernel and work anywhere.
Implicit conversion to numpy (``np.asarray(x)``) raises TypeError, as CuPy's ``__array__`` does.
"""

from __future__ import annotations

import math

import numpy as np

from . import _address, _kernels, _memory, _state


def _make(a: np.ndarray, mem: _memory.MemoryPointer, dev: int, base=None) -> ndarray:
    x = object.__new__(ndarray)
    x._a, x._mem, x._dev, x._base = a, mem, dev, base
    return x


def host_view(ptr: int, shape, dtype, strides=None) -> np.ndarray:
    """A numpy view of device memory at ``ptr`` laid out as ``shape``/``dtype``/``strides``."""
    dtype = np.dtype(dtype)
    if strides is None:
        strides = _contiguous_strides(shape, dtype.itemsize)
    if math.prod(shape) == 0:
        return np.ndarray(shape, dtype)
    lo = sum(s * (n - 1) for n, s in zip(shape, strides) if s < 0)
    hi = sum(s * (n - 1) for n, s in zip(shape, strides) if s > 0) + dtype.itemsize
    return np.ndarray(shape, dtype, buffer=_address.host_bytes(ptr + lo, hi - lo), offset=-lo, strides=strides)


def _contiguous_strides(shape, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def empty(shape, dtype=float) -> ndarray:
    """A new uninitialised C-contiguous array on the current device (from the current allocator)."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    dtype = np.dtype(dtype)
    memptr = _memory.alloc(math.prod(shape) * dtype.itemsize)
    device_id = _state.get_device() if memptr.ptr == 0 else memptr.device_id
    return _make(host_view(memptr.ptr, shape, dtype), memptr, device_id)


def from_host(host: np.ndarray) -> ndarray:
    """Copy a host array to new memory on the current device: a write ordered, like every
    kernel, after the work pending on the current stream (the memory may be reused)."""
    out = empty(host.shape, host.dtype)
    _kernels.launch(())
    np.copyto(out._a, host)
    return out


class Flags:
    """``ndarray.flags``: C/F contiguity and ownership (CuPy has no ``writeable`` flag)."""

    def __init__(self, c_contiguous: bool, f_contiguous: bool, owndata: bool) -> None:
        self.c_contiguous, self.f_contiguous, self.owndata = c_contiguous, f_contiguous, owndata

    def __getitem__(self, name: str) -> bool:
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


class ndarray:
    """An array on an emulated CUDA device (see the module docstring)."""

    __slots__ = ("_a", "_mem", "_dev", "_base", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C") -> None:
        if memptr is None:
            made = empty(shape, dtype)
            self._a, self._mem, self._dev = made._a, made._mem, made._dev
        else:
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            self._a = host_view(memptr.ptr, shape, dtype, None if strides is None else tuple(strides))
            self._mem, self._dev = memptr, memptr.device_id
        self._base = None

    # ------------------------------------------------------------ attributes
    shape = property(lambda self: self._a.shape, lambda self, shape: self._set_shape(shape))
    dtype = property(lambda self: self._a.dtype)
    strides = property(lambda self: self._a.strides)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    base = property(lambda self: self._base)
    T = property(lambda self: self.transpose())

    def _set_shape(self, shape) -> None:
        try:
            self._a = np.reshape(self._a, shape, copy=False)
        except ValueError as exc:
            raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` to make a "
                                 "copy with the desired shape.") from exc

    @property
    def flags(self) -> Flags:
        """Contiguity and ownership of the array."""
        flags = self._a.flags
        return Flags(flags.c_contiguous, flags.f_contiguous, self._base is None)

    @property
    def device(self):
        """The device the array lives on."""
        from .cuda import Device

        return Device(self._dev)

    @property
    def data(self) -> _memory.MemoryPointer:
        """A pointer to the first element (``data.mem`` is the allocation it came from)."""
        mem = self._mem.mem
        if self._a.size == 0:
            return _memory.MemoryPointer(mem, self._mem.ptr - mem.ptr)
        return _memory.MemoryPointer(mem, _address.device_ptr(self._a.ctypes.data) - mem.ptr)

    @property
    def real(self):
        """The real part (a view for complex arrays, the array itself otherwise)."""
        return _kernels.view_of(self, self._a.real) if self.dtype.kind == "c" else self

    @property
    def imag(self):
        """The imaginary part, a view."""
        return _kernels.view_of(self, self._a.imag)

    @property
    def __cuda_array_interface__(self) -> dict:
        c = self._a.flags.c_contiguous
        return {"shape": self.shape, "typestr": self.dtype.str, "descr": self.dtype.descr,
                "data": (self.data.ptr if self.size else 0, False), "version": 3,
                "strides": None if c else self.strides, "stream": 1}

    # ------------------------------------------------------------ host transfers (synchronise)
    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        """Copy to a new host array (a synchronisation)."""
        if self.size:
            _state.declare_synchronize()
            _kernels.wait_streams(self._dev)
        host = np.array(self._a, order=order, copy=True)
        if out is not None:
            np.copyto(out, host)
            return out
        return host

    def set(self, arr, stream=None) -> None:
        """Copy a host array of the same shape and dtype into this array."""
        if not isinstance(arr, np.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if self.dtype != arr.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if self.shape != arr.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        _kernels.launch(())
        np.copyto(self._a, arr)

    def tolist(self):
        """The elements as nested Python lists (a synchronisation)."""
        return self.get().tolist()

    def item(self):
        """The only element as a Python number (a synchronisation)."""
        return self.get().item()

    def tobytes(self, order="C") -> bytes:
        """The raw bytes, copied to the host (a synchronisation)."""
        return self.get().tobytes(order)

    def __float__(self) -> float:
        return float(self.get())

    def __int__(self) -> int:
        return int(self.get())

    def __complex__(self) -> complex:
        return complex(self.get())

    def __bool__(self) -> bool:
        return bool(self.get())

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
                        "construct a NumPy array explicitly.")

    def __repr__(self) -> str:
        return repr(self.get())

    def __str__(self) -> str:
        return str(self.get())

    def __format__(self, spec: str) -> str:
        return format(self.get() if self.ndim else self.get().item(), spec)

    def __reduce__(self):
        from . import array

        return array, (self.get(),)

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        from .cuda import Device

        with Device(self._dev):
            return self.copy()

    # ------------------------------------------------------------ views (no kernel)
    def view(self, dtype=None, array_class=None):
        """A view of the same memory, optionally as another dtype."""
        return _kernels.view_of(self, self._a.view() if dtype is None else self._a.view(dtype))

    def reshape(self, *shape, order="C"):
        """A view with a new shape, or a copy (a kernel) when the strides do not allow one."""
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return _kernels.maybe_view(self, lambda a: np.reshape(a, shape, order=order))

    def ravel(self, order="C"):
        """A flat view, or a flat copy (a kernel) of a non-contiguous array."""
        return _kernels.maybe_view(self, lambda a: np.ravel(a, order))

    def transpose(self, *axes):
        """A view with the axes permuted (reversed by default)."""
        axes = axes[0] if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))) else axes
        return _kernels.view_of(self, self._a.transpose(*((axes,) if axes else ())))

    def swapaxes(self, axis1, axis2):
        """A view with two axes exchanged."""
        return _kernels.view_of(self, self._a.swapaxes(axis1, axis2))

    def squeeze(self, axis=None):
        """A view without the given (or all) length-1 axes."""
        return _kernels.view_of(self, self._a.squeeze(axis))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """A view of a diagonal, writable as CuPy's is (numpy's is read-only)."""
        view = self._a.diagonal(offset, axis1, axis2)
        view.flags.writeable = self._a.flags.writeable
        return _kernels.view_of(self, view)

    # ------------------------------------------------------------ kernels
    def astype(self, dtype, order="K", casting=None, subok=None, copy=True):
        """A copy converted to ``dtype`` (the array itself for ``copy=False`` and the same dtype)."""
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        _kernels.launch((self,))
        return _kernels.fresh(self._a.astype(dtype, order=order, casting=casting or "unsafe"))

    def copy(self, order="C"):
        """A copy on the current device (copying from another device is allowed)."""
        from .cuda import Device

        with Device(self._dev):
            _kernels.launch((self,))  # a copy is ordered after the stream's pending work
            out = _kernels.fresh(np.array(self._a, order=order, copy=True))
        return out if out._dev == _state.get_device() else _kernels.to_current_device(out)

    def flatten(self, order="C"):
        """A flat copy."""
        _kernels.launch((self,))
        return _kernels.fresh(self._a.flatten(order))

    def fill(self, value) -> None:
        """Set every element to ``value`` (cast as in C; a non-scalar numpy array is refused)."""
        if isinstance(value, np.ndarray) and value.shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        if isinstance(value, ndarray):
            _kernels.launch((self, value))
            value = value._a
        else:
            _kernels.launch((self,))
        self._a.fill(value)

    def nonzero(self):
        """The indices of the non-zero elements, one array per axis (a synchronisation)."""
        _kernels.launch((self,))
        _state.declare_synchronize()  # the output size is read back from the device
        return tuple(_kernels.fresh(i) for i in np.nonzero(self._a))

    def __getitem__(self, key):
        return _kernels.getitem(self, key)

    def __setitem__(self, key, value) -> None:
        _kernels.setitem(self, key, value)

    # ------------------------------------------------------------ protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        import cupy

        mine = getattr(cupy, ufunc.__name__, None)
        if not isinstance(mine, _kernels.ufunc):
            return NotImplemented
        return mine(*inputs, **kwargs) if method == "__call__" else getattr(mine, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        import cupy

        mine = getattr(cupy, func.__name__, None) if func.__module__.split(".")[:2] == ["numpy"] else None
        if mine is None or mine is func:
            return NotImplemented
        return mine(*args, **kwargs)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        from . import _dlpack

        return _dlpack.export(self, stream, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self._dev)


def install_methods() -> None:
    """Add the kernel methods that map onto numpy's, and the operators (through the ufuncs).

    Called by ``cupy/__init__`` once ``_kernels`` is loaded."""
    for name in ("all", "any", "argmax", "argmin", "argpartition", "argsort", "clip", "compress", "conj",
                 "conjugate", "cumprod", "cumsum", "dot", "max", "mean", "min", "partition", "prod", "put",
                 "repeat", "round", "searchsorted", "sort", "std", "sum", "take", "trace", "var", "choose"):
        setattr(ndarray, name, _kernels.method(name))
    ndarray.ptp = _kernels.method("ptp", np.ptp)
    for dunder, ufunc_name in _kernels.OPERATORS.items():
        setattr(ndarray, f"__{dunder}__", _kernels.operator(ufunc_name))
        if dunder not in ("lt", "le", "gt", "ge", "eq", "ne"):
            setattr(ndarray, f"__r{dunder}__", _kernels.operator(ufunc_name, reflected=True))
            setattr(ndarray, f"__i{dunder}__", _kernels.operator(ufunc_name, inplace=True))
    for dunder, ufunc_name in (("neg", "negative"), ("pos", "positive"), ("abs", "absolute"), ("invert", "invert")):
        setattr(ndarray, f"__{dunder}__", _kernels.operator(ufunc_name, unary=True))
    ndarray.__hash__ = None
