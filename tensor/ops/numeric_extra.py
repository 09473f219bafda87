"""``torch.gradient`` (finite differences, a composition of slices: differentiable) and
``torch.histogramdd`` (issue 16)."""

from __future__ import annotations

import numbers
from collections import namedtuple

from .. import _creation, _dispatch, _dtype
from . import join_split as _join_split
from .reduction import wrap_dim
from .registry import defop

__all__ = ["gradient", "histogramdd"]


def _spacings(input, spacing, dims: list[int], dim_given: bool) -> list:
    """One spacing per dim of ``dims``: a number (uniform) or a 1-D tensor of coordinates."""
    if spacing is None or isinstance(spacing, numbers.Number):
        return [1 if spacing is None else spacing] * len(dims)
    if not isinstance(spacing, (list, tuple)):
        raise TypeError(f"gradient(): spacing must be a number or a list/tuple of numbers or tensors, got {spacing!r}")
    if len(spacing) != len(dims):
        where = (
            f"equal to 'len(dim) = {len(dims)}'"
            if dim_given
            else f"equal to 'self.dim() = {input.ndim}', since dim argument was not given"
        )
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"{where}, but got a list of length {len(spacing)}"
        )
    for d, s in zip(dims, spacing):
        if _dispatch.is_tensor(s) and (s.ndim != 1 or s.shape[0] != input.shape[d]):
            raise RuntimeError(
                f"torch.gradient expected each tensor to be on the same device and to have as many elements as "
                f"the input's dim {d} ({input.shape[d]}), got a tensor of shape {list(s.shape)}"
            )
    return list(spacing)


def _along(t, d: int, ndim: int):
    """A 1-D tensor (or a number) shaped to broadcast along dim ``d`` of an ``ndim``-d tensor."""
    return t.reshape((1,) * d + (-1,) + (1,) * (ndim - d - 1)) if _dispatch.is_tensor(t) else t


def _derivative_along(f, d: int, h, edge_order: int):
    """Second-order central differences inside, first- or second-order one-sided at the ends,
    for a uniform step ``h`` (numpy's/CuPy's ``gradient``, an op with its transpose as the
    derivative) or the coordinates ``h`` (a composition of slices, differentiable with respect
    to the coordinates too)."""
    if not _dispatch.is_tensor(h):
        return _dispatch.apply_unary(_gradient_uniform, f, (h, d, edge_order))
    n, nd = f.shape[d], f.ndim

    def part(start: int, stop: int):
        return f.narrow(d, start, stop - start)

    steps = h[1:] - h[:-1]
    left, right = _along(steps[:-1], d, nd), _along(steps[1:], d, nd)
    interior = (left * left * part(2, n) - right * right * part(0, n - 2) + (right * right - left * left)
                * part(1, n - 1)) / (left * right * (left + right))  # fmt: skip
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / steps[0]
        last = (part(n - 1, n) - part(n - 2, n - 1)) / steps[-1]
    else:
        a, b = steps[0], steps[1]
        first = (-(2 * a + b) / (a * (a + b)) * part(0, 1) + (a + b) / (a * b) * part(1, 2)
                 - a / (b * (a + b)) * part(2, 3))  # fmt: skip
        a, b = steps[-2], steps[-1]
        last = (b / (a * (a + b)) * part(n - 3, n - 2) - (a + b) / (a * b) * part(n - 2, n - 1)
                + (2 * b + a) / (b * (a + b)) * part(n - 1, n))  # fmt: skip
    return _join_split.cat([first, interior, last], d)


# The one-sided differences at the first element with a uniform step (times the step); the last
# element's are these reversed and negated.
_EDGE_COEFFICIENTS = {1: (-1.0, 1.0), 2: (-1.5, 2.0, -0.5)}


@defop("gradient_uniform")
def _gradient_uniform(xp, f, h, d, edge_order):
    out = xp.gradient(f, h, axis=d, edge_order=edge_order)
    return out.astype(f.dtype, copy=False)  # numpy makes bfloat16 (not a numpy float) float64


