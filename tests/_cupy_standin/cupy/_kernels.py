"""Running "kernels": CuPy's checks around a numpy computation on the arrays' host views.

``launch`` is what every kernel passes through: the current device must be every array's device
(our emulated devices have no peer access, so CuPy raises there), and the work pending on the
current stream is waited for. Inputs are unwrapped to their numpy views (a numpy array given
where CuPy wants a device array is CuPy's TypeError); results are copied into fresh device
memory on the current device, or kept as views when numpy returned a view of an input.
CuPy 13's ufuncs pick their loop from the *value* of a Python scalar (``_cupy13_loop``).
"""

from __future__ import annotations

import functools

import numpy as np

from . import _ndarray, _state
from .cuda import stream as _stream

OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
             "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
             "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "left_shift",
             "rshift": "right_shift", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
             "eq": "equal", "ne": "not_equal"}


# ---------------------------------------------------------------- launching
def launch(arrays) -> int:
    """Check that every array is on the current device and wait for the current stream's work."""
    dev = _state.get_device()
    for x in arrays:
        if x._dev != dev:
            raise ValueError(f"The device where the array resides ({x._dev}) is different from the current "
                             f"device ({dev}). Peer access is unavailable between these devices.")
    if _stream._pending:
        _stream.wait_for(_stream.get_current_stream_ptr(), dev)
    return dev


def wait_streams(device_id: int) -> None:
    """What a synchronous copy from ``device_id`` waits for: the work pending on the stream it is
    made on, this thread's current stream of that device."""
    if _stream._pending:
        _stream.wait_for(_stream.get_current_stream(device_id).ptr, device_id)


def unwrap(obj, arrays: list, *, host_ok: bool = False):
    """``obj`` with device arrays replaced by their host views (collected in ``arrays``).

    Raises:
        TypeError: for a numpy array (CuPy takes device arrays only), unless ``host_ok``.
    """
    if type(obj) is _ndarray.ndarray:
        arrays.append(obj)
        return obj._a
    if isinstance(obj, np.ndarray) and not host_ok:
        raise TypeError(f"Unsupported type {type(obj)}")
    if type(obj) in (list, tuple):
        return type(obj)(unwrap(item, arrays, host_ok=host_ok) for item in obj)
    if type(obj) is dict:
        return {k: unwrap(v, arrays, host_ok=host_ok) for k, v in obj.items()}
    return obj


def fresh(host) -> _ndarray.ndarray:
    """A numpy result copied into new memory on the current device."""
    return _ndarray.from_host(np.asarray(host))


def view_of(parent: _ndarray.ndarray, a: np.ndarray) -> _ndarray.ndarray:
    """``a`` (a numpy view of ``parent``'s memory) as a device array sharing that memory."""
    return _ndarray._make(a, parent._mem, parent._dev, parent._base if parent._base is not None else parent)


def maybe_view(parent: _ndarray.ndarray, make) -> _ndarray.ndarray:
    """``make(host view of parent)`` as a view if numpy made one, else as a copy: a kernel, so it
    must run on ``parent``'s device and read the memory only after the current stream's pending
    work (the copy is made again after that wait; the first one may have read stale memory)."""
    a = make(parent._a)
    if np.may_share_memory(a, parent._a):
        return view_of(parent, a)
    launch((parent,))
    return fresh(make(parent._a))


def wrap(result, inputs: list, out=None):
    """Device arrays for a numpy result: ``out`` itself, views of inputs, or fresh copies."""
    if out is not None and result is out._a:
        return out
    if isinstance(result, np.ndarray):
        for x in inputs:
            if np.may_share_memory(result, x._a):
                return view_of(x, result)
        return fresh(result)
    if isinstance(result, np.generic):
        return fresh(result)
    if isinstance(result, (tuple, list)):
        outs = out if isinstance(out, tuple) else (None,) * len(result)
        return type(result)(wrap(r, inputs, o) for r, o in zip(result, outs))
    return result


