"""Triangles and diagonals of matrices: ``tril``/``triu``, ``diagonal``, ``diag_embed``, ``diag``
and ``block_diag``. ``tril``/``triu`` are primitives whose derivative is the same op; ``diagonal``
and ``diagonal_scatter`` are a primitive pair, each the other's derivative; ``block_diag`` is a
composition of ``cat``."""

from __future__ import annotations

from .. import _backend, _dispatch, _dtype
from .join_split import cat
from .reduction import wrap_dim
from .registry import defop

__all__ = ["tril", "triu", "diag", "diagonal", "diag_embed", "block_diag"]


def _triangle(name, numpy_name):
    op = defop(name)(lambda xp, a, k: getattr(xp, numpy_name)(a, k))
    op.derivative(lambda node, g: (_dispatch.apply_unary(op, g, node.params),))

    def run(input, diagonal: int = 0):
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return _dispatch.apply_unary(op, input, (diagonal,))

    run.__name__ = run.__qualname__ = name
    run.__doc__ = (
        f"The {'lower' if name == 'tril' else 'upper'} triangle of the last two dims "
        "(relative to ``diagonal``); the rest is zero.\n\nRaises:\n    RuntimeError: for < 2-d input."
    )
    return run


tril = _triangle("tril", "tril")
triu = _triangle("triu", "triu")


def _diag_index(xp, shape, offset):
    """Row and column indices of diagonal ``offset`` in the last two dims of ``shape``."""
    rows, cols = shape[-2], shape[-1]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    i = xp.arange(length)
    return i - min(offset, 0), i + max(offset, 0)


@defop("diagonal", is_view=True)
def _diagonal(xp, a, offset, dim1, dim2):
    return _backend.diagonal_view(xp, a, offset, dim1, dim2)


@_diagonal.derivative
def _(node, g):
    offset, dim1, dim2 = node.params
    return (_dispatch.apply_unary(_diagonal_scatter, g, (node.input_shapes[0], offset, dim1, dim2)),)


@defop("diagonal_scatter")
def _diagonal_scatter(xp, g, shape, offset, dim1, dim2):
    out = xp.zeros(shape, dtype=g.dtype)
    moved = xp.moveaxis(out, (dim1, dim2), (-2, -1))
    r, c = _diag_index(xp, moved.shape, offset)
    moved[..., r, c] = g
    return out


_diagonal_scatter.derivative(lambda node, g: (_dispatch.apply_unary(_diagonal, g, node.params[1:]),))


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The diagonal ``offset`` of the planes ``(dim1, dim2)``, as a new last dim: a view sharing
    ``input``'s memory, as in PyTorch.

    Raises:
        RuntimeError: if ``dim1`` and ``dim2`` are the same dim.
    """
    d1, d2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _dispatch.apply_unary(_diagonal, input, (offset, d1, d2))


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """Place the last dim of ``input`` on diagonal ``offset`` of new planes ``(dim1, dim2)``.

    Raises:
        RuntimeError: if ``dim1`` and ``dim2`` are the same dim.
    """
    ndim = input.ndim + 1
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset) if input.ndim else 1 + abs(offset)
    rest = list(input.shape[:-1])
    for d in sorted((d1, d2)):
        rest.insert(d, n)
    shape = tuple(rest)
    return _dispatch.apply_unary(_diagonal_scatter, input, (shape, offset, d1, d2))


def diag(input, diagonal: int = 0):
    """A 1-d input's square matrix with it on diagonal ``diagonal``, or a copy of a 2-d input's diagonal.

    Raises:
        RuntimeError: for inputs that are neither 1-d nor 2-d.
    """
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:  # a copy, as PyTorch's (its diagonal() is the view)
        return _dispatch.apply_unary(_diagonal, input, (diagonal, 0, 1)).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def block_diag(*tensors):
    """A block-diagonal matrix from 0-, 1- or 2-d tensors (promoted to one dtype).

    Raises:
        RuntimeError: for inputs with more than 2 dims.
    """
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {t.ndim} dimensions"
            )
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        raise RuntimeError("block_diag: expected at least one tensor")
    dtype = blocks[0].dtype
    for b in blocks[1:]:
        dtype = _dtype.promote_types(dtype, b.dtype)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        b = b.to(dtype)
        parts = [b.new_zeros((b.shape[0], left)), b, b.new_zeros((b.shape[0], width - left - b.shape[1]))]
        rows.append(cat(parts, 1))
        left += b.shape[1]
    return cat(rows, 0)
