"""Error types of ``distrib``, matching ``torch.distributed``'s.

``DistError`` is a ``RuntimeError``, so code written against PyTorch that catches
``RuntimeError`` keeps working. Where PyTorch raises ``ValueError`` for using the default
process group in the wrong state (not initialized, or initialized twice), ours raises
``ProcessGroupStateError``, which is both a ``ValueError`` and a ``DistError``. Arguments a
collective cannot use are a ``CollectiveArgumentError``: PyTorch (gloo) raises RuntimeError
there, and it is a ``ValueError`` too, as any other bad argument.
"""

from __future__ import annotations

__all__ = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError", "ProcessGroupStateError",
           "CollectiveArgumentError"]


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


class CollectiveArgumentError(DistError, ValueError):
    """A collective's arguments do not fit: a root rank out of range, a list of the wrong
    length, tensors of the wrong size or dtype, an op the dtype does not support (PyTorch
    raises RuntimeError here; this is also a ``ValueError``)."""