# ---------------------------------------------------------------- functions and methods
NO_KERNEL = frozenset((
    "broadcast_to", "broadcast_arrays", "expand_dims", "moveaxis", "transpose", "reshape", "squeeze",
    "swapaxes", "atleast_1d", "atleast_2d", "atleast_3d", "ravel", "split", "array_split", "hsplit",
    "vsplit", "dsplit", "rollaxis", "flip", "fliplr", "flipud", "diagonal", "shape", "ndim", "size",
    "result_type", "can_cast", "min_scalar_type", "isscalar", "iscomplexobj", "isrealobj", "may_share_memory",
    "shares_memory", "empty", "empty_like", "zeros", "ones", "full", "arange", "linspace", "logspace",
    "eye", "identity", "tri", "indices", "zeros_like", "ones_like", "full_like"))
SYNCING = frozenset(("unique", "nonzero", "argwhere", "flatnonzero", "extract", "bincount", "compress",
                     "allclose", "array_equal", "array_equiv", "isin", "in1d", "intersect1d", "union1d",
                     "setdiff1d", "setxor1d", "histogram", "repeat"))


def function(np_func, name: str):
    """A ``cupy.<name>`` that runs numpy's function as a kernel on the current device."""
    checks = name not in NO_KERNEL
    syncs = name in SYNCING

    @functools.wraps(np_func)
    def run(*args, **kwargs):
        arrays: list = []
        args, kwargs = unwrap(args, arrays), unwrap(kwargs, arrays)
        if checks:
            launch(arrays)
            if syncs:
                _state.declare_synchronize()
        else:
            _state.check_usable()
        result = np_func(*args, **kwargs)
        out = wrap(result, arrays, _original_out(kwargs, arrays))
        if not checks and arrays and not _all_views(out, arrays):
            launch(arrays)  # it copied: that was a kernel after all
        return out

    return run


def metadata(np_func):
    """A ``cupy.<name>`` about dtypes and shapes: numpy's answer, device arrays seen as their views."""

    @functools.wraps(np_func)
    def run(*args, **kwargs):
        arrays: list = []
        return np_func(*unwrap(args, arrays, host_ok=True), **unwrap(kwargs, arrays, host_ok=True))

    return run


def _original_out(kwargs, arrays):
    out = kwargs.get("out")
    if out is None:
        return None
    for x in arrays:
        if x._a is out:
            return x
    return None


def _all_views(out, arrays) -> bool:
    if type(out) is _ndarray.ndarray:
        return any(out._mem is x._mem for x in arrays)
    if isinstance(out, (tuple, list)):
        return all(_all_views(o, arrays) for o in out)
    return True


def method(name: str, np_func=None):
    """An ndarray method that runs numpy's method of the same name as a kernel."""
    call = np_func or getattr(np.ndarray, name)
    syncs = name in SYNCING

    def run(self, *args, **kwargs):
        arrays = [self]
        args, kwargs = unwrap(args, arrays), unwrap(kwargs, arrays)
        launch(arrays)
        if syncs:
            _state.declare_synchronize()
        return wrap(call(self._a, *args, **kwargs), arrays, _original_out(kwargs, arrays))

    run.__name__ = name
    return run


def operator(ufunc_name: str, *, reflected=False, inplace=False, unary=False):
    """An arithmetic or comparison dunder through the named ufunc (CuPy's scalar promotion)."""

    def run(self, *others):
        import cupy

        u = getattr(cupy, ufunc_name)
        if unary:
            return u(self)
        other = others[0]
        if not isinstance(other, (_ndarray.ndarray, bool, int, float, complex, np.generic, np.ndarray)):
            return NotImplemented
        if inplace:
            return u(self, other, out=self)
        return u(other, self) if reflected else u(self, other)

    return run


# ---------------------------------------------------------------- indexing
def _index(key, arrays: list):
    """``key`` for numpy, and whether it is advanced (a kernel) and has a boolean mask (a sync)."""
    parts = key if isinstance(key, tuple) else (key,)
    advanced = mask = False
    out = []
    for part in parts:
        if type(part) is _ndarray.ndarray:
            arrays.append(part)
            part = part._a
        if isinstance(part, (np.ndarray, list)) or isinstance(part, (bool, np.bool_)):
            part = np.asarray(part)
            advanced = True
            mask = mask or part.dtype == np.bool_
        out.append(part)
    return tuple(out), advanced, mask


