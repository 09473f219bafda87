"""Rearranging channels and pixels: ``pixel_shuffle`` (channels into a finer spatial grid),
``pixel_unshuffle`` (the reverse) and ``channel_shuffle``, each a reshape and transpose."""

from __future__ import annotations

from tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]


def _checked_factor(fn: str, name: str, factor: int, input: Tensor) -> int:
    """``factor``, after PyTorch's checks of it and of ``input``'s rank (RuntimeError)."""
    if factor <= 0:
        raise RuntimeError(f"{fn} expects a positive {name}, but got {factor}")
    if input.ndim < 3:
        raise RuntimeError(
            f"{fn} expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
    return factor


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C * r**2, H, W)`` to ``(*, C, H * r, W * r)``.

    Raises:
        RuntimeError: for ``r < 1``, fewer than 3 dims or channels not divisible by ``r**2``.
    """
    r = _checked_factor("pixel_shuffle", "upscale_factor", upscale_factor, input)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(
            f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H * r, W * r)`` to ``(*, C * r**2, H, W)``, the inverse of ``pixel_shuffle``.

    Raises:
        RuntimeError: for ``r < 1``, fewer than 3 dims or spatial sizes not divisible by ``r``.
    """
    r = _checked_factor("pixel_unshuffle", "downscale_factor", downscale_factor, input)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(
            f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but got {h}x{w} and {r}"
        )
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels (dim 1) of ``groups`` groups.

    Raises:
        RuntimeError: if the channels are not divisible by ``groups``.
    """
    n, c = input.shape[:2]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = input.shape[2:]
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)
