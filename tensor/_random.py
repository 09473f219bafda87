"""Random numbers: ``Generator``, ``manual_seed`` and the sampling functions.

Note [Random numbers per device]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Each device has its own default generator, and numbers are made on the device that will hold
them: on the CPU numpy's PCG64, on a GPU CuPy's Philox4x32-10 counter generator
(``cupy.random``), so that sampling (dropout's mask every forward) copies nothing from the host.
``manual_seed(s)`` seeds the CPU generator and every GPU's with ``s``
(``tensor.cuda.manual_seed`` one GPU, ``manual_seed_all`` all of them).

The guarantee: a seed gives the same numbers on every run on the same kind of device (and the
same CuPy), and the same numbers on each GPU. CPU and GPU numbers differ, as in PyTorch. A
``Generator`` passed explicitly draws on its own device; its numbers are moved to the target
device. ``normal`` with tensor arguments draws on the host with the CPU generator; every other
sampler (``randperm``, ``multinomial``, ``nn.init``'s) draws on the device it fills.
``get_state``/``set_state`` save and restore a generator of any device (a GPU's state is its
cuRAND Philox states, a few MB, copied to and from the host).
"""

from __future__ import annotations

import json

import numpy as np

from . import _creation, _dispatch, _dtype
from . import _memory_format as _formats
from ._device import as_device, device_of_array
from ._factory import factory
from .ops.sorting import searchsorted

__all__ = [
    "Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "default_generator", "rand", "randn", "randint", "randperm", "normal", "rand_like",
    "randn_like", "randint_like", "bernoulli", "multinomial",
]


class Generator:
    """A random-number generator with its own state, as ``torch.Generator``."""

    def __init__(self, device="cpu") -> None:
        self.device = as_device(device)
        self._seed = _DEFAULT_SEED
        self._rng = self._new_rng(self._seed)

    def _new_rng(self, seed: int):
        return self.device.backend.new_generator(seed, self.device.index)

    def manual_seed(self, seed: int) -> Generator:
        """Reset the state from ``seed``; returns ``self``.

        Raises:
            RuntimeError: if ``seed`` is not an integer (a bool or float either), as torch.
            ValueError: for an integer outside [-2**63, 2**64), as torch.
        """
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise ValueError(f"Overflow when unpacking long long: seed {seed} is out of range")
        self._seed = seed % 2 ** 64
        self._rng = self._new_rng(self._seed)
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
        """The full state as a uint8 CPU tensor (safe to save with ``tensor.save``): the seed,
        then the bit generator's state (PCG64's on the CPU; on a GPU the Philox states of
        CuPy's cuRAND generator, copied from the device).
        """
        header = json.dumps({"seed": self._seed, "device": self.device.type}).encode()
        raw = self.device.backend.generator_state(self._rng)
        return _creation.tensor(np.frombuffer(header + b"\n" + raw, dtype=np.uint8))

    def set_state(self, new_state) -> Generator:
        """Restore a state from ``get_state`` of a generator of the same kind of device.

        Raises:
            RuntimeError: if ``new_state`` is not such a state.
        """
        try:
            header, raw = bytes(new_state.cpu().numpy()).split(b"\n", 1)
            meta = json.loads(header.decode())
            if meta["device"] != self.device.type:
                raise ValueError(f"it is the state of a {meta['device']} generator, this one is on {self.device}")
            rng = self._new_rng(meta["seed"])
            with self.device.backend.device_guard(self.device.index):
                self.device.backend.set_generator_state(rng, raw)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise RuntimeError(f"set_state(): not a generator state ({exc})") from None
        self._seed, self._rng = meta["seed"], rng
        return self

    @property
    def numpy(self) -> np.random.Generator:
        """The underlying numpy generator (for code that samples arrays directly)."""
        if _dispatch.tracer is not None:
            _dispatch.tracer.on_random()
        return self._rng


_DEFAULT_SEED = 67280421310721
default_generator = Generator()
_device_generators: dict[tuple[str, int | None], Generator] = {("cpu", None): default_generator}
_device_seeds: dict[tuple[str, int | None], int] = {}  # seeds of GPU generators not made yet
_seed_all = [_DEFAULT_SEED]  # the seed of the other GPUs' generators


def generator_of(device) -> Generator:
    """The default generator of ``device`` (made on first use, from its seed)."""
    device = as_device(device)
    key = (device.type, device.index if device.index is not None else device.backend.current_index())
    gen = _device_generators.get(key)
    if gen is None:
        gen = _device_generators[key] = Generator(f"{key[0]}:{key[1]}")
        gen.manual_seed(_device_seeds.get(key, _seed_all[0]))
    return gen


def seed_device(device, seed: int) -> None:
    """Seed the default generator of the GPU ``device`` (``tensor.cuda.manual_seed``)."""
    device = as_device(device)
    key = (device.type, device.index if device.index is not None else device.backend.current_index())
    _device_seeds[key] = seed
    if key in _device_generators:
        _device_generators[key].manual_seed(seed)


