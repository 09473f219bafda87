"""``tensor.amp``: automatic mixed precision, as ``torch.amp``: ``autocast`` (Note [Autocast at the
dispatcher] in tensor/_autocast.py) and ``GradScaler`` (tensor/amp/grad_scaler.py)."""

from .._autocast import autocast, get_autocast_dtype, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "get_autocast_dtype", "is_autocast_enabled", "is_autocast_available"]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type`` (``cpu`` and ``cuda``)."""
    return device_type in ("cpu", "cuda")
