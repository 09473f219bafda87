"""Which tensor op stands for each NumPy ufunc and array function inside compiled code.

``UFUNCS`` maps a ufunc's name to ``rule(*operands) -> Tensor``; its operands are
already cast to NumPy's result dtype (``numpy_capture.numpy_result_dtype``).
``FUNCTIONS`` maps a NumPy function's name to ``rule(*args, **kwargs) -> TracedArray``
with NumPy's signature; a rule raises NotImplementedError for arguments it does not
take, and the call becomes a graph break.
"""

from __future__ import annotations

import numpy as np

from .. import _device, _dispatch, _dtype, _tensor, ops

__all__ = ["UFUNCS", "FUNCTIONS"]


def _t(value, like=None, dtype=None):
    """A Tensor for an operand: a traced array's tensor, or a 0-d tensor for a number
    (of ``dtype``, else of ``like``'s dtype, on ``like``'s device)."""
    inner = getattr(value, "_tensor_", None)
    if inner is not None:
        return inner
    if isinstance(value, _tensor.Tensor):
        return value
    if dtype is None and like is not None:
        dtype = like.dtype
    return _dispatch.scalar_tensor(value, dtype, like._device if like is not None else _device.get_default_device())


def _binary(fn):
    def rule(a, b):
        if not isinstance(a, _tensor.Tensor):
            a = _t(a, b)
        return fn(a, b)
    return rule


UFUNCS = {
    "add": _binary(ops.add), "subtract": _binary(ops.sub), "multiply": _binary(ops.mul),
    "true_divide": _binary(ops.div), "divide": _binary(ops.div), "power": _binary(ops.pow),
    "maximum": _binary(ops.maximum), "minimum": _binary(ops.minimum),
    "remainder": _binary(ops.remainder), "floor_divide": _binary(ops.floor_divide),
    "equal": _binary(ops.eq), "not_equal": _binary(ops.ne), "less": _binary(ops.lt),
    "less_equal": _binary(ops.le), "greater": _binary(ops.gt), "greater_equal": _binary(ops.ge),
    "logical_and": _binary(ops.logical_and), "logical_or": _binary(ops.logical_or),
    "logical_xor": _binary(ops.logical_xor), "matmul": _binary(ops.matmul),
    "negative": ops.neg, "absolute": ops.abs, "exp": ops.exp, "log": ops.log, "sqrt": ops.sqrt,
    "sin": ops.sin, "cos": ops.cos, "tanh": ops.tanh, "log1p": ops.log1p, "expm1": ops.expm1,
    "floor": ops.floor, "ceil": ops.ceil, "sign": ops.sign, "reciprocal": ops.reciprocal,
    "logical_not": ops.logical_not, "isnan": ops.isnan, "isinf": ops.isinf, "isfinite": ops.isfinite,
    "square": lambda a: ops.mul(a, a), "positive": lambda a: a, "rint": ops.round,
}


def _wrap(t):
    from .numpy_capture import TracedArray  # noqa: PLC0415 - numpy_capture imports this table

    return TracedArray(t)


def _axis(axis):
    if axis is None:
        return None
    return tuple(axis) if isinstance(axis, (tuple, list)) else axis


def _plain(kwargs, *allowed) -> None:
    for key, value in kwargs.items():
        if key not in allowed and value is not None:
            raise NotImplementedError(f"argument {key}")


def _sum(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _plain({"dtype": dtype, "out": out, **kw})
    return _wrap(ops.sum(_t(a), _axis(axis), keepdims))


def _mean(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
    _plain({"dtype": dtype, "out": out, **kw})
    t = _t(a)
    if t._data.dtype.kind not in "fc":
        t = t.to(_dtype.float64)
    return _wrap(ops.mean(t, _axis(axis), keepdims))


def _extremum(reducer):
    def rule(a, axis=None, out=None, keepdims=False, **kw):
        _plain({"out": out, **kw})
        dims = () if axis is None else _axis(axis)
        return _wrap(reducer(_t(a), dims, keepdims))
    return rule


def _arg(reducer):
    def rule(a, axis=None, out=None, keepdims=False):
        _plain({"out": out})
        return _wrap(reducer(_t(a), axis, keepdims))
    return rule


def _norm(x, ord=None, axis=None, keepdims=False):
    t = _t(x)
    if ord not in (None, 2, "fro") or t._data.dtype.kind == "c":
        raise NotImplementedError("norm order")
    if isinstance(axis, (tuple, list)) and len(axis) == 2 and ord == 2:
        raise NotImplementedError("matrix 2-norm")
    if t._data.dtype.kind not in "fc":
        t = t.to(_dtype.float64)
    return _wrap(ops.sqrt(ops.sum(t * t, _axis(axis), keepdims)))


def _where(condition, x=None, y=None):
    if x is None or y is None:
        raise NotImplementedError("one-argument where")
    from .numpy_capture import numpy_result_dtype  # noqa: PLC0415

    _, dtype = numpy_result_dtype(np.add, (x, y))
    target = _dtype._FROM_NUMPY[dtype]
    cond = _t(condition)
    a, b = _t(x, cond, target).to(target), _t(y, cond, target).to(target)
    return _wrap(ops.where(cond.to(_dtype.bool_), a, b))


def _reshape(a, shape=None, order="C", **kw):
    if order != "C" or kw:
        raise NotImplementedError("reshape order")
    return _wrap(ops.reshape(_t(a), shape))


def _transpose(a, axes=None):
    t = _t(a)
    return _wrap(ops.permute(t, *(axes if axes is not None else reversed(range(t.ndim)))))


def _expand_dims(a, axis):
    t = _t(a)
    for d in sorted(axis) if isinstance(axis, (tuple, list)) else (axis,):
        t = ops.unsqueeze(t, d)
    return _wrap(t)


def _sequence(fn):
    def rule(arrays, axis=0, out=None, **kw):
        _plain({"out": out, **kw})
        return _wrap(fn([_t(a) for a in arrays], axis))
    return rule


def _like(fill):
    def rule(a, dtype=None, **kw):
        _plain(kw)
        t = _t(a)
        target = t.dtype if dtype is None else _dtype._FROM_NUMPY[np.dtype(dtype)]
        return _wrap(ops.mul(t.to(target), 0) + fill if fill else ops.mul(t.to(target), 0))
    return rule


def _clip(a, a_min=None, a_max=None, **kw):
    _plain(kw)
    return _wrap(ops.clamp(_t(a), a_min, a_max))


FUNCTIONS = {
    "sum": _sum, "mean": _mean, "max": _extremum(ops.amax), "amax": _extremum(ops.amax),
    "min": _extremum(ops.amin), "amin": _extremum(ops.amin),
    "argmin": _arg(ops.argmin), "argmax": _arg(ops.argmax), "linalg.norm": _norm,
    "where": _where, "reshape": _reshape, "transpose": _transpose, "expand_dims": _expand_dims,
    "squeeze": lambda a, axis=None: _wrap(ops.squeeze(_t(a), axis)),
    "concatenate": _sequence(ops.cat), "stack": _sequence(ops.stack),
    "zeros_like": _like(0), "ones_like": _like(1), "clip": _clip,
    "dot": lambda a, b, out=None: _wrap(ops.matmul(_t(a), _t(b))),
}