def manual_seed(seed: int) -> Generator:
    """Seed the CPU's default generator and every GPU's (Note [Random numbers per device]);
    returns the CPU's. A GPU's generator is made again from the seed at its next use, as
    PyTorch seeds CUDA lazily: a forked DataLoader worker, where CUDA cannot be used, seeds
    without touching it. As torch's, it takes anything ``int()`` takes (``1.5`` seeds with 1).

    Raises:
        ValueError: for a seed outside [-2**63, 2**64), or one ``int()`` refuses.
    """
    seed = int(seed)
    default_generator.manual_seed(seed)
    for key in [key for key in _device_generators if key[0] != "cpu"]:
        del _device_generators[key]
    _device_seeds.clear()
    _seed_all[0] = seed
    return default_generator


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


def uniform_float32(shape, device):
    """Uniform float32 samples from [0, 1) made on ``device`` by its generator (dropout's masks)."""
    return _sample(lambda rng: rng.random(shape, dtype=np.float32), None, _dtype.float32, device)


def _sample(draw, generator, dtype, device, requires_grad: bool = False):
    """``draw(rng)`` with ``generator`` (by default ``device``'s own), made on the generator's
    device and moved to ``device`` only if that differs; cast to ``dtype`` (the default float
    dtype for None)."""
    device = as_device(device)
    gen = generator if generator is not None else generator_of(device)
    if _dispatch.tracer is not None:
        _dispatch.tracer.on_random()
    backend = gen.device.backend
    with backend.device_guard(gen.device.index):
        array = draw(gen._rng)
    if not array.shape:  # arithmetic on a 0-d draw gives a scalar, not an array
        array = backend.xp.asarray(array)
    d = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    out = _creation._finish(array, device_of_array(array), False).to(device=device, dtype=d)
    return out.requires_grad_(True) if requires_grad else out


def _size(size):
    return _creation._sizes(size)


# Note [Low-precision and complex draws]
# As PyTorch, a float16/bfloat16 uniform draw keeps as many random bits as the dtype has
# mantissa digits (11 / 8), so that [0, 1) draws are exact in the dtype: a full-precision draw
# rounds up to the upper bound about once in 2**12 (float16) or 2**9 (bfloat16), which made
# trunc_normal_'s erfinv give +-inf. A complex tensor's real and imaginary parts are drawn
# independently, as PyTorch draws through view_as_real: uniform each, normal each with std / sqrt(2)
# so that E|z - mean|^2 = std^2.
_UNIFORM_DIGITS = {_dtype.float16: 11, _dtype.bfloat16: 8}
_SQRT_HALF = 0.5 ** 0.5


