"""Random numbers: ``Generator``, ``manual_seed`` and the sampling functions.

Numbers are drawn on the host from numpy's PCG64 and then placed on the
target device, so a seed gives the same numbers on every device and every run.
"""

from __future__ import annotations

import json

import numpy as np

from . import _creation, _dispatch, _dtype
from ._device import as_device

__all__ = [
    "Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "default_generator", "rand", "randn", "randint", "randperm", "normal", "rand_like",
    "randn_like", "randint_like", "bernoulli", "multinomial",
]


class Generator:
    """A random-number generator with its own state, as ``torch.Generator``."""

    def __init__(self, device="cpu") -> None:
        self.device = as_device(device)
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> Generator:
        """Reset the state from ``seed``; returns ``self``.

        Raises:
            RuntimeError: if ``seed`` is not an integer in [-2**63, 2**64).
        """
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        seed = int(seed)
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise RuntimeError(f"Overflow when unpacking long: seed {seed} is out of range")
        self._seed = seed % 2 ** 64
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Seed from the OS's entropy; returns the new seed."""
        new_seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        self.manual_seed(new_seed)
        return new_seed

    def initial_seed(self) -> int:
        """The seed the current stream started from."""
        return self._seed

    def get_state(self):
        """The full state as a uint8 tensor (safe to save with ``tensor.save``)."""
        blob = json.dumps({"seed": self._seed, "state": self._rng.bit_generator.state})
        return _creation.tensor(np.frombuffer(blob.encode(), dtype=np.uint8))

    def set_state(self, new_state) -> Generator:
        """Restore a state from ``get_state``.

        Raises:
            RuntimeError: if ``new_state`` is not such a state.
        """
        try:
            blob = json.loads(bytes(np.asarray(new_state.cpu()._data, dtype=np.uint8)).decode())
            rng = np.random.Generator(np.random.PCG64())
            rng.bit_generator.state = blob["state"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RuntimeError(f"set_state(): not a generator state ({exc})") from None
        self._seed, self._rng = blob["seed"], rng
        return self

    @property
    def numpy(self) -> np.random.Generator:
        """The underlying numpy generator (for code that samples arrays directly)."""
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_random()
        return self._rng


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator; returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Seed the default generator from OS entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's initial seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state."""
    default_generator.set_state(new_state)


def _rng(generator):
    if _dispatch.tracer is not None:
        _dispatch.tracer.on_random()
    return (generator or default_generator)._rng


def _result(host, dtype, device, requires_grad):
    d = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return _creation.tensor(host, dtype=d, device=device, requires_grad=requires_grad)


def _size(size):
    return _creation._sizes(size)


def rand(*size, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Uniform samples from [0, 1)."""
    return _result(_rng(generator).random(_size(size)), dtype, device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Standard normal samples."""
    return _result(_rng(generator).standard_normal(_size(size)), dtype, device, requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None):
    """Integers from [low, high) (int64 by default); ``randint(high, size)`` starts at 0.

    Raises:
        RuntimeError: if ``low >= high``.
    """
    if size is None:
        low, high, size = 0, low, high
    if high is None or size is None:
        raise TypeError("randint() needs high and size, e.g. randint(0, 10, (3,))")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    host = _rng(generator).integers(low, high, size=tuple(size))
    return _creation.tensor(host, dtype=dtype or _dtype.int64, device=device)


def randperm(n: int, *, generator=None, dtype=None, device=None):
    """A random permutation of ``0..n-1`` (int64 by default)."""
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    return _creation.tensor(_rng(generator).permutation(n), dtype=dtype or _dtype.int64, device=device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Normal samples; ``mean`` and ``std`` may be numbers (with ``size``) or tensors.

    Raises:
        RuntimeError: for a negative ``std``.
    """
    rng = _rng(generator)
    if _dispatch.is_tensor(mean) or _dispatch.is_tensor(std):
        ref = mean if _dispatch.is_tensor(mean) else std
        m = mean.cpu()._data if _dispatch.is_tensor(mean) else mean
        s = std.cpu()._data if _dispatch.is_tensor(std) else std
        if np.any(np.asarray(s) < 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        host = rng.normal(m, s)
        return _creation.tensor(host, dtype=dtype or ref.dtype, device=device or ref.device)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    host = rng.normal(mean, std, size=() if size is None else tuple(size))
    return _result(host, dtype, device, False)


def rand_like(input, *, dtype=None, device=None):
    """``rand`` with ``input``'s shape, dtype and device."""
    return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randn_like(input, *, dtype=None, device=None):
    """``randn`` with ``input``'s shape, dtype and device."""
    return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randint_like(input, low, high=None, *, dtype=None, device=None):
    """``randint`` with ``input``'s shape."""
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``) per element, else 0, in ``input``'s dtype."""
    probs = input.cpu()._data if p is None else np.full(input.shape, p)
    host = (_rng(generator).random(input.shape) < probs).astype(input._data.dtype)
    return _creation.tensor(host, dtype=input.dtype, device=input.device)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):
    """Sample category indices from the rows of non-negative weights ``input``.

    Raises:
        RuntimeError: for too many samples without replacement, or invalid weights.
    """
    weights = np.atleast_2d(np.asarray(input.cpu()._data, dtype=np.float64))
    if (weights < 0).any() or not np.isfinite(weights).all() or (weights.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0, or negative/inf)")
    if not replacement and num_samples > weights.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rng = _rng(generator)
    rows = [rng.choice(w.size, num_samples, replace=replacement, p=w / w.sum()) for w in weights]
    host = np.stack(rows) if input.ndim == 2 else rows[0]
    return _creation.tensor(host, dtype=_dtype.int64, device=input.device)


def uniform_(tensor, a: float = 0.0, b: float = 1.0, *, generator=None):
    """Fill with uniform samples from [a, b); returns ``tensor``."""
    host = _rng(generator).uniform(a, b, tensor.shape)
    return tensor.copy_(_creation.tensor(host, dtype=tensor.dtype))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, *, generator=None):
    """Fill with normal samples; returns ``tensor``."""
    host = _rng(generator).normal(mean, std, tensor.shape)
    return tensor.copy_(_creation.tensor(host, dtype=tensor.dtype))