def wrap_indices(key: tuple, shape) -> tuple:
    """CuPy's integer-array indexing wraps out-of-range indices around instead of raising."""
    def dims(part):
        return part.ndim if isinstance(part, np.ndarray) and part.dtype == np.bool_ else 1

    consumed = sum(dims(p) for p in key if p is not None and p is not Ellipsis)
    out, axis = [], 0
    for part in key:
        if part is Ellipsis:
            axis += len(shape) - consumed
        elif part is not None:
            if isinstance(part, np.ndarray) and part.dtype.kind in "iu" and axis < len(shape) and shape[axis]:
                part = part % shape[axis]
            axis += dims(part)
        out.append(part)
    return tuple(out)


def getitem(x, key):
    """``x[key]``: a view for basic indexing, a gather kernel (on ``x``'s device) otherwise."""
    arrays = [x]
    k, advanced, mask = _index(key, arrays)
    if advanced:
        launch(arrays)
        if mask:
            _state.declare_synchronize()  # the result's size is read back from the device
        return fresh(x._a[wrap_indices(k, x.shape)])
    r = x._a[k]
    if not isinstance(r, np.ndarray):  # CuPy gives a 0-d view where numpy gives a scalar
        r = x._a[k + (Ellipsis,)]
    return view_of(x, r)


def setitem(x, key, value) -> None:
    """``x[key] = value``: a kernel on ``x``'s device; a numpy value is only allowed as an advanced
    update or when 0-d, as in CuPy, and a list is refused."""
    arrays = [x]
    k, advanced, _ = _index(key, arrays)
    if type(value) is _ndarray.ndarray:
        arrays.append(value)
        value = value._a
    elif isinstance(value, np.ndarray):
        if not advanced and value.shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
    elif isinstance(value, (list, tuple)) and not advanced:
        raise TypeError(f"Unsupported type {type(value)}")
    elif isinstance(value, (bool, int, float, complex)):
        value = np.asarray(value)[()]  # CuPy casts a Python scalar in C: wrap-around, not OverflowError
    launch(arrays)
    x._a[wrap_indices(k, x.shape) if advanced else k] = value


def to_current_device(x) -> _ndarray.ndarray:
    """A copy of ``x`` on the current device (a device-to-device copy, allowed between devices)."""
    if x._dev == _state.get_device():
        return x
    return fresh(np.ascontiguousarray(x._a))


# ---------------------------------------------------------------- ufuncs
_KIND_SCORE = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 2}


def _as_numpy_scalar(value):
    if isinstance(value, np.generic):
        return value
    if isinstance(value, (bool, int, float, complex)):
        return np.asarray(value)[()]
    raise TypeError(f"Unsupported type {type(value)}")


def _min_scalar_type(value):
    """CuPy's ``_min_scalar_type``: a non-negative int may fit a signed and an unsigned type."""
    t = np.min_scalar_type(value)
    if t.kind == "u":
        signed = np.dtype(t.str.replace("u", "i"))
        if value <= np.iinfo(signed).max:
            return (t, signed)
    return t


@functools.cache
def _loops(types: tuple) -> tuple:
    return tuple(tuple(np.dtype(c) for c in sig.replace("->", "")) for sig in types
                 if not set(sig) & set("OMmgGV"))


@functools.lru_cache(maxsize=4096)
def _first_loop(types: tuple, nin: int, in_types: tuple):
    for loop in _loops(types):
        if all(any(np.can_cast(t, loop[i]) for t in (it if isinstance(it, tuple) else (it,)))
               for i, it in enumerate(in_types)):
            return loop
    return None


