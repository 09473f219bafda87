"""Ops whose result's shape does not depend on the values: ``nonzero_static`` and ``hash_tensor``
(issue 16, coverage)."""

from __future__ import annotations

import math

from .. import _backend, _creation, _dispatch
from .join_split import cat
from .reduction import wrap_dim
from .registry import defop
from .selection import nonzero

__all__ = ["hash_tensor", "nonzero_static"]


def nonzero_static(input, *, size: int, fill_value: int = -1):
    """``nonzero(input)`` cut or padded to exactly ``size`` rows (padding rows hold ``fill_value``).

    >>> import tensor
    >>> tensor.nonzero_static(tensor.tensor([0, 3, 0, 5]), size=3)
    tensor([[ 1],
            [ 3],
            [-1]])

    Raises:
        RuntimeError: if ``size`` is not a non-negative int.
    """
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size!r}")
    found = nonzero(input)
    if found.shape[0] >= size:
        return found[:size]
    pad = _creation.full((size - found.shape[0], input.ndim), fill_value, dtype=found.dtype, device=input.device)
    return cat([found, pad])


@defop("hash_tensor", differentiable=False)
def _hash_tensor(xp, a, dims, keepdim):
    # each element as 64 bits (floats widened to float64, integers to int64), xor-reduced over
    # ``dims``, moved last and flattened into one axis
    wide = a.astype(xp.float64 if a.dtype.kind in "fV" else xp.int64, copy=False)
    bits = (wide if wide.flags.c_contiguous else wide.copy()).view(xp.int64)
    if len(dims) == a.ndim and not keepdim:  # the whole tensor: one flat reduction
        return _backend.xor_reduce_last(xp, bits.reshape(-1))
    kept = [d for d in range(a.ndim) if d not in dims]
    flat = xp.transpose(bits, kept + list(dims)).reshape(
        [a.shape[d] for d in kept] + [math.prod(a.shape[d] for d in dims)]
    )
    out = _backend.xor_reduce_last(xp, flat)
    if keepdim:
        out = out.reshape([1 if d in dims else n for d, n in enumerate(a.shape)])
    return out


def hash_tensor(input, dim=None, *, keepdim: bool = False, mode: int = 0):
    """The xor of the elements' 64-bit patterns (floats as float64, integers as int64) over ``dim``
    (all dims for None), as ``torch.hash_tensor``. PyTorch returns uint64, which is not a dtype
    here: the result is int64 holding the same bits (``torch``'s result ``.view(torch.int64)``).

    Raises:
        RuntimeError: for a ``mode`` other than 0, a complex input, or an empty input without ``dim``.
        IndexError: for a reduced dim of size 0.
    """
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    if input.is_complex():
        raise RuntimeError(f"hash_tensor: complex inputs are not supported, got {input.dtype}")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(
                "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        dims = tuple(range(input.ndim))
    else:
        dims = tuple(sorted({wrap_dim(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)}))
        for d in dims:
            if input.shape[d] == 0:
                raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    return _dispatch.apply_unary(_hash_tensor, input, (dims, keepdim))
