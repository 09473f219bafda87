"""Resampling: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area), ``pixel_shuffle``/``pixel_unshuffle``, ``channel_shuffle``, ``affine_grid`` and
``grid_sample``.

Note [Interpolation as matrices]: every separable mode resamples one spatial dim at a time by
an ``(out, in)`` matrix whose rows hold that output position's taps and weights (two for
linear, four for bicubic, one for nearest), built with numpy from PyTorch's source-index rules.
The resampling is then one matmul per dim, so it is fast and its gradient (the transposed
matrix) comes from matmul's derivative.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

import tensor
from tensor import Tensor, _autocast

from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = [
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "affine_grid",
    "grid_sample",
]

_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75


def _source(dst: np.ndarray, n: int, o: int, scale: float | None, align_corners: bool, cubic: bool) -> np.ndarray:
    """PyTorch's source coordinate of each output position ``dst`` (area_pixel_compute_source_index)."""
    if align_corners:
        return dst * ((n - 1) / (o - 1) if o > 1 else 0.0)
    ratio = 1.0 / scale if scale is not None and scale > 0 else n / o
    src = ratio * (dst + 0.5) - 0.5
    return src if cubic else np.maximum(src, 0.0)


def _cubic_weights(t: np.ndarray) -> np.ndarray:
    """The four cubic-convolution weights (taps -1, 0, 1, 2) for fractional offsets ``t``."""
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=1)


def _matrix(mode: str, n: int, o: int, scale: float | None, align_corners: bool) -> np.ndarray:
    """The ``(o, n)`` resampling matrix of one dim (Note [Interpolation as matrices])."""
    dst = np.arange(o, dtype=np.float64)
    matrix = np.zeros((o, n))
    rows = np.arange(o)
    if mode in ("nearest", "nearest-exact"):
        ratio = 1.0 / scale if scale is not None and scale > 0 else n / o
        offset = 0.5 if mode == "nearest-exact" else 0.0
        src = np.minimum(np.floor((dst + offset) * ratio).astype(np.int64), n - 1)
        matrix[rows, src] = 1.0
    elif mode == "bicubic":
        src = _source(dst, n, o, scale, align_corners, cubic=True)
        base = np.floor(src)
        weights = _cubic_weights(src - base)
        for tap in range(4):
            np.add.at(matrix, (rows, np.clip(base.astype(np.int64) - 1 + tap, 0, n - 1)), weights[:, tap])
    else:
        src = _source(dst, n, o, scale, align_corners, cubic=False)
        low = src.astype(np.int64)
        high = np.minimum(low + 1, n - 1)
        frac = src - low
        np.add.at(matrix, (rows, low), 1.0 - frac)
        np.add.at(matrix, (rows, high), frac)
    return matrix


def _antialias_matrix(mode: str, n: int, o: int, scale: float | None, align_corners: bool) -> np.ndarray:
    """The ``(o, n)`` matrix of anti-aliased resampling (PyTorch's ``antialias=True``): a
    triangle (bilinear) or Keys cubic with ``a = -0.5`` (bicubic) filter, stretched by the
    downscale factor so every input pixel contributes, each row normalised to sum 1."""
    if align_corners:
        ratio = (n - 1) / (o - 1) if o > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale is not None and scale > 0 else n / o
    support = (2.0 if mode == "bilinear" else 4.0) / 2 * max(ratio, 1.0)
    inverse = 1.0 / ratio if ratio >= 1.0 else 1.0
    matrix = np.zeros((o, n))
    for i in range(o):
        center = ratio * (i + 0.5)
        low, high = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n)
        x = np.abs((np.arange(low, high) - center + 0.5) * inverse)
        if mode == "bilinear":
            weights = np.maximum(0.0, 1.0 - x)
        else:
            a = -0.5
            weights = np.where(
                x < 1, ((a + 2) * x - (a + 3)) * x * x + 1, np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0)
            )
        total = weights.sum()
        matrix[i, low:high] = weights / total if total else weights
    return matrix


def _resample(input: Tensor, dim: int, matrix: np.ndarray) -> Tensor:
    weights = tensor.tensor(matrix, dtype=input.dtype, device=input.device)
    if dim == input.ndim - 1:
        return input @ weights.mT
    return (weights @ input.movedim(dim, -2)).movedim(-2, dim)


