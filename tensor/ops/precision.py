"""``round_to_dtype``: a float32 tensor's values rounded to a lower precision, kept in float32.

The CPU autocast convolution (Note [Autocast convolution] in nn/functional/conv.py) rounds its
input, weight and bias to the region's dtype once and runs its GEMM in float32 on those values,
which is what a bfloat16 GEMM accumulating in float32 computes, without keeping bfloat16 copies
that each GEMM would widen again in forward and in backward.
"""

from __future__ import annotations

from .. import _backend, _dispatch, _dtype
from .registry import defop

__all__ = ["round_to_dtype"]


@defop("round_to_dtype")
def _round_to_dtype(xp, a, np_dtype):
    return _backend.round_to(a, np_dtype)


@_round_to_dtype.derivative
def _(node, g):
    # As the pair of casts ``a.to(dtype).to(float32)`` it replaces, but with the gradient kept in
    # float32: PyTorch's fused kernels do not round the gradients they pass through either.
    return (g,)


def round_to_dtype(input, dtype: _dtype.dtype):
    """``input.to(dtype).to(input.dtype)`` for a float32 ``input``, in one op whose gradient is
    the incoming gradient unrounded.

    Raises:
        TypeError: if ``input`` is not float32.
    """
    if input.dtype is not _dtype.float32:
        raise TypeError(f"round_to_dtype expects a float32 tensor, got {input.dtype.name}")
    return _dispatch.apply_unary(_round_to_dtype, input, (dtype.numpy,))
