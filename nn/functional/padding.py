"""Padding: ``pad`` (constant, reflect, replicate, circular), the padding of every ``nn.*Pad*d``
layer and of convolutions with a ``padding_mode``. Every mode is a composition of
differentiable ops (``cat``/``narrow`` for constants, an index gather for the others)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import tensor
from tensor import Tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad ``input``: ``pad`` lists ``(before, after)`` amounts from the last dim backwards
    (``(left, right, top, bottom, ...)``). ``'constant'`` fills with ``value`` (0) and accepts
    negative amounts (cropping); the other modes pad the last 1-3 dims of a batched or unbatched
    input.

    >>> F.pad(tensor.ones(1, 2), (1, 2), value=0.5)
    tensor([[0.5000, 1.0000, 1.0000, 0.5000, 0.5000]])

    Raises:
        RuntimeError: for an odd-length ``pad`` or too many pairs, a ``value`` with a
            non-constant mode, reflect padding not smaller than the dim, circular padding
            wrapping more than once or cropping a dim away, or reflect/replicate padding of an
            input with an empty dim (other than the batch).
        NotImplementedError: for an unknown ``mode``, or a non-constant mode on an input whose
            rank does not fit.
    """
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2, but got {len(pad)}")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            f"Padding length should be less than or equal to two times the input dimension "
            f"but got padding length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode!r}; expected one of {_MODES}")
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)][::-1]  # first padded dim first
    if mode == "constant":
        return _pad_constant(input, pairs, 0.0 if value is None else value)
    if value not in (None, 0):
        raise RuntimeError(f"Padding mode {mode!r} doesn't take in value argument")
    nd = len(pairs)
    if not 1 <= nd <= 3 or input.ndim not in (nd + 1, nd + 2):
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(got {mode} padding of {nd} dims on an input of shape {list(input.shape)})"
        )
    if mode != "circular" and 0 in input.shape[input.ndim - nd - 1:]:
        raise RuntimeError(
            f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    return pad_by_mode(input, pairs, mode)


def _pad_constant(input: Tensor, pairs: list[tuple[int, int]], value: float) -> Tensor:
    out = input
    for i, (lo, hi) in enumerate(pairs):
        dim = input.ndim - len(pairs) + i
        if lo < 0 or hi < 0:
            n = out.shape[dim]
            start, stop = max(-lo, 0), n - max(-hi, 0)
            if stop < start:
                raise RuntimeError(
                    f"The padding ({lo}, {hi}) leaves a negative size at dim {dim} of input {list(input.shape)}"
                )
            out = out.narrow(dim, start, stop - start)
        blocks = []
        for amount in (lo, hi):
            shape = list(out.shape)
            shape[dim] = max(amount, 0)
            blocks.append(tensor.full(shape, value, dtype=out.dtype, device=out.device))
        if lo > 0 or hi > 0:
            out = tensor.cat([blocks[0], out, blocks[1]], dim)
    return out


def pad_by_mode(input: Tensor, pads, mode: str) -> Tensor:
    """Pad the trailing ``len(pads)`` dims by ``(before, after)`` pairs with ``'reflect'``,
    ``'replicate'`` or ``'circular'`` values (gathered by index, so differentiable).

    Raises:
        RuntimeError: if reflect padding is not smaller than the dim, or circular padding
            would wrap around more than once.
    """
    out = input
    for i, (lo, hi) in enumerate(pads):
        dim = input.ndim - len(pads) + i
        index = _source_index(mode, input.shape[dim], lo, hi, dim, input.shape)
        out = out.index_select(dim, tensor.tensor(index, dtype=tensor.int64, device=input.device))
    return out


def _source_index(mode: str, n: int, lo: int, hi: int, dim: int, shape) -> np.ndarray:
    """The input position each output position of dim ``dim`` (size ``n``) copies."""
    if mode == "circular":
        return _circular_index(n, lo, hi)
    if mode == "reflect" and (lo >= n or hi >= n):
        raise RuntimeError(
            f"Padding size should be less than the corresponding input dimension, but got: "
            f"padding ({lo}, {hi}) at dimension {dim} of input {list(shape)}"
        )
    index = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(index, 0, n - 1)
    period = 2 * (n - 1) if n > 1 else 1
    index = np.abs(index) % period
    return np.where(index >= n, period - index, index)


def _circular_index(n: int, lo: int, hi: int) -> np.ndarray:
    """Circular padding's source positions: a negative amount crops first, and the positive
    one wraps around what is left, as PyTorch.

    Raises:
        RuntimeError: if a pad wraps around more than once or the crop leaves nothing to wrap.
    """
    if lo > n or hi > n:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    start, kept = max(-lo, 0), n + min(lo, 0) + min(hi, 0)
    if kept < 0 or (kept == 0 and max(lo, hi) > 0):
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    return start + np.arange(-max(lo, 0), kept + max(hi, 0)) % max(kept, 1)
