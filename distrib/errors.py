"""Error types of ``distrib``, matching ``torch.distributed``'s.

``DistError`` is a ``RuntimeError``, so code written against PyTorch that catches
``RuntimeError`` keeps working.
"""

from __future__ import annotations

__all__ = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError"]


class DistError(RuntimeError):
    """Base class of every distributed error."""


class DistBackendError(DistError):
    """A collective or point-to-point operation failed in the backend (timeout, dead peer...)."""


class DistNetworkError(DistError):
    """A socket could not be bound or connected."""


class DistStoreError(DistError):
    """A key-value store operation failed or timed out."""
