"""Selection and scatter: nonzero, masked_select/scatter, unique, scatter_reduce, index_copy/fill/reduce,
take, put, and the counting ops (count_nonzero, bincount, histc).

The differentiable ones are compositions of ``where``, ``gather``, ``scatter_add`` and
``index_put``, except ``scatter_reduce``'s extremum and product modes, a primitive here.
"""

from __future__ import annotations

import math

from .. import _backend, _dispatch, _dtype
from .._number_cast import scalar_in_dtype
from .comparison import where
from .dtype_checks import refuse_complex_kernel
from .indexing import (
    _along_dim,
    _at_least_1d,
    _check_index_source,
    _check_index_tensor,
    _check_range,
    _prepared,
    _put_along,
    index_put,
    index_select,
    scatter,
    scatter_add,
)
from .reduction import normalize_dims, wrap_dim
from .registry import defop
from .repeats import broadcast_tensors

__all__ = [
    "nonzero",
    "argwhere",
    "masked_select",
    "masked_scatter",
    "unique",
    "unique_consecutive",
    "scatter_reduce",
    "index_copy",
    "index_fill",
    "index_reduce",
    "take",
    "put",
    "count_nonzero",
    "bincount",
    "histc",
]


def _run_multi(op, input, params=()):
    """Run a non-differentiable kernel that returns several arrays; wrap each as a Tensor."""
    device = input._device
    backend = device.backend
    arrays = backend.launch(device.index, op.kernel, backend.xp, input._data, *params)
    return tuple(_dispatch.make(a, device) for a in arrays)


@defop("nonzero", differentiable=False)
def _nonzero(xp, a):
    return xp.argwhere(a).astype("int64", copy=False)  # already int64 on 64-bit numpy and CuPy


def nonzero(input, *, as_tuple: bool = False):
    """The indices of the non-zero elements, one row each (or, ``as_tuple``, one tensor per dim)."""
    out = _dispatch.apply_unary(_nonzero, input)
    if not as_tuple:
        return out
    if input.ndim == 0:  # one index (0) if the element is non-zero
        return (out.new_zeros((out.shape[0],)),)
    return tuple(out[:, i] for i in range(input.ndim))


def argwhere(input):
    """``nonzero(input)``: one row of indices per non-zero element."""
    return nonzero(input)


def masked_select(input, mask):
    """The elements of ``input`` where the bool ``mask`` is True (both broadcast), as a 1-d tensor.

    Raises:
        RuntimeError: if ``mask`` is not a bool tensor.
    """
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype.name}")
    input, mask = _broadcast_pair(input, mask)
    return input.reshape(-1)[mask.reshape(-1)]


def _broadcast_pair(a, b):
    return broadcast_tensors(a, b)


def masked_scatter(input, mask, source):
    """Copy ``source``'s leading elements, in order, into ``input`` where ``mask`` is True.

    Raises:
        RuntimeError: if ``mask`` is not bool, ``source`` is of another dtype or has fewer elements
            than True entries.
    """
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype.name}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{input.dtype.name} and {source.dtype.name}")
    mask = mask.expand(input.shape) if mask.shape != input.shape else mask
    flat_mask = mask.reshape(-1)
    position = flat_mask.long().cumsum(0) - 1
    count = int(position[-1].item()) + 1 if position.numel() else 0
    if count > source.numel():
        raise RuntimeError(f"masked_scatter: expected source to have at least {count} elements, got {source.numel()}")
    if source.numel() == 0:
        return input.clone()
    picked = source.reshape(-1)[position.clamp(min=0)]
    return where(mask, picked.reshape(input.shape), input)


