"""NumPy programs under ``tensor.compile``: ndarrays are captured through NumPy's own
dispatch protocols (``__array_ufunc__``, ``__array_function__``).

While a NumPy program is captured, each ndarray argument is a ``TracedArray``
wrapping a Tensor. NumPy hands every ufunc and array function it meets to
``TracedArray``, which runs the matching tensor op, so the op lands in the graph.
Dtypes follow NumPy (NEP 50: a Python scalar never widens an array; ``int / int``
is float64): the result dtype is asked of NumPy itself on empty arrays, and the
operands are cast to it first. A NumPy function without a tensor op is a graph
break: it runs on the real arrays, and the values it read are guarded.
"""

from __future__ import annotations

import numpy as np

from .. import _creation, _dispatch, _dtype, _tensor
from .config import config
from .numpy_table import FUNCTIONS, UFUNCS

__all__ = ["TracedArray", "wrap", "unwrap"]


def unwrap(value):
    """The Tensor inside a TracedArray; other values unchanged."""
    return value._tensor_ if isinstance(value, TracedArray) else value


def wrap(value):
    """A TracedArray around a Tensor result; tuples wrapped elementwise; other values unchanged."""
    if isinstance(value, _tensor.Tensor):
        return TracedArray(value)
    if isinstance(value, tuple):
        return tuple(wrap(v) for v in value)
    return value


def _np_dtype(value):
    if isinstance(value, TracedArray):
        return value.dtype
    if isinstance(value, (bool, int, float, complex)):
        return value
    dtype = np.asarray(value).dtype
    return default_float() if dtype == np.float64 else dtype  # made inside: numpy_default_float


