"""``custom_fwd`` / ``custom_bwd``: autocast for the ``forward`` and ``backward`` of a custom
``autograd.Function``, as ``torch.amp``'s decorators.

``custom_fwd`` records on the context whether autocast was on for ``device_type`` (and its
dtype) while ``forward`` ran; with ``cast_inputs``, inside an autocast region it instead casts
the floating tensors among the arguments on that device type to ``cast_inputs`` and runs
``forward`` with autocast off. ``custom_bwd`` runs ``backward`` in the autocast state its
``forward`` saw, so both halves compute in the same precision.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from .. import _dispatch
from .._autocast import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["custom_fwd", "custom_bwd"]


def _check(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def _cast(value, device_type: str, dtype):
    """``value`` with every floating tensor on ``device_type`` cast to ``dtype`` (through tuples,
    lists and dicts)."""
    if _dispatch.is_tensor(value):
        return value.to(dtype) if value.is_floating_point() and value.device.type == device_type else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs=None):
    """Decorate a custom Function's ``forward`` (see the module docstring); usable with or
    without arguments other than ``device_type``.

    Raises:
        ValueError: when ``device_type`` is not a string.
    """
    _check(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward(ctx, *args, **kwargs):
        ctx._dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        if cast_inputs is None or not enabled:
            ctx._fwd_used_autocast = enabled and cast_inputs is None
            return fwd(ctx, *args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type, enabled=False):
            return fwd(ctx, *_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))

    return forward


def custom_bwd(bwd: Callable | None = None, *, device_type: str):
    """Decorate a custom Function's ``backward`` to run in the autocast state of its ``forward``
    (which must be decorated with ``custom_fwd``).

    Raises:
        ValueError: when ``device_type`` is not a string.
    """
    _check(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward(ctx, *args, **kwargs):
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(ctx, *args, **kwargs)

    return backward
