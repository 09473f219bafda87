"""Numerical helpers, compositions of differentiable ops: diff, tensordot, inner, cov, corrcoef,
trapezoid, quantile, histogram, triangle index grids, window functions, logspace, vander."""

from __future__ import annotations

import math
from collections import namedtuple

from .. import _autocast, _creation, _dispatch, _dtype
from . import clamping, dtype_checks
from . import elementwise as _ew
from . import join_split as _join_split
from .comparison import where
from .complex_ops import complex, conj, imag, real
from .diagonals import diagonal
from .linalg import dot
from .norms import matrix_norm
from .numeric_extra import histogramdd
from .reduction import normalize_dims, wrap_dim
from .sorting import sort

__all__ = [
    "diff",
    "tensordot",
    "inner",
    "vdot",
    "mv",
    "chain_matmul",
    "cov",
    "corrcoef",
    "trapezoid",
    "trapz",
    "cumulative_trapezoid",
    "histogram",
    "tril_indices",
    "triu_indices",
    "nuclear_norm",
    "frobenius_norm",
    "quantile",
    "nanquantile",
    "vander",
    "unravel_index",
    "hann_window",
    "hamming_window",
    "blackman_window",
    "bartlett_window",
    "logspace",
]


def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (after concatenating ``prepend``/``append``).

    Each difference is one element shorter: from ``n`` at least the size on, the result is empty.

    Raises:
        RuntimeError: for a 0-d input or a negative ``n``, as PyTorch does.
        TypeError: for a ``prepend`` or ``append`` that is not a tensor.
    """
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    for name, t in (("prepend", prepend), ("append", append)):
        if t is not None and not _dispatch.is_tensor(t):
            raise TypeError(f"diff(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if n == 0:  # prepend and append are differences' operands only (PyTorch and numpy)
        return input
    dim = wrap_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    x = _join_split.cat(parts, dim) if len(parts) > 1 else input
    for _ in range(min(n, x.shape[dim])):
        size = x.shape[dim]
        x = (
            x.narrow(dim, 1, size - 1) - x.narrow(dim, 0, size - 1)
            if x.dtype is not _dtype.bool_
            else (x.narrow(dim, 1, size - 1) ^ x.narrow(dim, 0, size - 1))
        )
    return x


def tensordot(a, b, dims=2):
    """Sum products over the last ``dims`` dims of ``a`` and the first of ``b``, or over explicit
    dims: ``dims`` is an int, a pair of dim lists (or ints), or a tensor holding either.

    Raises:
        RuntimeError: for a negative ``dims`` or one larger than either tensor's ndim.
    """
    dims_a, dims_b = _tensordot_dims(dims, a.ndim, b.ndim)
    dims_a = [wrap_dim(d, a.ndim) for d in dims_a]
    dims_b = [wrap_dim(d, b.ndim) for d in dims_b]
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    out_a, out_b = [a.shape[d] for d in free_a], [b.shape[d] for d in free_b]
    k = math.prod(a.shape[d] for d in dims_a)
    # Explicit sizes: with k or a free size 0, reshape could not infer a -1.
    left = a.permute(free_a + dims_a).reshape(math.prod(out_a), k)
    right = b.permute(dims_b + free_b).reshape(k, math.prod(out_b))
    return (left @ right).reshape(out_a + out_b)


def _tensordot_dims(dims, ndim_a, ndim_b):
    """The contracted dims of ``a`` and of ``b``, as two lists, from tensordot's ``dims``."""
    if _dispatch.is_tensor(dims):
        dims = int(dims.item()) if dims.numel() == 1 else dims.tolist()
    if not isinstance(dims, int):
        dims_a, dims_b = dims
        return _dim_list(dims_a), _dim_list(dims_b)
    if dims < 0:
        raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
    if dims > min(ndim_a, ndim_b):
        raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
    return list(range(ndim_a - dims, ndim_a)), list(range(dims))