def _operand(value, dtype):
    """``value`` as a Tensor of ``dtype`` (a Python number stays a number)."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return value
    t = unwrap(value)
    if not isinstance(t, _tensor.Tensor):
        t = _creation_from_host(np.asarray(value))
    if t._data.dtype != dtype:
        t = t.to(_dtype._FROM_NUMPY[np.dtype(dtype)])
    return t


def _creation_from_host(array):
    """A host array made inside compiled code, as a tensor; float64 becomes ``numpy_default_float``."""
    dtype = default_float() if array.dtype == np.float64 else array.dtype
    return _creation.tensor(array, dtype=_dtype._FROM_NUMPY[np.dtype(dtype)])


def numpy_result_dtype(ufunc, inputs):
    """The dtypes NumPy would compute ``ufunc(*inputs)`` in and return (NEP 50 rules)."""
    probes = [v if isinstance(v, (bool, int, float)) else np.empty(0, _np_dtype(v)) for v in inputs]
    out = ufunc(*probes)
    out_dtype = (out[0] if isinstance(out, tuple) else out).dtype
    in_dtype = np.result_type(*probes)
    if out_dtype.kind in "fc" and in_dtype.kind not in "fc":
        in_dtype = out_dtype
    return in_dtype, out_dtype


class TracedArray(np.lib.mixins.NDArrayOperatorsMixin):
    """An ndarray stand-in holding a traced Tensor (see the module docstring)."""

    __array_priority__ = 1000

    def __init__(self, t) -> None:
        self._tensor_ = t

    # ------------------------------------------------------------ attributes
    @property
    def shape(self) -> tuple:
        """As ndarray.shape (a size read: Note [Dynamic sizes] in ``symbolic.py``)."""
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_size(self._tensor_)
        return tuple(self._tensor_._data.shape)

    dtype = property(lambda self: self._tensor_._data.dtype, doc="As ndarray.dtype.")
    ndim = property(lambda self: self._tensor_._data.ndim, doc="As ndarray.ndim.")
    size = property(lambda self: self._tensor_._data.size, doc="As ndarray.size.")
    T = property(lambda self: TracedArray(self._tensor_.permute(*reversed(range(self.ndim)))), doc="As ndarray.T.")

    def __len__(self) -> int:
        if _dispatch.tracer is not None and self.ndim:
            _dispatch.tracer.on_size(self._tensor_, 0)
        return len(self._tensor_)

    def __repr__(self) -> str:
        return f"TracedArray(shape={self.shape}, dtype={self.dtype})"

    # ------------------------------------------------------------ protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        rule = UFUNCS.get(ufunc.__name__)
        if method == "__call__" and rule is not None and not kwargs:
            in_dtype, out_dtype = numpy_result_dtype(ufunc, inputs)
            result = rule(*[_operand(v, in_dtype) for v in inputs])
            if result._data.dtype != out_dtype:
                result = result.to(_dtype._FROM_NUMPY[out_dtype])
            return TracedArray(result)
        if method == "reduce" and ufunc.__name__ in ("add", "maximum", "minimum") and len(inputs) == 1:
            name = {"add": "sum", "maximum": "max", "minimum": "min"}[ufunc.__name__]
            return FUNCTIONS[name](inputs[0], kwargs.get("axis", 0), keepdims=kwargs.get("keepdims", False))
        return _fallback(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        rule = FUNCTIONS.get(_function_name(func))
        if rule is not None:
            try:
                return rule(*args, **kwargs)
            except NotImplementedError:
                pass
        return _fallback(func, args, kwargs)

    def __array__(self, dtype=None, copy=None):
        tracer = _dispatch.tracer
        if tracer is not None:
            tracer.on_read(self._tensor_, "array")
        host = self._tensor_._device.backend.to_numpy(self._tensor_._data)
        return host if dtype is None else host.astype(dtype)

    # ------------------------------------------------------------ methods
    def __getitem__(self, index):
        return TracedArray(self._tensor_[_index(index)])

    def __bool__(self) -> bool:
        return bool(self._tensor_)

    def __float__(self) -> float:
        return float(self._tensor_)

    def __int__(self) -> int:
        return int(self._tensor_)

    def item(self):
        """As ndarray.item (a guarded read inside compiled code)."""
        return self._tensor_.item()

    def astype(self, dtype, copy=True):
        """As ndarray.astype."""
        target = _dtype._FROM_NUMPY[np.dtype(dtype)]
        return TracedArray(self._tensor_.to(target) if copy or target != self._tensor_.dtype else self._tensor_)

    def reshape(self, *shape, order="C"):
        """As ndarray.reshape (C order only)."""
        if order != "C":
            raise NotImplementedError("TracedArray.reshape: only order='C'")
        return TracedArray(self._tensor_.reshape(*shape))

    def copy(self):
        """As ndarray.copy."""
        return TracedArray(self._tensor_.clone())

    def transpose(self, *axes):
        """As ndarray.transpose."""
        return TracedArray(self._tensor_.permute(*(axes or reversed(range(self.ndim)))))

    def numpy(self):
        """This array (code that goes tensor -> numpy -> tensor stays in the graph)."""
        return self

    def sum(self, axis=None, keepdims=False, **kw):
        """As ndarray.sum."""
        return FUNCTIONS["sum"](self, axis, keepdims=keepdims, **kw)

    def mean(self, axis=None, keepdims=False, **kw):
        """As ndarray.mean."""
        return FUNCTIONS["mean"](self, axis, keepdims=keepdims, **kw)

    def max(self, axis=None, keepdims=False):
        """As ndarray.max."""
        return FUNCTIONS["max"](self, axis, keepdims=keepdims)

    def min(self, axis=None, keepdims=False):
        """As ndarray.min."""
        return FUNCTIONS["min"](self, axis, keepdims=keepdims)

    def argmin(self, axis=None):
        """As ndarray.argmin."""
        return FUNCTIONS["argmin"](self, axis)

    def argmax(self, axis=None):
        """As ndarray.argmax."""
        return FUNCTIONS["argmax"](self, axis)


def _index(index):
    if isinstance(index, tuple):
        return tuple(_index(i) for i in index)
    if isinstance(index, TracedArray):
        return index._tensor_
    if isinstance(index, np.ndarray):
        return _creation_from_host(index)
    return index


def _function_name(func) -> str:
    module = getattr(func, "__module__", "") or ""
    prefix = "linalg." if "linalg" in module else ""
    return prefix + func.__name__


def _fallback(func, args, kwargs):
    """A NumPy call with no tensor op: a graph break that runs it on the real arrays."""
    host_args = [np.asarray(a) if isinstance(a, TracedArray) else a for a in args]
    host_kwargs = {k: np.asarray(v) if isinstance(v, TracedArray) else v for k, v in kwargs.items()}
    result = func(*host_args, **host_kwargs)
    return _rewrap(result)


def _rewrap(result):
    if isinstance(result, np.ndarray):
        return TracedArray(_creation_from_host(result))
    if isinstance(result, tuple):
        return tuple(_rewrap(r) for r in result)
    return result


def default_float():
    """The dtype NumPy float creation ops make inside compiled code (``numpy_default_float``)."""
    return np.dtype(config.numpy_default_float)