def _uniform_draw(shape, dtype, low: float, high: float):
    """A ``draw(rng)`` of uniform samples from [low, high) for ``dtype`` (Note [Low-precision and
    complex draws])."""
    if dtype.is_complex:
        return _complex_draw(_uniform_draw(shape + (2,), _dtype.float64, low, high))
    digits = _UNIFORM_DIGITS.get(dtype)
    if digits is None:
        return lambda rng: rng.random(shape) * (high - low) + low
    steps = 2.0 ** digits
    return lambda rng: (rng.random(shape) * steps // 1) / steps * (high - low) + low


def _normal_draw(shape, dtype, mean: float, std: float):
    """A ``draw(rng)`` of N(mean, std**2) samples for ``dtype`` (Note [Low-precision and complex
    draws])."""
    if dtype.is_complex:
        return _complex_draw(_normal_draw(shape + (2,), _dtype.float64, mean, std * _SQRT_HALF))
    return lambda rng: rng.standard_normal(shape) * std + mean


def _complex_draw(pairs_draw):
    """The draw of complex numbers whose (real, imaginary) parts ``pairs_draw`` draws as pairs."""
    def draw(rng):
        pairs = pairs_draw(rng)
        return pairs[..., 0] + 1j * pairs[..., 1]
    return draw


@factory(sizes_from=0)
def rand(*size, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Uniform samples from [0, 1) (both parts of a complex dtype)."""
    draw = _uniform_draw(_size(size), _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype(),
                         0.0, 1.0)
    return _sample(draw, generator, dtype, device, requires_grad)


@factory(sizes_from=0)
def randn(*size, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Standard normal samples (for a complex dtype, each part with variance 1/2)."""
    shape = _size(size)
    if dtype is not None and _dtype.as_dtype(dtype).is_complex:
        return _sample(_normal_draw(shape, _dtype.as_dtype(dtype), 0.0, 1.0), generator, dtype, device, requires_grad)
    return _sample(lambda rng: rng.standard_normal(shape), generator, dtype, device, requires_grad)


@factory()
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
    return _sample(lambda rng: rng.integers(low, high, size=tuple(size)), generator, dtype or _dtype.int64,
                   device)


@factory()
def randperm(n: int, *, generator=None, dtype=None, device=None):
    """A random permutation of ``0..n-1`` (int64 by default), drawn on ``device``."""
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    backend = (generator.device if generator is not None else as_device(device)).backend
    return _sample(lambda rng: backend.permutation(rng, n), generator, dtype or _dtype.int64, device)


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
    shape = () if size is None else tuple(size)
    return _sample(lambda rng: rng.standard_normal(shape) * std + mean, generator, dtype, device)


def _like(out, input, requires_grad: bool, memory_format, fn: str):
    """``out`` (row-major) laid out as the ``*_like`` factories lay out a tensor like ``input``
    (``preserve_format``: Note [Preserved strides])."""
    if _creation.like_strides(input, memory_format, fn) is not None:
        laid = _creation.empty_like(input, dtype=out.dtype, device=out.device, memory_format=memory_format)
        laid._data[...] = out._data
        out = laid
    return out.requires_grad_(requires_grad)


@factory()
def rand_like(input, *, dtype=None, device=None, requires_grad: bool = False, memory_format=_formats.preserve_format):
    """``rand`` with ``input``'s shape, dtype, device and (by default) layout."""
    out = rand(input.shape, dtype=dtype or input.dtype, device=device or input.device)
    return _like(out, input, requires_grad, memory_format, "rand_like")


@factory()
def randn_like(input, *, dtype=None, device=None, requires_grad: bool = False, memory_format=_formats.preserve_format):
    """``randn`` with ``input``'s shape, dtype, device and (by default) layout."""
    out = randn(input.shape, dtype=dtype or input.dtype, device=device or input.device)
    return _like(out, input, requires_grad, memory_format, "randn_like")


@factory()
def randint_like(input, low, high=None, *, dtype=None, device=None, requires_grad: bool = False,
                 memory_format=_formats.preserve_format):
    """``randint`` with ``input``'s shape, dtype, device and (by default) layout."""
    if high is None:
        low, high = 0, low
    out = randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)
    return _like(out, input, requires_grad, memory_format, "randint_like")


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``) per element, else 0, in ``input``'s dtype."""
    draws = _sample(lambda rng: rng.random(input.shape), generator, _dtype.float64, input.device)
    return (draws < (input.detach() if p is None else p)).to(input.dtype)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):
    """Sample category indices from the rows of non-negative weights ``input`` (1-d or 2-d),
    on its device: with replacement by inverting each row's CDF, without by an exponential race
    (the ``num_samples`` largest of ``w / E``, ``E ~ Exp(1)``). Invalid weights are a
    device-side check (Note [Device-side asserts]): raised at once on the CPU, at the next
    synchronisation on a GPU.

    Raises:
        RuntimeError: for too many samples without replacement, or invalid weights.
    """
    if input.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.ndim}")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    w = input.detach().to(_dtype.float64).reshape(-1, categories)
    total = w.sum(-1)
    bad = (w < 0).any() | ~w.isfinite().all() | (total <= 0).any()
    if not replacement:
        bad = bad | ((w > 0).sum(-1) < num_samples).any()
    input._device.backend.device_assert(
        bad._data, RuntimeError,
        "invalid multinomial distribution (sum of probabilities <= 0, negative or inf, or fewer categories "
        "with probability > 0 than samples without replacement)")
    rows = w.shape[0]
    if replacement:
        u = rand(rows, num_samples, generator=generator, dtype=_dtype.float64, device=input.device)
        cdf = w.cumsum(-1)
        cdf = cdf / cdf[:, -1:]  # the last is exactly 1
        # one search over all rows: row r's CDF and draws are shifted by r (made on the device:
        # arange would copy from the host)
        shift = w.new_ones((rows, 1)).cumsum(0) - 1
        flat = searchsorted((cdf + shift).reshape(-1), (u + shift).reshape(-1), right=True)
        base = (shift * categories).to(_dtype.int64)
        out = (flat.reshape(rows, num_samples) - base).clamp(max=categories - 1)
    else:
        u = rand(rows, categories, generator=generator, dtype=_dtype.float64, device=input.device)
        race = w / -(-u).log1p()  # w / E with E = -log(1 - u) ~ Exp(1): zero weights score 0
        out = race.argsort(-1, descending=True)[:, :num_samples]
    return out if input.ndim == 2 else out[0]


def uniform_(tensor, a: float = 0.0, b: float = 1.0, *, generator=None):
    """Fill with uniform samples from [a, b) (both parts of a complex tensor); returns ``tensor``.

    Raises:
        RuntimeError: if ``a > b``.
    """
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    draw = _uniform_draw(tensor.shape, tensor.dtype, a, b)
    return tensor.copy_(_sample(draw, generator, tensor.dtype, tensor.device))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, *, generator=None):
    """Fill with normal samples (a complex tensor: each part N(mean, std**2 / 2)); returns ``tensor``.

    Raises:
        RuntimeError: if ``std < 0``.
    """
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    draw = _normal_draw(tensor.shape, tensor.dtype, mean, std)
    return tensor.copy_(_sample(draw, generator, tensor.dtype, tensor.device))
