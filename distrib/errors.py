"""Error types of ``distrib``, matching ``torch.distributed``'s.

``DistError`` is a ``RuntimeError``, so code written against PyTorch that catches
``RuntimeError`` keeps working. Where PyTorch raises ``ValueError`` for using the default
process group in the wrong state (not initialized, or initialized twice), ours raises
``ProcessGroupStateError``, which is both a ``ValueError`` and a ``DistError``.
"""

from __future__ import annotations

__all__ = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError", "ProcessGroupStateError"]


class DistError(RuntimeError):
    """Base class of every distributed error."""


class DistBackendError(DistError):
    """A collective or point-to-point operation failed in the backend (timeout, dead peer...)."""


class DistNetworkError(DistError):
    """A socket could not be bound or connected."""


class DistStoreError(DistError):
    """A key-value store operation failed or timed out."""


class ProcessGroupStateError(DistError, ValueError):
    """The default process group is not initialized yet, or is initialized a second time
    (a ``ValueError``, as PyTorch raises there, and a ``DistError``)."""