def _dim_list(dims):
    return [dims] if isinstance(dims, int) else list(dims)


def inner(input, other):
    """The sum of products over the last dims (a product with a scalar for 0-d inputs)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    return tensordot(input, other, ([-1], [-1]))


def vdot(input, other):
    """The dot product of two 1-d tensors, conjugating the first."""
    return (input.conj() * other).sum() if input.dtype.is_complex else dot(input, other)


@_autocast.as_op("mv")
def mv(input, vec):
    """Matrix-vector product.

    Raises:
        RuntimeError: unless ``input`` is 2-d and ``vec`` 1-d.
    """
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    return input @ vec


def chain_matmul(*matrices):
    """The product of 2-d matrices, left to right."""
    out = matrices[0]
    for m in matrices[1:]:
        out = out @ m
    return out


def cov(input, *, correction: int = 1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in columns);
    complex input gives the Hermitian covariance ``E[(x - mean) conj(y - mean)]``.

    Raises:
        RuntimeError: for a bool input or more than 2 dims, or weights of the wrong kind, rank, size
            or sign, as PyTorch.
        TypeError: for a ``correction`` that is not an int.
    """
    if input.dtype is _dtype.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got {input.ndim} dimensions")
    if not isinstance(correction, int):
        raise TypeError(f"cov(): argument 'correction' must be int, not {type(correction).__name__}")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    _check_cov_weights("fweights", fweights, x.shape[1], integral=True)
    _check_cov_weights("aweights", aweights, x.shape[1], integral=False)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(_dtype.get_default_dtype())
    if aweights is not None:
        x = x.to(_dtype.promote_types(x.dtype, aweights.dtype))
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        w = x.new_ones((x.shape[1],))
    total = w.sum()
    mean = (x * w).sum(1, keepdim=True) / total
    norm = total - correction if aweights is None else total - correction * (w * aweights).sum() / total
    centered = x - mean
    out = (centered * w) @ conj(centered.mT) / clamping.clamp(real(norm), min=0)
    return out.squeeze() if 1 in out.shape else out  # one variable gives a 0-d result, as PyTorch


