"""Sampling at arbitrary points: ``affine_grid`` (the normalized sampling grid of affine maps)
and ``grid_sample`` (nearest, bilinear/trilinear and bicubic sampling of an input at a grid's
points, with zeros, border or reflection padding), differentiable in the input and the grid."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

import tensor
from tensor import Tensor, _autocast

from .sampling import _CUBIC_A

__all__ = ["affine_grid", "grid_sample"]


def _base_coords(n: int, align_corners: bool) -> np.ndarray:
    """The normalized ([-1, 1]) coordinates of ``n`` pixel centres (or corners)."""
    if n <= 1:
        return np.zeros(n)
    coords = np.linspace(-1.0, 1.0, n)
    return coords if align_corners else coords * (n - 1) / n


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of the affine maps ``theta`` (``(N, 2, 3)`` for 2-d, ``(N, 3, 4)`` for
    3-d) over an output of ``size`` ``(N, C, H, W)`` or ``(N, C, D, H, W)``: ``(N, H, W, 2)``
    (or ``(N, D, H, W, 3)``) normalized ``(x, y[, z])`` coordinates.

    Raises:
        ValueError: for a ``theta`` that is not floating point or not ``(N, nd, nd + 1)``.
        NotImplementedError: for a ``size`` that is not 4 or 5 long.
        RuntimeError: if ``theta``'s batch is not ``size[0]``.
    """
    align = bool(align_corners)
    nd = len(size) - 2
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if nd not in (2, 3):
        raise NotImplementedError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. "
            f"Got size {list(size)}."
        )
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(
            f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {list(size)}. "
            f"Got {list(theta.shape)}."
        )
    if theta.shape[0] != size[0]:
        raise RuntimeError(
            f"affine_grid: theta holds {theta.shape[0]} matrices, but size asks for a batch of {size[0]}"
        )
    spatial = list(size[2:])
    grids = np.meshgrid(*[_base_coords(n, align) for n in spatial], indexing="ij")
    coords = grids[::-1]  # x (the last dim) first, then y, (z)
    base = np.stack([*coords, np.ones(spatial)], axis=-1).reshape(-1, nd + 1)
    base_t = tensor.tensor(base, dtype=theta.dtype, device=theta.device)
    return (base_t @ theta.mT).reshape(size[0], *spatial, nd)


@_autocast.as_op("grid_sampler")
def grid_sample(
    input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros", align_corners: bool | None = None
) -> Tensor:
    """Sample a 2-d input ``(N, C, H, W)`` at the normalized ``(x, y)`` points of ``grid``
    ``(N, Ho, Wo, 2)``, or a 3-d input ``(N, C, D, H, W)`` at the ``(x, y, z)`` points of a grid
    ``(N, Do, Ho, Wo, 3)``, with ``mode`` 'bilinear' (trilinear in 3-d), 'nearest' or 'bicubic'
    (2-d) and ``padding_mode`` 'zeros', 'border' or 'reflection'; differentiable in ``input`` and
    (bilinear, bicubic) ``grid``.

    Raises:
        ValueError: for an unknown mode or padding mode.
        NotImplementedError: for bicubic sampling of 5-D input.
        RuntimeError: if ``grid`` does not match ``input`` in shape or dtype.
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    nd = input.ndim - 2
    if nd not in (2, 3) or (mode == "bicubic" and nd != 2):
        raise NotImplementedError("grid_sample supports 4-D and 5-D inputs (bicubic: 4-D only)")
    if grid.dtype != input.dtype:
        raise RuntimeError(
            f"grid_sample(): expected input and grid to have the same dtype, but input has {input.dtype} "
            f"and grid has {grid.dtype}"
        )
    if grid.ndim != nd + 2 or grid.shape[0] != input.shape[0] or grid.shape[-1] != nd:
        raise RuntimeError(
            f"grid_sample(): expected grid of shape [{input.shape[0]}, {', '.join(['*'] * nd)}, {nd}], "
            f"got {list(grid.shape)}"
        )
    align = bool(align_corners)
    if mode == "bicubic":
        return _bicubic(input, grid, align, padding_mode)
    sizes = input.shape[2:][::-1]  # W, H (, D): the order of the grid's coordinates
    coords = [_unnormalize(grid[..., k], sizes[k], align, padding_mode) for k in range(nd)]
    if mode == "nearest":
        out = _gather_points(input, [c.detach().round() for c in coords])
        return _with_zero_gradient_to(out, grid) if grid.requires_grad else out
    lows = [c.detach().floor() for c in coords]
    fractions = [c - low for c, low in zip(coords, lows)]
    out = None
    for corner in itertools.product((0, 1), repeat=nd):
        weight = None
        for k, upper in enumerate(corner):
            factor = fractions[k] if upper else 1 - fractions[k]
            weight = factor if weight is None else weight * factor
        term = _gather_points(input, [low + upper for low, upper in zip(lows, corner)]) * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out


def _with_zero_gradient_to(out: Tensor, source: Tensor) -> Tensor:
    """``out``, recorded as depending on ``source`` with a zero gradient, as PyTorch's nearest
    ``grid_sample`` gives the grid zeros rather than no gradient. An always-true ``where`` never
    reads ``source``'s values, so NaN or inf in it stay out of the result and the gradient."""
    always = tensor.ones((), dtype=tensor.bool, device=out.device)
    return tensor.where(always, out, source.sum().to(out.dtype))


