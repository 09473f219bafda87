"""Dropout: zero random elements during training and rescale the rest by ``1 / (1 - p)``."""

from __future__ import annotations

import warnings

from tensor import Tensor, _random

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape, p: float, like: Tensor) -> Tensor:
    """``1 / (1 - p)`` where kept, 0 where dropped, drawn from the tensor RNG, in ``like``'s dtype."""
    keep = (_random.uniform_float32(shape, like.device) >= p).to(like.dtype)
    return keep * (1.0 / (1.0 - p)) if p < 1.0 else keep


def _is_identity(input: Tensor, p: float, training: bool) -> bool:
    return not training or p == 0.0 or input.numel() == 0


def _drop(input: Tensor, p: float, shape, inplace: bool) -> Tensor:
    """``input`` times a keep mask of ``shape`` (broadcast against it); in place with ``inplace``."""
    mask = input.new_zeros(()) if p == 1.0 else _keep_mask(shape, p, input)
    # In place it is a recorded mul_, as PyTorch's dropout_: the mask is saved, never stale.
    return input.mul_(mask) if inplace else input * mask


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``; the
    identity when not ``training`` (or ``p == 0``).

    Raises:
        ValueError: if ``p`` is not in [0, 1].
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    _check_p(p)
    if _is_identity(input, p, training):
        return input
    return _drop(input, p, input.shape, inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched: bool) -> Tensor:
    """PyTorch's ``feature_dropout``: one draw per channel (dims N and C, or only C when not
    ``batched``), shared by the rest of the dims."""
    if _is_identity(input, p, training):
        return input
    lead = 2 if batched else 1
    if input.ndim < lead:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _drop(input, p, input.shape[:lead] + (1,) * (input.ndim - lead), inplace)


def _warn_unexpected_ndim(name: str, ndim: int, spatial: int) -> None:
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an "
        "error in a future release. To retain the behavior and silence this warning, please use "
        f"dropout instead. Note that {name} exists to provide channel-wise dropout on inputs with "
        f"{spatial} spatial dimensions, a channel dimension, and an optional batch dimension "
        f"(i.e. {spatial + 1}D or {spatial + 2}D inputs).", stacklevel=3,
    )


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, L) or (C, L) input with probability ``p``.

    Raises:
        ValueError: if ``p`` is not in [0, 1].
        RuntimeError: if the input is not 2-D or 3-D.
    """
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
            "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
            "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, H, W) input with probability ``p``.

    As PyTorch, a 3-D input is read as (N, C, L) (one draw per row of dims 0 and 1) with a
    warning, and any other than 3-D or 4-D input warns and is dropped per (dim 0, dim 1) entry:
    single elements of a 2-D input.

    Raises:
        ValueError: if ``p`` is not in [0, 1].
        RuntimeError: for a 0-D or 1-D input (when dropping).
    """
    _check_p(p)
    if input.ndim not in (3, 4):
        _warn_unexpected_ndim("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
            "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
            "dim. This behavior will change in a future release to interpret the input as one "
            "without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
            "dropout behavior, please switch to using dropout1d instead.", stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, batched=True)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input with probability ``p``.

    As PyTorch, any other than 4-D or 5-D input warns and is read as unbatched (one draw per
    entry of dim 0).

    Raises:
        ValueError: if ``p`` is not in [0, 1].
        RuntimeError: for a 0-D input (when dropping).
    """
    _check_p(p)
    if input.ndim not in (4, 5):
        _warn_unexpected_ndim("dropout3d", input.ndim, 3)
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps the mean and variance of SELU activations.

    Raises:
        ValueError: if ``p`` is not in [0, 1].
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    return _alpha_dropout(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (dim 1; every element of a channel shares its mask).

    Raises:
        ValueError: if ``p`` is not in [0, 1].
        RuntimeError: with ``inplace``, on a leaf that requires grad while autograd records.
    """
    shape = input.shape[:2] + (1,) * (input.ndim - 2)
    return _alpha_dropout(input, p, training, inplace, shape)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, mask_shape) -> Tensor:
    _check_p(p)
    if _is_identity(input, p, training):
        return input
    if p == 1.0:
        return _drop(input, p, (), inplace)
    alpha_p = -1.7580993408473766
    keep = _keep_mask(mask_shape, p, input) * (1.0 - p)  # 1 where kept, 0 where dropped
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    shift = (1 - keep) * (alpha_p * a) - a * alpha_p * p
    factor = keep * a
    return input.mul_(factor).add_(shift) if inplace else input * factor + shift
