"""``cupy.lib``."""

from . import stride_tricks

__all__ = ["stride_tricks"]