@defop("unique", differentiable=False)
def _unique(xp, a, dim):
    if dim is None:
        # each NaN is distinct, as in PyTorch (numpy merges them by default)
        values, inverse, counts = xp.unique(a.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
        return values, inverse.reshape(a.shape).astype("int64"), counts.astype("int64")
    values, inverse, counts = xp.unique(a, return_inverse=True, return_counts=True, axis=dim)
    return values, inverse.reshape(-1).astype("int64"), counts.astype("int64")


def _unique_result(values, inverse, counts, return_inverse, return_counts):
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


def _check_unique_dim(input, dim):
    """``dim`` wrapped (None stays None).

    Raises:
        RuntimeError: for an empty input with an empty dim other than ``dim``.
    """
    if dim is None:
        return None
    dim = wrap_dim(dim, input.ndim)
    if input.numel() == 0 and any(s == 0 for k, s in enumerate(input.shape) if k != dim):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    return dim


def unique(input, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False, dim=None):  # noqa: A002
    """The sorted distinct elements (or slices along ``dim``), optionally with the inverse map and
    counts; each NaN is distinct.

    Raises:
        RuntimeError: for an empty input with an empty dim other than ``dim``.
        NotImplementedError: for a complex input, as PyTorch.
    """
    refuse_complex_kernel(input, "unique")
    dim = _check_unique_dim(input, dim)
    values, inverse, counts = _run_multi(_unique, input, (dim,))
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


@defop("unique_consecutive", differentiable=False)
def _unique_consecutive(xp, a, dim):
    rest = math.prod(a.shape[:dim] + a.shape[dim + 1:]) if dim is not None else 1
    moved = a.reshape(-1, 1) if dim is None else xp.moveaxis(a, dim, 0).reshape(a.shape[dim], rest)
    n = moved.shape[0]
    keep = xp.ones((n,), dtype=bool)
    if n > 1:
        keep[1:] = (moved[1:] != moved[:-1]).any(axis=1)
    inverse = (xp.cumsum(keep) - 1).astype("int64")
    starts = xp.flatnonzero(keep)
    counts = xp.diff(xp.concatenate([starts, xp.asarray([n])])).astype("int64")
    if dim is None:
        return a.reshape(-1)[keep], inverse.reshape(a.shape), counts
    return xp.compress(keep, a, axis=dim), inverse, counts


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``) to one.

    Raises:
        RuntimeError: for an empty input with an empty dim other than ``dim``.
        NotImplementedError: for a complex input, as PyTorch.
    """
    refuse_complex_kernel(input, "unique")
    dim = _check_unique_dim(input, dim)
    values, inverse, counts = _run_multi(_unique_consecutive, input, (dim,))
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


# ------------------------------------------------------------------ scatter_reduce

_IDENTITY = {"amax": float("-inf"), "amin": float("inf"), "prod": 1}


@defop("scatter_reduce", saves=(0, 1, 2), saves_output=True)
def _scatter_reduce(xp, a, src, index, dim, reduce, include_self):
    out = a.copy()
    full = _along_dim(xp, index, dim)
    src = src[tuple(slice(0, s) for s in index.shape)]
    if not include_self:
        identity = _IDENTITY[reduce]
        if a.dtype.kind in "iub" and reduce != "prod":
            info = xp.iinfo(a.dtype) if a.dtype.kind != "b" else None
            identity = (info.min if reduce == "amax" else info.max) if info else reduce == "amin"
        out[full] = identity
    _backend.scatter_reduce(xp, out, full, src, reduce)
    return out


@_scatter_reduce.derivative
def _(node, g):
    a, src_full, index = node.saved
    dim, reduce, include_self = node.params
    src = src_full[tuple(slice(0, s) for s in index.shape)]
    out = node.output
    touched = scatter_add(a.new_zeros(a.shape), dim, index, src.new_ones(index.shape)) > 0
    if reduce == "prod":
        ga, gs = _prod_grads(g, a, src, index, dim, include_self, touched, out)
    else:
        self_hit = where(touched, a == out, True) if include_self else ~touched
        src_hit = src == out.gather(dim, index)
        count = scatter_add(self_hit.to(g.dtype), dim, index, src_hit.to(g.dtype))
        ga = g * self_hit / count
        gs = (g / count).gather(dim, index) * src_hit
    if src_full.shape != index.shape:  # only src's leading corner was read
        corner = tuple(slice(0, s) for s in index.shape)
        gs = index_put(g.new_zeros(src_full.shape), corner, gs)
    return ga, gs, None


def _prod_grads(g, a, src, index, dim, include_self, touched, out):
    """The gradients of a scatter product, exact with zeros: each factor's gradient is the product
    of the others (out / factor without zeros; with one zero only that factor's is non-zero)."""
    self_zero = (a == 0) & touched if include_self else a.new_zeros(a.shape, dtype=_dtype.bool_)
    src_zero = src == 0
    zeros = scatter_add(self_zero.long(), dim, index, src_zero.long())
    nonzero_self = where(self_zero, 1.0, a) if include_self else where(touched, 1.0, a)
    nonzero_product = _dispatch.apply(
        _scatter_reduce, (nonzero_self, where(src_zero, 1.0, src), index), (dim, "prod", True)
    )

    def grad_of(factor, is_zero, count, product, upstream):
        safe = where(factor == 0, 1.0, factor)
        return upstream * where(count == 0, product / safe, where(is_zero & (count == 1), product, 0.0))

    ga = g
    if include_self:
        ga = where(touched, grad_of(a, self_zero, zeros, nonzero_product, g), g)
    else:
        ga = where(touched, 0.0, g)
    gs = grad_of(src, src_zero, zeros.gather(dim, index), nonzero_product.gather(dim, index), g.gather(dim, index))
    return ga, gs


def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True):
    """Reduce ``src`` into ``input`` at ``index`` along ``dim`` with "sum", "prod", "mean", "amax" or "amin".

    With ``include_self=False`` the input's values at scattered positions are ignored.

    Raises:
        RuntimeError: for an unknown ``reduce``, a non-integer index, index values outside
            ``[0, size)``, an index larger than the input (outside ``dim``) or ``src``, or a
            ``src`` of another dtype.
    """
    if reduce not in ("sum", "mean", *_IDENTITY):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _check_index_tensor("scatter_reduce", index)
    if index.numel() == 0:
        return input.clone()
    d, index = _prepared("scatter_reduce", input, dim, index, src)
    out = _scatter_reduce_checked(_at_least_1d(input), d, index, _at_least_1d(src), reduce, include_self)
    return out if input.ndim else out.reshape(())


