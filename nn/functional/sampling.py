"""Resampling to a new size: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic,
trilinear, area; antialiased downsampling) and the deprecated ``upsample*`` forms. Pixel and
channel shuffles are in ``shuffle``, ``affine_grid``/``grid_sample`` in ``grid_sampling``.

Note [Interpolation as matrices]: every separable mode resamples one spatial dim at a time by
an ``(out, in)`` matrix whose rows hold that output position's taps and weights (two for
linear, four for bicubic, one for nearest), built with numpy from PyTorch's source-index rules.
The resampling is then one matmul per dim, so it is fast and its gradient (the transposed
matrix) comes from matmul's derivative.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import tensor
from tensor import Tensor, _autocast

from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

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
