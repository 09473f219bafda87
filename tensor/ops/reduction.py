"""Reductions over dimensions: sum, mean, prod, max/min, arg-reductions, var/std, logsumexp."""

from __future__ import annotations

from collections import namedtuple

from .. import _backend, _dispatch, _dtype
from .._factory import as_int, as_ints, is_int
from . import derivative_helpers, dtype_checks, elementwise, unary
from .registry import defop, public

__all__ = [
    "sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin",
    "var", "std", "logsumexp", "all", "any", "normalize_dims", "sum_to_size",
]

_builtin_all = all
values_indices = namedtuple("values_indices", ["values", "indices"])


def normalize_dims(dim, ndim: int, op_name: str) -> tuple:
    """Turn ``dim`` (None, an int or a sequence) into a sorted tuple of non-negative dims.

    An empty sequence means every dim, as in PyTorch. A 0-d tensor accepts dims 0 and -1
    and has no dims to reduce.

    Raises:
        IndexError: naming the bad dim and the valid range, as PyTorch does.
        RuntimeError: if a dim appears twice.
    """
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if is_int(dim) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    wrapped = [wrap_dim(d, ndim) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        repeated = next(d for d in wrapped if wrapped.count(d) > 1)
        raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
    return tuple(sorted(wrapped)) if ndim else ()


def wrap_dim(dim: int, ndim: int) -> int:
    """Map a possibly negative dim into ``range(ndim)`` (0-d tensors accept -1 and 0); ``dim``
    may be any ``__index__`` object, such as a numpy integer.

    Raises:
        TypeError: for a dim that is no int (a bool, a float).
        IndexError: "Dimension out of range (expected to be in range of [-n, n-1], but got d)".
    """
    if type(dim) is not int:
        dim = as_int(dim)
    span = ndim if ndim > 0 else 1
    if not -span <= dim < span:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-span}, {span - 1}], but got {dim})"
        )
    return dim % span


def _expand_back(g, shape, dims, keepdim):
    # The gradient of a reduction is broadcast back over the reduced dims.
    if not keepdim:
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        g = g.reshape(tuple(kept))
    return g.expand(shape)


@defop("sum")
def _sum(xp, a, dims, keepdim, np_dtype):
    return _backend.accumulate(xp.sum, a, axis=dims, keepdims=keepdim, dtype=np_dtype)


@_sum.derivative
def _(node, g):
    dims, keepdim, _ = node.params
    return (_expand_back(g, node.input_shapes[0], dims, keepdim),)


def _accumulator_dtype(input, dtype):
    """The numpy dtype a sum or product of ``input`` runs in: ``dtype`` if given, int64 for integer and
    bool inputs (as in PyTorch), else None (the input's own)."""
    if dtype is not None:
        return _dtype.as_dtype(dtype).numpy
    if input._data.dtype.kind in "biu":
        return _dtype.int64.numpy
    return None


def sum(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Sum over ``dim`` (all dims if None). Integer and bool inputs sum to int64, as in PyTorch."""
    dims = normalize_dims(dim, input.ndim, "sum")
    return _dispatch.apply_unary(_sum, input, (dims, keepdim, _accumulator_dtype(input, dtype)))


def sum_to_size(input, *size):
    """Sum ``input`` down to ``size`` (the reverse of broadcasting it to ``input.shape``).

    ``size`` is a shape (``sum_to_size((2, 1))``) or its sizes (``sum_to_size(2, 1)``).

    Raises:
        RuntimeError: if ``size`` does not broadcast to the input's shape.
    """
    shape = as_ints(size[0] if len(size) == 1 and not is_int(size[0]) else size)
    if input.shape == shape:
        return input
    lead = input.ndim - len(shape)
    if lead < 0 or not _builtin_all(s in (1, t) for s, t in zip(shape, input.shape[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(input.shape)}}}.")
    dims = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and input.shape[lead + i] != 1
    )
    out = sum(input, dims, keepdim=True) if dims else input
    return out.reshape(shape)


def mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Arithmetic mean over ``dim``.

    Raises:
        RuntimeError: for integer inputs without a floating ``dtype``, as PyTorch does.
    """
    if dtype is not None:
        input = input.to(dtype)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {input.dtype.name}"
        )
    dims = normalize_dims(dim, input.ndim, "mean")
    count = 1
    for d in dims:
        count *= input.shape[d]
    return sum(input, dims, keepdim) / count


@defop("prod", saves=(0,), saves_output=True)
def _prod(xp, a, dims, keepdim, np_dtype):
    return _backend.accumulate(xp.prod, a, axis=dims, keepdims=keepdim, dtype=np_dtype)


