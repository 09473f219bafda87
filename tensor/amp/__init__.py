"""``tensor.amp``: automatic mixed precision, as ``torch.amp``: ``autocast`` (Note [Autocast at the
dispatcher] in tensor/_autocast.py), ``GradScaler`` (tensor/amp/grad_scaler.py), and ``custom_fwd``/
``custom_bwd`` for custom Functions (tensor/amp/_custom_function.py)."""

from .._autocast import autocast, get_autocast_dtype, is_autocast_enabled
from ._custom_function import custom_bwd, custom_fwd
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "get_autocast_dtype", "is_autocast_enabled", "is_autocast_available",
           "custom_fwd", "custom_bwd"]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type`` (``cpu`` and ``cuda``)."""
    return device_type in ("cpu", "cuda")
