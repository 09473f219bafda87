"""``cupy.random``'s generator API (``Generator`` over ``Philox4x3210``), for the stand-in.

The state of a CuPy bit generator lives on the device current when it was made, and sampling
is a kernel there. The numbers here come from numpy's Philox (4x64), not cuRAND's Philox4x32-10:
the stand-in models where numbers are made, not which numbers a GPU makes.
"""

from __future__ import annotations

import numpy as np

from . import _kernels, _state


class Philox4x3210:
    """A counter-based bit generator on the current device, seeded by an integer."""

    def __init__(self, seed=None) -> None:
        self._dev = _state.get_device()
        self._host = np.random.Philox(seed)


class Generator:
    """Sampling from a bit generator: ``random``, ``standard_normal``, ``integers``."""

    def __init__(self, bit_generator: Philox4x3210) -> None:
        self.bit_generator = bit_generator
        self._rng = np.random.Generator(bit_generator._host)

    def _launch(self):
        if self.bit_generator._dev != _state.get_device():
            raise _state.CUDARuntimeError(400, "cudaErrorInvalidResourceHandle", "invalid resource handle")
        _kernels.launch([])
        return self._rng

    def random(self, size=None, dtype=np.float64, out=None):
        """Uniform samples from [0, 1) in float32 or float64."""
        return _kernels.fresh(self._launch().random(size, dtype=dtype))

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        """Standard normal samples in float32 or float64."""
        return _kernels.fresh(self._launch().standard_normal(size, dtype=dtype))

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Integers from [low, high)."""
        return _kernels.fresh(self._launch().integers(low, high, size, dtype=dtype, endpoint=endpoint))
