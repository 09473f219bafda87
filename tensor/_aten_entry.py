"""ATen entry points that torch exposes at top level, as thin compositions of ``nn.functional``
(imported when called: ``tensor`` never imports ``nn`` at module level) and tensor ops (issue 16,
coverage): ``convolution``, ``grid_sampler[_2d|_3d]``, ``affine_grid_generator``,
``native_dropout``, ``feature_dropout[_]``, ``embedding_bag`` (ATen's four results),
``embedding_renorm_`` and ``i0_``.
"""

from __future__ import annotations

import importlib

from . import _creation, _dtype, _random
from ._tensor import Tensor
from .ops.comparison import where
from .ops.sorting import searchsorted

__all__ = [
    "convolution", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator", "native_dropout",
    "feature_dropout", "feature_dropout_", "embedding_bag", "embedding_renorm_", "i0_",
]  # fmt: skip

_INTERPOLATION = ("bilinear", "nearest", "bicubic")  # ATen's int codes
_PADDING = ("zeros", "border", "reflection")
_EMBEDDING_BAG_MODES = ("sum", "mean", "max")


def _functional(module: str = "nn.functional"):
    return importlib.import_module(module)


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, transposed: bool,
                output_padding, groups: int) -> Tensor:  # fmt: skip
    """``torch.convolution``: ``conv{1,2,3}d`` (or ``conv_transpose{1,2,3}d`` when ``transposed``)
    by the weight's dims. Raises as those functions, and RuntimeError for a weight of fewer than
    3 or more than 5 dims."""
    nd = weight.ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a weight of 3, 4 or 5 dims, got {weight.ndim}")
    F = _functional()
    if transposed:
        return getattr(F, f"conv_transpose{nd}d")(input, weight, bias, stride, padding, output_padding, groups,
                                                   dilation)  # fmt: skip
    return getattr(F, f"conv{nd}d")(input, weight, bias, stride, padding, dilation, groups)


def _mode(codes: tuple, value: int, name: str) -> str:
    if not isinstance(value, int) or not 0 <= value < len(codes):
        raise RuntimeError(f"grid_sampler: {name} must be one of " + ", ".join(
            f"{i} ({m})" for i, m in enumerate(codes)) + f", got {value}")  # fmt: skip
    return codes[value]


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:  # fmt: skip
    """``nn.functional.grid_sample`` with ATen's int codes: ``interpolation_mode`` 0 bilinear,
    1 nearest, 2 bicubic; ``padding_mode`` 0 zeros, 1 border, 2 reflection.

    Raises:
        RuntimeError: for an unknown code; otherwise as ``grid_sample``.
    """
    return _functional().grid_sample(
        input, grid, _mode(_INTERPOLATION, interpolation_mode, "interpolation_mode"),
        _mode(_PADDING, padding_mode, "padding_mode"), align_corners,
    )  # fmt: skip


def _grid_sampler_nd(nd: int):
    def sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                align_corners: bool) -> Tensor:  # fmt: skip
        if input.ndim != nd + 2:
            raise RuntimeError(f"grid_sampler_{nd}d(): expected {nd + 2}D input, got {input.ndim}D")
        return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)

    sampler.__name__ = sampler.__qualname__ = f"grid_sampler_{nd}d"
    sampler.__doc__ = f"``grid_sampler`` of a {nd + 2}-D input. Raises RuntimeError for another input rank."
    return sampler