@_prod.derivative
def _(node, g):
    (a,) = node.saved
    dims, keepdim, _ = node.params
    g = _expand_back(g, a.shape, dims, keepdim)
    out = _expand_back(node.output, a.shape, dims, keepdim)
    if not bool((a == 0).any()):
        return (g * derivative_helpers.conj_if_complex(out / a),)
    # With zeros, the product of the other elements cannot come from out / a.
    others = _dispatch.make(_prod_of_others(a._device.backend.xp, a._data, dims), a._device)
    return (g * derivative_helpers.conj_if_complex(others),)


def _prod_of_others(xp, a, dims):
    moved = xp.moveaxis(a, dims, tuple(range(len(dims))))
    flat = moved.reshape((-1,) + moved.shape[len(dims):])
    left = xp.cumprod(xp.concatenate([xp.ones_like(flat[:1]), flat[:-1]]), axis=0)
    right = xp.cumprod(xp.concatenate([xp.ones_like(flat[:1]), flat[::-1][:-1]]), axis=0)[::-1]
    others = (left * right).reshape(moved.shape)
    return xp.moveaxis(others, tuple(range(len(dims))), dims)


def prod(input, dim=None, keepdim: bool = False, *, dtype=None):
    """Product over ``dim`` (a single int, or all dims when None)."""
    dims = normalize_dims(dim, input.ndim, "prod")
    return _dispatch.apply_unary(_prod, input, (dims, keepdim, _accumulator_dtype(input, dtype)))


def _extremum(name, reducer, kernel_name):
    def kernel(xp, a, dims, keepdim):
        if a.dtype.kind == "c":
            raise dtype_checks.not_implemented_for(kernel_name, _dtype.from_numpy_dtype(a.dtype))
        return getattr(xp, reducer)(a, axis=dims, keepdims=keepdim)

    op = defop(name, saves=(0,), saves_output=True)(kernel)

    @op.derivative
    def _(node, g):
        # Ties share the gradient evenly, as PyTorch's amax/amin do.
        (a,) = node.saved
        dims, keepdim = node.params
        hit = a == _expand_back(node.output, a.shape, dims, keepdim)
        count = _expand_back(sum(hit, dims, keepdim), a.shape, dims, keepdim)
        return (_expand_back(g, a.shape, dims, keepdim) * hit / count,)

    def run(input, dim=(), keepdim: bool = False):
        dims = normalize_dims(dim, input.ndim, name)
        check_nonempty_reduction(name, input, dim, dims)
        return _dispatch.apply_unary(op, input, (dims, keepdim))

    return public(run, name, f"The {reducer} over ``dim`` (all dims by default); ties share the gradient.")


amax = _extremum("amax", "amax", "max_values_cpu")
amin = _extremum("amin", "amin", "min_values_cpu")


def check_nonempty_reduction(name, input, dim, dims):
    """Raise PyTorch's errors for a max/min-style reduction over an empty dim."""
    if input.numel() != 0:
        return
    if dim is None or dim == () or dim == []:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if input.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _arg_reduction(name, reducer):
    op = defop(name, differentiable=False)(
        lambda xp, a, dim, keepdim: getattr(xp, reducer)(a, axis=dim, keepdims=keepdim))

    def run(input, dim=None, keepdim: bool = False):
        dtype_checks.refuse_complex(input, f"{name}(): does not support complex input")
        if dim is None:
            if input.numel() == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
            return _dispatch.apply_unary(op, input.reshape(-1), (0, False)).reshape(
                (1,) * input.ndim if keepdim else ())
        dim = wrap_dim(dim, input.ndim)
        if input.ndim and input.shape[dim] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
        return _dispatch.apply_unary(op, input, (dim, keepdim))

    return public(run, name, f"Indices of the {reducer[3:]} along ``dim`` (of the flattened input if None).")


argmax = _arg_reduction("argmax", "argmax")
argmin = _arg_reduction("argmin", "argmin")


def _max_or_min(amaxmin, argmaxmin, binary, name):
    def run(input, dim=None, keepdim: bool = False):
        if dim is None:
            return amaxmin(input)
        if _dispatch.is_tensor(dim):
            return binary(input, dim)
        dtype_checks.refuse_complex(input, f"{name}(): does not support complex input")
        if input.ndim == 0:
            wrap_dim(dim, 0)
            return values_indices(unary.clone(input), argmaxmin(input, dim))
        check_nonempty_reduction(name, input, dim, (wrap_dim(dim, input.ndim),))
        indices = argmaxmin(input, dim, keepdim=True)
        values = input.gather(dim, indices)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return values_indices(values, indices)

    return public(run, name, f"``{name}(input)`` is the {name} element; ``{name}(input, dim)`` returns "
                             f"(values, indices); ``{name}(input, other)`` is elementwise.")