@_gradient_uniform.derivative
def _(node, g):
    # The transpose of the (linear) difference operator, as slices and zero padding.
    h, d, edge_order = node.params
    n = g.shape[d]

    def placed(t, before: int, after: int):
        """``t`` with ``before``/``after`` zeros along ``d``."""
        zeros = [t.new_zeros(t.shape[:d] + (k,) + t.shape[d + 1 :]) for k in (before, after)]
        return _join_split.cat([zeros[0], t, zeros[1]], d)

    inner = g.narrow(d, 1, n - 2) / (2 * h)
    coefficients = _EDGE_COEFFICIENTS[edge_order]
    k = len(coefficients)
    first, last = g.narrow(d, 0, 1) / h, g.narrow(d, n - 1, 1) / h
    head = _join_split.cat([first * c for c in coefficients], d)
    tail = _join_split.cat([last * -c for c in reversed(coefficients)], d)
    return (placed(inner, 2, 0) - placed(inner, 0, 2) + placed(head, 0, n - k) + placed(tail, n - k, 0),)


def gradient(input, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Estimates of the derivatives of ``input`` (samples of a function) along each of ``dim``
    (all dims by default), as ``torch.gradient``: second-order accurate central differences
    inside, one-sided differences of order ``edge_order`` (1 or 2) at the ends. ``spacing`` is
    the step (a number, or one per dim) or the sample coordinates (one 1-D tensor per dim).
    Differentiable (a composition of slices).

    Raises:
        RuntimeError: for an ``edge_order`` other than 1 or 2, a dim shorter than
            ``edge_order + 1``, or a spacing list whose length does not match the dims.
    """
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dim_given = dim is not None
    if dim is None:
        dims = list(range(input.ndim))
    else:
        dims = [wrap_dim(d, input.ndim) for d in ([dim] if isinstance(dim, int) else dim)]
    steps = _spacings(input, spacing, dims, dim_given)
    if any(input.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(_dtype.get_default_dtype())
    return tuple(_derivative_along(input, d, h, edge_order) for d, h in zip(dims, steps))


histogramdd_result = namedtuple("histogramdd", ["hist", "bin_edges"])


@defop("histogramdd", differentiable=False)
def _histogramdd(xp, points, *rest):
    *arrays, weighted, density = rest
    weights = arrays.pop(0) if weighted else None
    return xp.histogramdd(points, bins=list(arrays), weights=weights, density=density)[0].astype(points.dtype)


def _edges(points, bins, range, d: int):  # noqa: A002
    if _dispatch.is_tensor(bins):
        return bins.to(points.dtype)
    if range is not None:
        low, high = float(range[2 * d]), float(range[2 * d + 1])
    elif points.shape[0]:
        low, high = float(points[:, d].min().item()), float(points[:, d].max().item())
    else:
        low, high = 0.0, 1.0
    if low == high:
        low, high = low - 0.5, high + 0.5
    if low > high:
        raise RuntimeError(f"histogramdd: expected the range of dim {d} to be increasing, got [{low}, {high}]")
    return _creation.linspace(low, high, int(bins) + 1, dtype=points.dtype, device=points.device)


def histogramdd(input, bins, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """The histogram of the points ``input`` (..., D) over D dims: ``(hist, bin_edges)``, as
    ``torch.histogramdd``. ``bins`` is a count, one count per dim, or one 1-D tensor of
    increasing edges per dim; ``range`` (D pairs, flattened) bounds equal bins (the data's range
    by default); ``weight`` (``input.shape[:-1]``) weighs each point; ``density`` divides by the
    total and the bin volumes. Points outside the edges are left out; the last bin of each dim
    includes its right edge. Not differentiable.

    Raises:
        RuntimeError: for a non-float input, ``bins`` or ``range`` of the wrong length, or
            ``weight`` of the wrong shape.
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                           f"a floating dtype, got {input.dtype.name}")  # fmt: skip
    if input.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension")
    d = input.shape[-1]
    points = input.reshape(-1, d)
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * d
    if len(per_dim) != d:
        raise RuntimeError(f"torch.histogramdd: expected {d} sequences of bin edges or counts (one per dim), "
                           f"got {len(per_dim)}")  # fmt: skip
    if range is not None and len(range) != 2 * d:
        raise RuntimeError(f"torch.histogramdd: expected {2 * d} values for range (a pair per dim), got {len(range)}")
    edges = [_edges(points, b, range, i) for i, b in enumerate(per_dim)]
    arrays = [points]
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"torch.histogramdd: expected weight of shape {list(input.shape[:-1])}, "
                               f"got {list(weight.shape)}")  # fmt: skip
        arrays.append(weight.reshape(-1).to(input.dtype))
    hist = _dispatch.apply(_histogramdd, (*arrays, *edges), (weight is not None, density))
    return histogramdd_result(hist, tuple(edges))