def _output_size(input: Tensor, nd: int, size, scale_factor) -> tuple[list[int], list[float | None]]:
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = [int(s) for s in (size if isinstance(size, Sequence) else [size] * nd)]
        if len(sizes) != nd:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {list(input.shape[2:])} and output size of {sizes}. "
                "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        return sizes, [None] * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = [float(s) for s in (scale_factor if isinstance(scale_factor, Sequence) else [scale_factor] * nd)]
    if len(scales) != nd:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {list(input.shape[2:])} and scale_factor of {scales}."
        )
    return [math.floor(n * s) for n, s in zip(input.shape[2:], scales)], scales


def _check_sizes(in_sizes: Sequence[int], out_sizes: Sequence[int]) -> None:
    if min(*in_sizes, *out_sizes) <= 0:
        names = "DHW"[3 - len(in_sizes):]
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input ("
            + ", ".join(f"{d}: {n}" for d, n in zip(names, in_sizes)) + ") and output ("
            + ", ".join(f"{d}: {n}" for d, n in zip(names, out_sizes)) + ")"
        )


@_autocast.as_op("upsample")  # PyTorch lists no upsampling op: its products stay float32
def interpolate(
    input: Tensor,
    size: int | Sequence[int] | None = None,
    scale_factor: float | Sequence[float] | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims of an ``(N, C, *spatial)`` input to ``size`` or by ``scale_factor``
    with ``mode`` ('nearest', 'nearest-exact', 'linear', 'bilinear', 'bicubic', 'trilinear',
    'area'), as ``torch.nn.functional.interpolate`` (Note [Interpolation as matrices]);
    ``antialias`` (bilinear, bicubic) filters when downsampling.

    A uint8 input (nearest, bilinear, bicubic) is resized as an image: rounded and saturated.

    Raises:
        ValueError: for both or neither of ``size`` and ``scale_factor``, ``align_corners`` with a
            non-interpolating mode, a size of the wrong length, or ``antialias`` with a mode other
            than bilinear/bicubic or an input that is not 4-D.
        NotImplementedError: for an unknown mode, a mode that does not fit the input's rank, or
            an integer input other than such a uint8 one.
        RuntimeError: for an empty spatial input or output size (except in 'area' mode).
    """
    nd = input.ndim - 2
    if mode not in (*_MODE_DIMS, "nearest", "nearest-exact", "area"):
        raise NotImplementedError(f"Unsupported interpolation mode {mode!r}")
    if align_corners is not None and mode not in _MODE_DIMS:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear"
        )
    if antialias and (mode not in ("bilinear", "bicubic") or input.ndim != 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input"
        )
    if nd < 1 or (mode in _MODE_DIMS and _MODE_DIMS[mode] != nd):
        expected = {1: "3D", 2: "4D", 3: "5D"}.get(_MODE_DIMS.get(mode, 0), "3D, 4D or 5D")
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {expected} input")
    if not input.is_floating_point() and not input.is_complex():
        _check_integer_mode(input, mode)
    sizes, scales = _output_size(input, nd, size, scale_factor)
    if recompute_scale_factor:
        scales = [None] * nd
    if mode == "area":
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1]
        return pool(input, sizes)
    _check_sizes(input.shape[2:], sizes)
    build = _antialias_matrix if antialias else _matrix
    image = input.dtype is tensor.uint8  # resized in float32, rounded and saturated after each pass as
    out = input.float() if image else input  # PyTorch's uint8 kernels, which resample the width first
    for axis in reversed(range(nd)):
        dim = 2 + axis
        out = _resample(out, dim, build(mode, input.shape[dim], sizes[axis], scales[axis], bool(align_corners)))
        if image:
            out = (out + 0.5).floor().clamp(0, 255)
    return out.to(tensor.uint8) if image else out


def _check_integer_mode(input: Tensor, mode: str) -> None:
    """PyTorch resizes uint8 images (nearest, bilinear, bicubic) and no other integer input."""
    if input.dtype is not tensor.uint8 or mode not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not implemented for {input.dtype}")


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """Deprecated alias of ``interpolate``."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C * r**2, H, W)`` to ``(*, C, H * r, W * r)``.

    Raises:
        RuntimeError: for ``r < 1``, fewer than 3 dims or channels not divisible by ``r**2``.
    """
    r = upscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(
            f"pixel_shuffle expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
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
    r = downscale_factor
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    if input.ndim < 3:
        raise RuntimeError(
            f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with {input.ndim} dimension(s)"
        )
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