def _scatter_reduce_checked(input, d, index, src, reduce, include_self):
    if reduce not in ("sum", "mean"):
        return _dispatch.apply(_scatter_reduce, (input, src, index), (d, reduce, include_self))
    base = input if include_self else scatter(input, d, index, 0)
    total = scatter_add(base, d, index, src)
    if reduce == "sum":
        return total
    count = scatter_add(input.new_full(input.shape, 1 if include_self else 0), d, index, input.new_ones(index.shape))
    count = where(count == 0, 1, count).to(input.dtype)
    return total // count if not input.dtype.is_floating_point else total / count


def _index_along(index, dim, shape):
    """Expand a 1-d ``index`` along ``dim`` to ``shape`` (for scatter forms of index ops)."""
    view = [1] * len(shape)
    view[dim] = -1
    return index.reshape(view).expand(shape)


def index_reduce(input, dim: int, index, source, reduce: str, *, include_self: bool = True):
    """Reduce slices of ``source`` into ``input[..., index[i], ...]`` with "prod", "mean", "amax" or "amin".

    Raises:
        RuntimeError: for an unknown ``reduce``, or a bad index or source (as ``index_add``).
        IndexError: for a >1-d index or index values outside ``[0, size)``.
    """
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d = wrap_dim(dim, input.ndim)
    _check_index_source("index_reduce", input, d, index, source)
    flat, flat_source = _at_least_1d(input), _at_least_1d(source)
    index = _index_along(index.reshape(-1), d, flat_source.shape)
    out = scatter_reduce(flat, d, index, flat_source, reduce, include_self=include_self)
    return out if input.ndim else out.reshape(())


def _index_mask(input, dim, index):
    mask = input.new_zeros((input.shape[dim],), dtype=_dtype.bool_)
    mask = index_put(mask, (index,), mask.new_ones(()))
    view = [1] * input.ndim
    view[dim] = -1
    return mask.reshape(view)


def _check_long_index(op: str, index, error: type) -> None:
    if not _dispatch.is_tensor(index) or index.dtype is not _dtype.int64:
        got = index.dtype.name if _dispatch.is_tensor(index) else type(index).__name__
        raise error(f"{op}(): Expected dtype int64 for index, got {got}")


def index_fill(input, dim: int, index, value):
    """``input`` with the entries ``index`` along ``dim`` set to ``value`` (negative indices count
    from the end).

    Raises:
        IndexError: for a non-int64 index, or index values outside ``[-size, size)``.
        RuntimeError: for a complex ``value`` with a real input, or a number out of the input
            dtype's range (see ``scalar_in_dtype``).
    """
    _check_long_index("index_fill", index, IndexError)
    d = wrap_dim(dim, input.ndim)
    if _dispatch.is_tensor(value):
        value = value.to(input.dtype)
    else:  # in the input's dtype, which a Python number would otherwise promote (bool with 7)
        if isinstance(value, complex) and not input.dtype.is_complex:
            raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is not supported")
        value = _dispatch.scalar_tensor(scalar_in_dtype(value, input.dtype), input.dtype, input._device)
    flat = _at_least_1d(input)
    out = where(_index_mask(flat, d, index.reshape(-1)), value, flat)
    return out if input.ndim else out.reshape(())


def index_copy(input, dim: int, index, source):
    """``input`` with the entries ``index`` along ``dim`` replaced by ``source``'s slices in order;
    of repeated indices, the last slice wins.

    Raises:
        RuntimeError: for a non-int64 index, or a source of another dtype or slice shape.
        IndexError: for a >1-d index, a source of another rank or number of slices, or index
            values outside ``[0, size)``.
    """
    d = wrap_dim(dim, input.ndim)
    _check_index_copy(input, d, index, source)
    return _put_along(input, d, index, source, False)


