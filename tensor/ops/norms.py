"""Norms and distances: vector_norm (a primitive), matrix_norm, norm, dist, renorm, cdist."""

from __future__ import annotations

import math

from .. import _dispatch, _dtype
from .comparison import where
from .decomp import svdvals
from .more_ops import sgn
from .reduction import normalize_dims, wrap_dim
from .registry import defop

__all__ = ["norm", "dist", "renorm", "cdist"]  # vector_norm, matrix_norm: tensor.linalg


@defop("vector_norm", saves=(0,), saves_output=True)
def _vector_norm(xp, a, ord, dims, keepdim):
    if a.dtype.kind in "fV" and a.dtype.itemsize == 2:  # float16/bfloat16: accumulated in float32, as torch
        return _vector_norm.kernel(xp, a.astype("float32"), ord, dims, keepdim).astype(a.dtype)
    if a.dtype.kind == "c":
        a = xp.abs(a)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=dims, keepdims=keepdim))
    if ord == 1:
        return xp.sum(xp.abs(a), axis=dims, keepdims=keepdim)
    return xp.sum(xp.abs(a) ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)


@_vector_norm.derivative
def _(node, g):
    (a,) = node.saved
    ord, dims, keepdim = node.params
    out, g = node.output, g
    if not keepdim:
        shape = list(a.shape)
        for d in dims:
            shape[d] = 1
        out, g = out.reshape(shape), g.reshape(shape)
    if ord == 1:
        return (g * sgn(a),)
    # d||a||_p / da = sgn(a) |a|^(p-1) / ||a||^(p-1) (PyTorch's convention for complex a too); the
    # subgradient 0 where the norm is 0, and (p < 1, where |a|^(p-1) is inf) at zero elements, as PyTorch.
    zero = out == 0
    scale = g / where(zero, 1.0, out) ** (ord - 1)
    if ord == 2:
        direction = a
    elif ord < 1:
        direction = where(a == 0, 0.0, sgn(a) * a.abs() ** (ord - 1))
    else:
        direction = sgn(a) * a.abs() ** (ord - 1)
    return (where(zero, 0.0, direction * scale),)


def _float_input(input, dtype, name):
    """``input`` in ``dtype``, which must be as wide and as complex as it (torch's rules)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {input.dtype.name}")
    if dtype is None or dtype is input.dtype:
        return input
    if dtype.is_complex != input.dtype.is_complex:
        kind = "complex" if input.dtype.is_complex else "real"
        raise RuntimeError(f"{name}: dtype should be {kind} for {kind} inputs, but got {dtype.name}")
    if _dtype.promote_types(input.dtype, dtype) is not dtype:
        raise RuntimeError(
            f"{name}: the dtype of the input ({input.dtype.name}) should be convertible without narrowing"
        )
    return input.to(dtype)


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):
    """The ``ord``-norm of ``x`` over ``dim`` (all elements by default), as a vector.

    ``ord`` may be any real number, ``inf`` or ``-inf`` (0 counts the non-zero elements). The
    result is real (float for complex ``x``).

    Raises:
        RuntimeError: for integer inputs, a ``dtype`` that narrows ``x`` or changes whether it is
            complex, or a negative ``ord`` / ``-inf`` over an empty dim.
    """
    x = _float_input(x, dtype, "linalg.vector_norm")
    dims = normalize_dims(dim, x.ndim, "vector_norm")
    if x.numel() == 0 and (ord < 0 or ord == math.inf) and any(x.shape[d] == 0 for d in dims):
        raise RuntimeError(
            f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor "
            "because the operation does not have an identity"
        )
    if ord == math.inf:
        return x.abs().amax(dims, keepdim)
    if ord == -math.inf:
        return x.abs().amin(dims, keepdim)
    if ord == 0:  # the count of non-zeros (NaN counts), on the graph with a zero gradient as PyTorch's
        signs = x.abs().sign() if x.is_complex() else x.sign()  # sign's derivative is zero, NaN included
        return where(x != 0, 1.0, signs).sum(dims, keepdim)
    return _dispatch.apply_unary(_vector_norm, x, (float(ord) if ord not in (1, 2) else ord, dims, keepdim))


def _max_or_zero(x, dim, keepdim):
    """``amax`` over ``dim``, 0 where it is empty (torch's norms of empty matrices; amin still raises)."""
    return x.amax(dim, keepdim) if x.shape[dim] else x.sum(dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2, inf or -inf.

    Raises:
        RuntimeError: for fewer than 2 dims or an unknown ``ord``.
    """
    A = _float_input(A, dtype, "linalg.matrix_norm")
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions (got {A.ndim})")
    d0, d1 = (wrap_dim(d, A.ndim) for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        s = svdvals(A.movedim((d0, d1), (-2, -1)) if (d0, d1) != (A.ndim - 2, A.ndim - 1) else A)
        out = s.sum(-1) if ord == "nuc" else (_max_or_zero(s, -1, False) if ord == 2 else s.amin(-1))
    elif ord in (1, -1, math.inf, -math.inf):
        summed, reduced = (d0, d1) if ord in (1, -1) else (d1, d0)
        sums = A.abs().sum(summed, keepdim=True)
        out = _max_or_zero(sums, reduced, True) if ord > 0 else sums.amin(reduced, keepdim=True)
        return out if keepdim else out.squeeze((d0, d1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if keepdim:
        out = out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    return out


def norm(input, p="fro", dim=None, keepdim: bool = False, dtype=None):
    """``torch.norm``: the Frobenius (``'fro'``), nuclear (``'nuc'``) or vector ``p``-norm over ``dim``."""
    if p == "nuc":
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(input, 2 if p == "fro" or p is None else p, dim, keepdim, dtype=dtype)


def dist(input, other, p: float = 2):
    """The ``p``-norm of ``input - other``."""
    return vector_norm(input - other, p)


def renorm(input, p: float, dim: int, maxnorm: float):
    """Rescale each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` to norm ``maxnorm``."""
    d = normalize_dims(dim, input.ndim, "renorm")[0]
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = vector_norm(input, p, others, keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def cdist(x1, x2, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and ``x2`` (..., R, M).

    Raises:
        RuntimeError: if the inputs are not at least 2-d or their last dims differ.
    """
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if x1.dtype is not x2.dtype:
        common = _dtype.promote_types(x1.dtype, x2.dtype)
        x1, x2 = x1.to(common), x2.to(common)
    differences = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return _chebyshev_distance(differences) if p == math.inf else vector_norm(differences, p, -1)


def _chebyshev_distance(differences):
    """``max |differences|`` along the last dim (0 for no features), whose gradient goes whole to
    every tied coordinate (PyTorch's cdist rule; ``amax`` would split it among them)."""
    size = differences.abs()
    if not differences.shape[-1]:
        return size.sum(-1)
    largest = size.amax(-1, keepdim=True).detach()
    tied = size == largest
    return (largest + where(tied, size - size.detach(), 0.0).sum(-1, keepdim=True)).squeeze(-1)
