"""The seam for page-locked ("pinned") host memory, used by ``distrib.data``'s ``pin_memory``.

It asks the backend whether pinned memory exists (only with a CUDA device) and gets it from
CuPy through ``_backend.cupy_module()``; it imports cleanly without CuPy.
"""

from __future__ import annotations

import numpy as np

from . import _backend

__all__ = ["available", "pinned_copy", "is_pinned"]


def available() -> bool:
    """True when pinned host memory can be allocated (CuPy with a CUDA device)."""
    return _backend.cuda_available()


def pinned_copy(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` in pinned host memory (C-contiguous), kept alive by the returned array.

    Raises:
        RuntimeError: (naming the fix) when no CUDA device is available.
    """
    cupy = _backend.cupy_module()
    memory = cupy.cuda.alloc_pinned_memory(max(array.nbytes, 1))
    out = np.frombuffer(memory, array.dtype, array.size).reshape(array.shape)
    out[...] = array
    return out


def is_pinned(array) -> bool:
    """Whether the host ``array`` (or the array it views) lives in memory from ``pinned_copy``."""
    if not isinstance(array, np.ndarray) or not available():
        return False
    pinned_type = _backend.cupy_module().cuda.PinnedMemoryPointer
    while array is not None:  # a view's base, then the buffer np.frombuffer read (through a memoryview)
        if isinstance(array, pinned_type):
            return True
        array = array.obj if isinstance(array, memoryview) else getattr(array, "base", None)
    return False