def _check_index_copy(input, d: int, index, source) -> None:
    """PyTorch's checks of ``index_copy`` (a 0-d input or source matches any rank)."""
    _check_long_index("index_copy", index, RuntimeError)
    if index.ndim > 1:
        raise IndexError(f"index_copy(): Index should have dimension 1 or 0 (got {index.ndim})")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_copy(): self and source expected to have the same dtype, but got (self) "
                           f"{input.dtype.name} and (source) {source.dtype.name}")
    if input.ndim and source.ndim and input.ndim != source.ndim:
        raise IndexError(f"index_copy(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.ndim}), destination dimensionality ({input.ndim})")
    if input.ndim and source.ndim and any(a != b for k, (a, b) in enumerate(zip(input.shape, source.shape)) if k != d):
        raise RuntimeError(f"index_copy(): Source/destination tensor must have same slice shapes, got "
                           f"{list(source.shape)} and {list(input.shape)} apart from dimension {d}")
    slices = source.shape[d] if source.ndim else 1
    if index.numel() != slices:
        raise IndexError(f"index_copy(): Number of indices ({index.numel()}) should be equal to source.size(dim) "
                         f"({slices})")
    _check_range("index_copy", input, d, index, IndexError)


def take(input, index):
    """The elements of the flattened ``input`` at ``index`` (negative ones counting from the end),
    shaped like ``index``.

    Raises:
        IndexError: for index values outside ``[-numel, numel)``.
    """
    _check_index_tensor("take", index)
    flat = input.reshape(-1)
    wrapped = where(index < 0, index + flat.shape[0], index)
    return index_select(flat, 0, wrapped.reshape(-1)).reshape(index.shape)


def put(input, index, source, accumulate: bool = False):
    """``input`` with its flattened elements at ``index`` set to (or, ``accumulate``, increased by) ``source``.

    Raises:
        RuntimeError: for a non-integer index, or a ``source`` of another dtype.
    """
    _check_index_tensor("put", index)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_dtype.scalar_type_name(input.dtype)} and source.dtype = "
                           f"{_dtype.scalar_type_name(source.dtype)}")
    flat = index_put(input.reshape(-1), (index.reshape(-1),), source.reshape(-1), accumulate)
    return flat.reshape(input.shape)


def count_nonzero(input, dim=None):
    """The number of non-zero elements over ``dim`` (all dims by default)."""
    return (input != 0).sum(normalize_dims(dim, input.ndim, "count_nonzero"))


@defop("bincount", differentiable=False)
def _bincount(xp, a, weights, minlength):
    return xp.bincount(a, weights, minlength)


def bincount(input, weights=None, minlength: int = 0):
    """The count of each value in a 1-d non-negative integer tensor (weighted sums with ``weights``).

    Raises:
        NotImplementedError: for a float input.
        RuntimeError: for a non-1-d input or negative values.
    """
    if input.dtype.is_floating_point or input.dtype.is_complex:
        raise NotImplementedError(f'"bincount" not implemented for {input.dtype.name!r}: it counts integers')
    if input.ndim != 1 or input.dtype is _dtype.bool_:
        raise RuntimeError(
            f"bincount only supports 1-d non-negative integral inputs (got {input.ndim}-d {input.dtype.name})"
        )
    if input.numel() and bool((input < 0).any()):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _dispatch.apply_unary(_bincount, input, (None, minlength)).to(_dtype.int64)
    out = _dispatch.apply(_bincount, (input, weights), (minlength,))
    return out.to(weights.dtype if weights.dtype in (_dtype.float32, _dtype.float64) else _dtype.float64)


@defop("histc", differentiable=False)
def _histc(xp, a, bins, low, high):
    return xp.histogram(a, bins, range=(low, high))[0].astype(a.dtype)


def histc(input, bins: int = 100, min: float = 0, max: float = 0):  # noqa: A002
    """A histogram of ``bins`` equal bins over ``[min, max]`` (the data's range when both are 0).

    Raises:
        NotImplementedError: for a non-float input.
        RuntimeError: if ``max < min``.
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype.name}'")
    if max < min:
        raise RuntimeError(f"max must be larger than min (got min={min}, max={max})")
    if min == max and input.numel():
        min, max = float(input.min().item()), float(input.max().item())
    if min == max:
        min, max = min - 1, max + 1
    return _dispatch.apply_unary(_histc, input, (bins, min, max))
