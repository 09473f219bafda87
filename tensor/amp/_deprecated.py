"""``tensor.cuda.amp``: PyTorch's deprecated per-device spellings of ``tensor.amp``.

``torch.cuda.amp.autocast(...)`` is ``torch.amp.autocast("cuda", ...)`` and
``torch.cuda.amp.GradScaler(...)`` is ``torch.amp.GradScaler("cuda", ...)``, and
``torch.cuda.amp.custom_fwd``/``custom_bwd`` are ``torch.amp``'s with ``device_type="cuda"``; all
warn (FutureWarning) as PyTorch's do.
"""

from __future__ import annotations

import types
import warnings

from .. import _dtype
from .._autocast import autocast as _autocast
from . import _custom_function
from .grad_scaler import GradScaler as _GradScaler


def _namespace(device_type: str, default_dtype: _dtype.dtype) -> types.SimpleNamespace:
    def autocast(enabled: bool = True, dtype: _dtype.dtype = default_dtype, cache_enabled: bool = True):
        """``tensor.amp.autocast(device_type, ...)`` (deprecated spelling; warns)."""
        warnings.warn(
            f"`tensor.{device_type}.amp.autocast(args...)` is deprecated. Please use "
            f"`tensor.amp.autocast('{device_type}', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return _autocast(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def GradScaler(*args, **kwargs):  # noqa: N802 - PyTorch's name
        """``tensor.amp.GradScaler(device_type, ...)`` (deprecated spelling; warns)."""
        warnings.warn(
            f"`tensor.{device_type}.amp.GradScaler(args...)` is deprecated. Please use "
            f"`tensor.amp.GradScaler('{device_type}', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return _GradScaler(device_type, *args, **kwargs)

    return types.SimpleNamespace(autocast=autocast, GradScaler=GradScaler)


def _warn_custom(name: str) -> None:
    warnings.warn(
        f"`tensor.cuda.amp.{name}(args...)` is deprecated. Please use "
        f"`tensor.amp.{name}(args..., device_type='cuda')` instead.",
        FutureWarning,
        stacklevel=3,
    )


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``tensor.amp.custom_fwd(fwd, device_type="cuda", cast_inputs=...)`` (deprecated spelling;
    warns)."""
    _warn_custom("custom_fwd")
    return _custom_function.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``tensor.amp.custom_bwd(bwd, device_type="cuda")`` (deprecated spelling; warns)."""
    _warn_custom("custom_bwd")
    return _custom_function.custom_bwd(bwd, device_type="cuda")


cuda = types.SimpleNamespace(**vars(_namespace("cuda", _dtype.float16)), custom_fwd=custom_fwd, custom_bwd=custom_bwd)