grid_sampler_2d, grid_sampler_3d = _grid_sampler_nd(2), _grid_sampler_nd(3)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``nn.functional.affine_grid(theta, size, align_corners)``."""
    return _functional().affine_grid(theta, list(size), align_corners)


def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:
    """Dropout with its mask: ``(output, mask)``, ``mask`` (bool) True where kept and
    ``output = input * mask / (1 - p)``. With ``train=False`` the output is a copy of the input
    and the mask all True (``None`` trains, as ATen).

    Raises:
        RuntimeError: for ``p`` outside [0, 1] in training.
    """
    if train is False:
        return input.clone(), _creation.ones(input.shape, dtype=_dtype.bool_, device=input.device)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
    mask = _random.uniform_float32(input.shape, input.device) >= p
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * mask.to(input.dtype) * scale, mask


def _feature_dropout(input: Tensor, p: float, train: bool, inplace: bool) -> Tensor:
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    return _functional("nn.functional.dropout")._feature_dropout(input, p, train, inplace, True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels (one draw per sample and channel of an (N, C, *) input, shared by the
    other dims) with probability ``p`` and scale the rest by ``1 / (1 - p)``; ``input`` itself
    when not ``train``.

    Raises:
        RuntimeError: for ``p`` outside [0, 1] or an input of fewer than 2 dims.
    """
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """``feature_dropout`` in place; returns ``input``. Raises as ``feature_dropout``."""
    return _feature_dropout(input, p, train, True)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Scale the rows of ``weight`` picked by ``indices`` whose ``norm_type``-norm exceeds
    ``max_norm`` down to ``max_norm`` (in place, not recorded by autograd); returns ``weight``."""
    _functional("nn.functional.sparse")._renorm_(weight, indices, max_norm, norm_type)
    return weight


def _bag_of(indices: Tensor, offsets: Tensor | None, include_last_offset: bool) -> tuple[Tensor, int]:
    """The bag of each (flattened) index, and the number of bags."""
    count = indices.numel()
    position = _creation.arange(count, dtype=_dtype.int64, device=indices.device)
    if indices.ndim == 2:
        return position // max(indices.shape[1], 1), indices.shape[0]
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    return searchsorted(offsets.to(_dtype.int64), position, right=True) - 1, bags


def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False,
                  mode: int = 0, sparse: bool = False, per_sample_weights: Tensor | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> tuple:  # fmt: skip
    """``torch.embedding_bag`` (ATen's form; ``mode`` 0 sum, 1 mean, 2 max):
    ``(output, offset2bag, bag_size, max_indices)``. ``output`` is
    ``nn.functional.embedding_bag``'s result, and carries the gradient. The other three are
    integer bookkeeping with the values torch's CPU kernel gives: ``offset2bag`` the bag of each
    index (torch's float32 sum path without ``padding_idx`` leaves it empty), ``bag_size`` the number of non-padding
    indices per bag (zeros in sum mode), ``max_indices`` the row of ``weight`` each maximum came
    from in max mode (0 for an empty bag), ``bag_size`` in mean mode and zeros in sum mode.

    Raises:
        ValueError: for a ``mode`` other than 0, 1, 2; otherwise as ``nn.functional.embedding_bag``.
    """
    if mode not in (0, 1, 2):
        raise ValueError(f"embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got {mode}")
    name = _EMBEDDING_BAG_MODES[mode]
    output = _functional().embedding_bag(
        indices, weight, offsets if indices.ndim == 1 else None, scale_grad_by_freq=scale_grad_by_freq, mode=name,
        sparse=sparse, per_sample_weights=per_sample_weights, include_last_offset=include_last_offset,
        padding_idx=padding_idx,
    )  # fmt: skip
    bag_of, bags = _bag_of(indices, offsets, include_last_offset)
    flat = indices.reshape(-1).to(_dtype.int64)
    if padding_idx is not None:
        padding_idx = padding_idx % weight.shape[0]
    kept = flat != padding_idx if padding_idx is not None else _creation.ones_like(flat, dtype=_dtype.bool_)
    zeros = _creation.zeros(bags, dtype=_dtype.int64, device=indices.device)
    if mode == 0:
        return output, bag_of, zeros, zeros.clone()
    bag_size = zeros.index_add(0, bag_of, kept.to(_dtype.int64))
    if mode == 1:
        return output, bag_of, bag_size, bag_size.clone()
    return output, bag_of, bag_size, _max_rows(weight.detach(), flat, kept, bag_of, output.detach())


def _max_rows(weight: Tensor, flat: Tensor, kept: Tensor, bag_of: Tensor, maxima: Tensor) -> Tensor:
    """The row of ``weight`` each maximum of max-mode ``embedding_bag`` came from (the smallest
    such row on ties; 0 for an empty bag)."""
    width = weight.shape[1]
    rows = weight.index_select(0, flat)
    match = (rows == maxima.index_select(0, bag_of)) & kept.unsqueeze(1)
    none = weight.shape[0]  # larger than any row: "no candidate"
    candidates = where(match, flat.unsqueeze(1).expand(-1, width), none)
    picked = _creation.full(maxima.shape, none, dtype=_dtype.int64, device=weight.device)
    picked = picked.scatter_reduce(0, bag_of.unsqueeze(1).expand(-1, width), candidates, "amin")
    return where(picked == none, 0, picked)


def i0_(input: Tensor) -> Tensor:
    """``input.i0_()``: the modified Bessel function I0 in place; returns ``input``."""
    return input.i0_()