def _check_cov_weights(name: str, weights, observations: int, integral: bool) -> None:
    """PyTorch's checks of cov's ``fweights`` (integral) or ``aweights`` (floating)."""
    if weights is None:
        return
    floating = weights.dtype.is_floating_point
    if floating == integral or weights.dtype.is_complex:
        raise RuntimeError(f"cov(): expected {name} to have {'integral' if integral else 'floating point'} dtype "
                           f"but got {weights.dtype.name}")
    if weights.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {weights.ndim} dimensions")
    if weights.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {weights.numel()} != {observations}")
    if bool((weights < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input``, clipped to [-1, 1] (for complex
    input, the real and imaginary parts each)."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = real(diagonal(c)).sqrt()
    c = c / d.unsqueeze(1) / d.unsqueeze(0)
    if c.dtype.is_complex:
        return complex(clamping.clamp(real(c), -1, 1), clamping.clamp(imag(c), -1, 1))
    return clamping.clamp(c, -1, 1)


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoidal rule along ``dim``, with sample points ``x`` or spacing ``dx`` (1 by default)."""
    dim = wrap_dim(dim, y.ndim)
    n = y.shape[dim]
    _check_sample_points("trapezoid", x)
    mid = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2 if n else y
    if x is not None:
        return (
            diff(x, dim=-1 if x.ndim == 1 else dim).reshape(
                [-1 if i == dim else 1 for i in range(y.ndim)]
                if x.ndim == 1
                else x.shape[:dim] + (n - 1,) + x.shape[dim + 1 :]
            )
            * mid
        ).sum(dim)
    return mid.sum(dim) * (1 if dx is None else dx)


trapz = trapezoid


def _check_sample_points(name: str, x) -> None:
    if x is not None and not _dispatch.is_tensor(x):
        raise TypeError(f"{name}(): argument 'x' must be Tensor, not {type(x).__name__} (use dx= for a spacing)")


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running trapezoidal integral along ``dim`` (one element shorter than ``y``)."""
    dim = wrap_dim(dim, y.ndim)
    n = y.shape[dim]
    _check_sample_points("cumulative_trapezoid", x)
    mid = (y.narrow(dim, 1, n - 1) + y.narrow(dim, 0, n - 1)) / 2 if n else y
    if x is not None:
        step = diff(x, dim=-1 if x.ndim == 1 else dim)
        mid = mid * (step.reshape([-1 if i == dim else 1 for i in range(y.ndim)]) if x.ndim == 1 else step)
    elif dx is not None:
        mid = mid * dx
    return mid.cumsum(dim)


_histogram_result = namedtuple("histogram", ["hist", "bin_edges"])


def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """``(hist, bin_edges)`` of ``input``'s elements: ``bins`` is a count of equal bins over
    ``range`` (the data's range by default) or a 1-D tensor of increasing edges; ``weight`` (as
    many elements as ``input``) weighs each element. The 1-D case of ``histogramdd``.

    Raises:
        TypeError: for both a tensor of edges and ``range``.
        NotImplementedError: for a non-float ``input``, as PyTorch.
    """
    if _dispatch.is_tensor(bins) and range is not None:
        raise TypeError("histogram(): range cannot be given with a tensor of bin edges")
    if not input.dtype.is_floating_point:
        raise dtype_checks.not_implemented_for("histogram", input.dtype)
    flat_weight = None if weight is None else weight.reshape(-1)
    hist, edges = histogramdd(input.reshape(-1, 1), [bins], range=range, weight=flat_weight, density=density)
    return _histogram_result(hist, edges[0])


def _triangle_indices(row, col, offset, upper, dtype, device):

    pairs = [(i, j) for i in range(row) for j in range(col) if (j - i >= offset if upper else j - i <= offset)]
    rows, cols = [p[0] for p in pairs], [p[1] for p in pairs]
    return _creation.tensor([rows, cols], dtype=dtype or _dtype.int64, device=device).reshape(2, len(pairs))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The (2, N) row and column indices of the lower triangle of a ``row x col`` matrix."""
    return _triangle_indices(row, col, offset, False, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The (2, N) row and column indices of the upper triangle of a ``row x col`` matrix."""
    return _triangle_indices(row, col, offset, True, dtype, device)


def nuclear_norm(input, dim=(-2, -1), keepdim: bool = False):
    """The sum of the singular values over the matrix dims ``dim``."""
    return matrix_norm(input, "nuc", dim, keepdim)


def frobenius_norm(input, dim=(-2, -1), keepdim: bool = False):
    """The square root of the sum of squares over ``dim``."""
    return (input * input).sum(normalize_dims(dim, input.ndim, "frobenius_norm"), keepdim).sqrt()


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    if not input.dtype.is_floating_point:
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if _dispatch.is_tensor(q) and q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if interpolation not in _QUANTILE_MODES:
        raise RuntimeError(f"quantile() interpolation must be one of {', '.join(_QUANTILE_MODES)}. Got {interpolation}")
    scalar_q = not _dispatch.is_tensor(q) or q.ndim == 0
    qs = [float(q)] if scalar_q else [float(v) for v in q.reshape(-1).tolist()]
    if any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, input.ndim)
    ordered = sort(x, d).values
    count = (~x.isnan()).sum(d, keepdim=True) if ignore_nan else None
    n = x.shape[d]
    outs = []
    for v in qs:
        pos = (count - 1).clamp(min=0).to(x.dtype) * v if ignore_nan else x.new_full((1,) * x.ndim, (n - 1) * v)
        low, high = pos.floor(), pos.ceil()
        frac = pos - low
        pick = {"lower": low, "higher": high, "nearest": pos.round()}.get(interpolation)
        if pick is not None:
            out = ordered.gather(d, pick.long().expand(_keep_shape(x.shape, d)))
        else:
            lo = ordered.gather(d, low.long().expand(_keep_shape(x.shape, d)))
            hi = ordered.gather(d, high.long().expand(_keep_shape(x.shape, d)))
            out = lo + (hi - lo) * (0.5 if interpolation == "midpoint" else frac)
        if not ignore_nan:
            out = where(x.isnan().any(d, keepdim=True), float("nan"), out)
        outs.append(out if keepdim and dim is not None else out.squeeze(d))
    result = outs[0] if scalar_q else _join_split.stack(outs, 0)
    if keepdim and dim is None:
        result = result.reshape(((len(qs),) if not scalar_q else ()) + (1,) * input.ndim)
    return result


def _keep_shape(shape, d):
    return tuple(1 if i == d else s for i, s in enumerate(shape))


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """The ``q``-th quantiles along ``dim`` (of all elements if None); NaN propagates.

    Raises:
        RuntimeError: for a non-float input, a tensor ``q`` of another dtype, ``q`` outside
            [0, 1] or an unknown ``interpolation``.
    """
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):
    """``quantile`` ignoring NaN values (same errors)."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


def vander(x, N=None, increasing: bool = False):
    """``torch.vander``: columns are powers of ``x``, decreasing unless ``increasing``."""
    n = x.shape[0] if N is None else N
    powers = list(range(n)) if increasing else list(range(n - 1, -1, -1))
    return x.unsqueeze(-1) ** x.new_tensor(powers, dtype=_dtype.int64)


def unravel_index(indices, shape):
    """The coordinates of flat ``indices`` in an array of ``shape``, one tensor per dim."""
    out, rest = [], indices
    for size in reversed(tuple(shape)):
        out.append(_ew.remainder(rest, size))
        rest = _ew.floor_divide(rest, size)
    return tuple(reversed(out))


def _window(name, coefficients):
    def run(window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False):
        if window_length <= 1:
            return _creation.arange(window_length, dtype=dtype or _dtype.get_default_dtype(), device=device) * 0 + 1
        n = window_length + 1 if periodic else window_length
        k = _creation.arange(window_length, dtype=dtype or _dtype.get_default_dtype(), device=device)
        w = sum(c * (k * (2 * math.pi * j / (n - 1))).cos() for j, c in enumerate(coefficients))
        return w.requires_grad_(requires_grad)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"The {name.split('_')[0].title()} window (periodic by default, as PyTorch)."
    return run


hann_window = _window("hann_window", (0.5, -0.5))
hamming_window = _window("hamming_window", (0.54, -0.46))
blackman_window = _window("blackman_window", (0.42, -0.5, 0.08))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window."""
    if window_length <= 1:
        return _creation.arange(window_length, dtype=dtype or _dtype.get_default_dtype(), device=device) * 0 + 1
    n = window_length + 1 if periodic else window_length
    k = _creation.arange(window_length, dtype=dtype or _dtype.get_default_dtype(), device=device)
    return (1 - (2 * k / (n - 1) - 1).abs()).requires_grad_(requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None, requires_grad=False):
    """``base ** linspace(start, end, steps)``, computed in float64 (complex128 for a complex
    ``dtype``, so a negative ``base`` has its complex powers); for an integer ``dtype`` ``start``
    and ``end`` are truncated first, as ``linspace`` does."""
    dtype = dtype or _dtype.get_default_dtype()
    if not (dtype.is_floating_point or dtype.is_complex) and not _dispatch.is_tensor(start):
        start, end = int(start), int(end)
    exponents = _creation.linspace(
        start, end, steps, dtype=_dtype.complex128 if dtype.is_complex else _dtype.float64, device=device
    )
    return (base**exponents).to(dtype).requires_grad_(requires_grad)
