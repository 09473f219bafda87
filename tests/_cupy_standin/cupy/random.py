"""``cupy.random``'s generator API (``Generator`` over ``Philox4x3210``), for the stand-in.

The state of a CuPy bit generator lives on the device current when it was made, and sampling
is a kernel there. The numbers here come from numpy's Philox (4x64), not cuRAND's Philox4x32-10:
the stand-in models where numbers are made, not which numbers a GPU makes.
"""

from __future__ import annotations

import numpy as np

from . import _kernels, _state

_WORDS = 13  # the numpy Philox state in uint64 words: counter (4), key (2), buffer (4), three scalars


class Philox4x3210:
    """A counter-based bit generator on the current device, seeded by an integer. As in CuPy,
    its state is a device array, ``_state`` (int8), that each draw reads and advances."""

    def __init__(self, seed=None) -> None:
        self._dev = _state.get_device()
        self._state = _kernels.fresh(np.zeros(_WORDS * 8, np.int8))
        self._store(np.random.Philox(seed))

    def _load(self) -> np.random.Philox:
        """The state, read on the device (by the sampling kernel)."""
        w = self._state._a.view(np.uint64)
        bits = np.random.Philox()
        bits.state = {"bit_generator": "Philox", "state": {"counter": w[0:4].copy(), "key": w[4:6].copy()},
                      "buffer": w[6:10].copy(), "buffer_pos": int(w[10]), "has_uint32": int(w[11]),
                      "uinteger": int(w[12])}
        return bits

    def _store(self, bits: np.random.Philox) -> None:
        st = bits.state
        self._state._a.view(np.uint64)[...] = np.concatenate([
            st["state"]["counter"], st["state"]["key"], st["buffer"],
            np.array([st["buffer_pos"], st["has_uint32"], st["uinteger"]], np.uint64)])


class Generator:
    """Sampling from a bit generator: ``random``, ``standard_normal``, ``integers``, ``binomial``,
    ``poisson``."""

    def __init__(self, bit_generator: Philox4x3210) -> None:
        self.bit_generator = bit_generator

    def _draw(self, sample, inputs: tuple = ()):
        """``sample(numpy_generator, *inputs)`` as a kernel on the bit generator's device, advancing
        its state; ``inputs`` (device arrays or numbers) are read on that device."""
        if self.bit_generator._dev != _state.get_device():
            raise _state.CUDARuntimeError(400, "cudaErrorInvalidResourceHandle", "invalid resource handle")
        arrays: list = []
        inputs = _kernels.unwrap(inputs, arrays)
        _kernels.launch([self.bit_generator._state, *arrays])
        rng = np.random.Generator(self.bit_generator._load())
        out = sample(rng, *inputs)
        self.bit_generator._store(rng.bit_generator)
        return _kernels.fresh(out)

    def random(self, size=None, dtype=np.float64, out=None):
        """Uniform samples from [0, 1) in float32 or float64."""
        return self._draw(lambda rng: rng.random(size, dtype=dtype))

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        """Standard normal samples in float32 or float64."""
        return self._draw(lambda rng: rng.standard_normal(size, dtype=dtype))

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Integers from [low, high)."""
        return self._draw(lambda rng: rng.integers(low, high, size, dtype=dtype, endpoint=endpoint))

    def binomial(self, n, p, size=None):
        """Binomial samples (int64) of ``n`` trials with success probability ``p``."""
        return self._draw(lambda rng, n, p: rng.binomial(n, p, size), (n, p))

    def poisson(self, lam=1.0, size=None):
        """Poisson samples (int64) of rate ``lam``."""
        return self._draw(lambda rng, lam: rng.poisson(lam, size), (lam,))
