"""A strict, numpy-backed stand-in for CuPy 13, for running the ``cuda`` half of the test suite
without a GPU (see ``tests/_cupy_standin/README.md``).

Only CuPy 13.6's names exist; each array lives on one of ``DISTRIB_CUPY_STANDIN_DEVICES``
emulated devices (default 2); what CuPy refuses, this refuses.
"""

from __future__ import annotations

import numpy as _np

from . import _kernels, _namespace, _ndarray, _routines, _state, cuda, fft, linalg, random
from ._elementwise import ElementwiseKernel
from ._memory import get_default_memory_pool
from ._ndarray import ndarray
from ._raw_kernel import RawKernel
from ._routines import (
    array,
    asanyarray,
    asarray,
    ascontiguousarray,
    asfortranarray,
    asnumpy,
    clip,
    from_dlpack,
    fromDlpack,
    full,
    full_like,
    get_array_module,
    mgrid,
    ogrid,
    where,
)
from .lib import stride_tricks as _stride_tricks  # noqa: F401 - makes cupy.lib.stride_tricks importable

__version__ = "13.6.0"
ufunc = _kernels.ufunc
_OWN = {"full_like", "where", "clip"}


def _install() -> None:
    _ndarray.install_methods()
    namespace = globals()
    for name in _namespace.UFUNCS:
        namespace[name] = ufunc(getattr(_np, name))
    for name in _namespace.FUNCTIONS:
        if name not in _OWN:
            namespace[name] = _kernels.function(_routines.WRAPPING.get(name, getattr(_np, name)), name)
    for name in _namespace.METADATA:
        namespace[name] = _kernels.metadata(getattr(_np, name))
    for name in _namespace.TYPES:
        namespace[name] = getattr(_np, name)


def is_available() -> bool:
    """True: the stand-in always has its emulated devices."""
    return _state.DEVICE_COUNT > 0


def get_default_pinned_memory_pool():
    """Pinned memory is not pooled in the stand-in; the pool reports nothing held."""
    return _PinnedPool()


class _PinnedPool:
    def n_free_blocks(self) -> int:
        """No blocks are cached."""
        return 0

    def free_all_blocks(self) -> None:
        """Nothing to free."""
        pass


_install()