max = _max_or_min(amax, argmax, elementwise.maximum, "max")
min = _max_or_min(amin, argmin, elementwise.minimum, "min")


def var(input, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    """Variance over ``dim`` with Bessel's ``correction`` (1 by default, as in PyTorch).

    Also takes PyTorch's deprecated forms ``var(input, unbiased)`` and
    ``var(input, dim, unbiased, keepdim=False)`` (``unbiased`` means correction 1, else 0).
    A complex input gives the real variance of its modulus, ``mean(|x - mean(x)|**2)``.

    Raises:
        TypeError: if both ``unbiased`` and ``correction`` are given, or ``unbiased`` is not a bool.
        RuntimeError: for integer and bool inputs.
    """
    dims, correction = _var_arguments(input, dim, unbiased, correction, "var")
    count = 1
    for d in dims:
        count *= input.shape[d]
    centered = input - mean(input, dims, keepdim=True)
    if input.dtype.is_complex:
        squares = centered.real * centered.real + centered.imag * centered.imag
    else:
        squares = centered * centered
    return sum(squares, dims, keepdim) / builtin_max(count - correction, 0)


def _var_arguments(input, dim, unbiased, correction, name):
    """``(dims, correction)`` of a var/std call, resolving PyTorch's legacy ``unbiased`` forms."""
    if isinstance(dim, bool):  # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None:
        if not isinstance(unbiased, bool):
            raise TypeError(f"{name}(): argument 'unbiased' must be bool, not {type(unbiased).__name__}")
        if correction is not None:
            raise TypeError(f"{name}(): pass either 'unbiased' or 'correction', not both")
        correction = 1 if unbiased else 0
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return normalize_dims(dim, input.ndim, name), 1 if correction is None else correction


def builtin_max(a, b):
    """Python's max (shadowed in this module by the tensor reduction)."""
    return a if a > b else b


@defop("std_from_var", saves_output=True)
def _std_from_var(xp, v):
    return xp.sqrt(v)


@_std_from_var.derivative
def _(node, g):
    # A zero std (a constant slice) has a zero gradient rather than g/0, as in PyTorch; dividing
    # by inf there, not masking afterwards, keeps double backward free of 0 * inf too.
    out = node.output
    return (g / (2 * out.masked_fill(out == 0, float("inf"))),)


def std(input, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    """Standard deviation over ``dim``: the square root of ``var`` (same arguments and errors).

    Where the result is 0 its gradient is 0, as in PyTorch.
    """
    variance = var(input, dim, unbiased, keepdim, correction=correction)
    return _dispatch.apply_unary(_std_from_var, variance)


def logsumexp(input, dim, keepdim: bool = False):
    """``log(sum(exp(input), dim))`` computed without overflow.

    Integer and bool inputs are first cast to the default float dtype; an empty reduced dim
    gives -inf (the log of an empty sum), as in PyTorch.
    """
    if input._data.dtype.kind in "biu":
        input = input.to(_dtype.get_default_dtype())
    dims = normalize_dims(dim, input.ndim, "logsumexp")
    if input.numel() == 0:  # amax has no value to shift by
        return input.exp().sum(dims, keepdim).log()
    shift = amax(input, dims, keepdim=True).detach()
    shift = shift.masked_fill(shift.isinf(), 0)
    out = (input - shift).exp().sum(dims, keepdim=True).log() + shift
    return out if keepdim else out.squeeze(dims)


@defop("all", differentiable=False)
def _all(xp, a, dims, keepdim):
    return xp.all(a, axis=dims, keepdims=keepdim)


@defop("any", differentiable=False)
def _any(xp, a, dims, keepdim):
    return xp.any(a, axis=dims, keepdims=keepdim)


def _logical_reduction(op, input, dim, keepdim):
    # Unlike sum's, an empty dim list reduces nothing here, as in PyTorch.
    reduces_nothing = isinstance(dim, (tuple, list)) and not dim
    dims = () if reduces_nothing else normalize_dims(dim, input.ndim, op.name)
    out = _dispatch.apply_unary(op, input, (dims, keepdim))
    return out.to(_dtype.uint8) if input.dtype is _dtype.uint8 else out


def all(input, dim=None, keepdim: bool = False):
    """True where every element along ``dim`` is non-zero (uint8 in, uint8 out, as in PyTorch).

    ``dim=()`` reduces nothing: each element is tested on its own.
    """
    return _logical_reduction(_all, input, dim, keepdim)


def any(input, dim=None, keepdim: bool = False):
    """True where some element along ``dim`` is non-zero (uint8 in, uint8 out, as in PyTorch).

    ``dim=()`` reduces nothing: each element is tested on its own.
    """
    return _logical_reduction(_any, input, dim, keepdim)