def _unnormalize(coord: Tensor, n: int, align: bool, padding_mode: str) -> Tensor:
    """Grid coordinates in [-1, 1] to pixel coordinates, with border/reflection padding applied."""
    pixel = (coord + 1) / 2 * (n - 1) if align else ((coord + 1) * n - 1) / 2
    return _pad_coordinate(pixel, n, align, padding_mode)


def _pad_coordinate(pixel: Tensor, n: int, align: bool, padding_mode: str) -> Tensor:
    """A pixel coordinate moved inside ``[0, n - 1]`` by border or reflection padding (unchanged
    for zeros padding, where points outside read 0). NaN goes to 0, as PyTorch's CPU kernel."""
    if padding_mode == "border":
        return tensor.clamp(pixel.nan_to_num(0.0), 0, n - 1)
    if padding_mode == "reflection":
        low, span = (0.0, n - 1.0) if align else (-0.5, float(n))
        if span <= 0:  # a single pixel with align_corners: every point reads it
            zeros = tensor.zeros_like(pixel)
            return _with_zero_gradient_to(zeros, pixel) if pixel.requires_grad else zeros
        shifted = (pixel - low).abs()
        flips = (shifted / span).floor()
        extra = shifted - flips * span
        even = flips.remainder(2) == 0
        reflected = tensor.where(even, extra + low, span - extra + low)
        return tensor.clamp(reflected.nan_to_num(0.0), 0, n - 1)
    return pixel


def _bicubic(input: Tensor, grid: Tensor, align: bool, padding_mode: str) -> Tensor:
    """4 x 4 taps around each point with cubic-convolution weights; padding applies to each tap."""
    h, w = input.shape[2:]
    pixels = [
        (grid[..., 0] + 1) / 2 * (w - 1) if align else ((grid[..., 0] + 1) * w - 1) / 2,
        (grid[..., 1] + 1) / 2 * (h - 1) if align else ((grid[..., 1] + 1) * h - 1) / 2,
    ]
    lows = [p.detach().floor() for p in pixels]
    fractions = [p - low for p, low in zip(pixels, lows)]
    weights = [_cubic_tap_weights(t) for t in fractions]
    out = None
    for i, j in itertools.product(range(4), repeat=2):
        taps = [
            _pad_coordinate(lows[0] + (i - 1), w, align, padding_mode).detach(),
            _pad_coordinate(lows[1] + (j - 1), h, align, padding_mode).detach(),
        ]
        term = _gather_points(input, taps) * (weights[0][i] * weights[1][j]).unsqueeze(1)
        out = term if out is None else out + term
    return out


def _cubic_tap_weights(t: Tensor) -> list[Tensor]:
    """The cubic-convolution weights (A = -0.75) of taps -1, 0, 1, 2 at fractional offset ``t``."""
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _gather_points(input: Tensor, coords: list[Tensor]) -> Tensor:
    """``input[n, :, (z,) y, x]`` at integer-valued points ``coords`` (x first, each
    ``(N, *out)``); zero outside the input."""
    n, c = input.shape[:2]
    sizes = input.shape[2:][::-1]
    inside, flat, stride = None, None, 1
    for coord, size in zip(coords, sizes):
        within = (coord >= 0) & (coord <= size - 1)
        inside = within if inside is None else inside & within
        # Any in-range index will do outside; NaN (which clamp keeps) must not reach the cast.
        index = tensor.where(within, coord, 0).to(tensor.int64) * stride
        flat = index if flat is None else flat + index
        stride *= size
    flat = flat.reshape(n, 1, -1).expand(n, c, -1)
    values = input.reshape(n, c, -1).gather(2, flat).reshape(n, c, *coords[0].shape[1:])
    return values * inside.unsqueeze(1).to(input.dtype)