def cupy13_loop(name: str, types: tuple, nin: int, args: list):
    """The loop CuPy 13 picks when Python or numpy scalars meet arrays (None: numpy's choice).

    A scalar of a kind no greater than the arrays' is typed by its value (``uint8 + 300`` is a
    uint16 loop); otherwise by its type. Raises TypeError when no loop accepts the types.
    """
    is_array = [isinstance(a, np.ndarray) for a in args]
    if all(is_array) or not any(is_array):
        return None
    scalars = [_as_numpy_scalar(a) if not arr else a for a, arr in zip(args, is_array)]
    max_array = max(_KIND_SCORE.get(a.dtype.kind, -1) for a, arr in zip(scalars, is_array) if arr)
    max_scalar = max(_KIND_SCORE.get(a.dtype.kind, -1) for a, arr in zip(scalars, is_array) if not arr)
    raw = max_array >= max_scalar
    in_types = tuple(a.dtype if arr or not raw else _min_scalar_type(a) for a, arr in zip(scalars, is_array))
    loop = _first_loop(types, nin, in_types)
    if loop is None:
        shown = tuple(np.dtype(t[0] if isinstance(t, tuple) else t).type for t in in_types)
        raise TypeError(f"Wrong type ({shown}) of arguments for cupy_{name}")
    return loop


# Where CuPy's loops differ from numpy's: integer true division is a float64 loop.
_DIVIDE = ("bb->d", "BB->d", "hh->d", "HH->d", "ii->d", "II->d", "ll->d", "LL->d", "qq->d", "QQ->d", "ee->e",
           "ff->f", "dd->d", "FF->F", "DD->D")
_CUPY_TYPES = {"true_divide": _DIVIDE, "divide": _DIVIDE}


class ufunc:
    """A CuPy ufunc: numpy's loops, CuPy 13's loop choice for scalars, run as a kernel."""

    def __init__(self, np_ufunc: np.ufunc) -> None:
        self._u = np_ufunc
        self.name = self.__name__ = np_ufunc.__name__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs
        self.types = _CUPY_TYPES.get(self.name) or tuple(t for t in np_ufunc.types if not set(t) & set("OMmgGV"))
        self.__doc__ = np_ufunc.__doc__

    def __repr__(self) -> str:
        return f"<ufunc 'cupy_{self.name}'>"

    def __call__(self, *args, out=None, dtype=None, **kwargs):
        arrays: list = []
        ins = [unwrap(a, arrays) for a in args[: self.nin]]
        outs = list(args[self.nin:]) + ([] if out is None else list(out if isinstance(out, tuple) else (out,)))
        out_arrays = [o for o in outs if o is not None]
        launch(arrays + out_arrays)
        loop = None if dtype is not None else cupy13_loop(self.name, self.types, self.nin, ins)
        if loop is not None:  # numpy then picks the same loop from the operand types
            ins = [a.astype(loop[i], copy=False) if isinstance(a, np.ndarray) else loop[i].type(a)
                   for i, a in enumerate(ins)]
        if out_arrays:
            kwargs["out"] = tuple(o._a for o in outs) if len(outs) > 1 else outs[0]._a
        result = self._u(*ins, dtype=dtype, **kwargs)
        if out_arrays:
            return outs[0] if self.nout == 1 else tuple(outs)
        return wrap(result, arrays)

    def _method(self, name, *args, **kwargs):
        arrays: list = []
        args, kwargs = unwrap(args, arrays), unwrap(kwargs, arrays)
        launch(arrays)
        return wrap(getattr(self._u, name)(*args, **kwargs), arrays, _original_out(kwargs, arrays))

    def reduce(self, *args, **kwargs):
        """``ufunc.reduce`` as a kernel."""
        return self._method("reduce", *args, **kwargs)

    def accumulate(self, *args, **kwargs):
        """``ufunc.accumulate`` as a kernel."""
        return self._method("accumulate", *args, **kwargs)

    def reduceat(self, *args, **kwargs):
        """``ufunc.reduceat`` as a kernel."""
        return self._method("reduceat", *args, **kwargs)

    def outer(self, *args, **kwargs):
        """``ufunc.outer`` as a kernel."""
        return self._method("outer", *args, **kwargs)

    def at(self, *args, **kwargs):
        """``ufunc.at`` as a kernel."""
        return self._method("at", *args, **kwargs)
