"""``torch.binomial``, ``torch.poisson`` and ``torch._standard_gamma``: samples drawn on the
input's device by its generator (Note [Random numbers per device] in ``_random.py``). Both
generators, numpy's and CuPy's ``Generator``, take arrays of parameters (``binomial(n, p)``,
``poisson(lam)``, ``standard_gamma(shape)``), so there is no device difference to keep in the
seam. The numbers are not torch's stream: tests compare moments.
"""

from __future__ import annotations

from . import _dtype
from ._random import Generator, _sample
from ._tensor import Tensor
from ._typeinfo import finfo
from .ops.comparison import where
from .ops.special_extra import reparameterized_gamma

__all__ = ["binomial", "poisson", "standard_gamma"]


def _check_generator(name: str, input: Tensor, generator: Generator | None) -> None:
    if generator is not None and generator.device != input.device:
        raise RuntimeError(
            f"{name}: expected a generator on {input.device} (the input's device), got one on {generator.device}"
        )


def _check_values(input: Tensor, bad: Tensor, message: str) -> None:
    """A check of parameter values that needs no sync (Note [Device-side asserts])."""
    input._device.backend.device_assert(bad._data, RuntimeError, message)


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """The number of successes in ``count`` trials of probability ``prob``, elementwise
    (broadcasting), in ``count``'s dtype. Not differentiable.

    Raises:
        ValueError: for a non-floating ``count`` or ``prob``, as torch.
        RuntimeError: for a negative or non-integral ``count`` or a ``prob`` outside [0, 1] (torch
            leaves those undefined), or a generator on another device.
    """
    for name, t in (("count", count), ("prob", prob)):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: {t.dtype.name}")
    _check_generator("binomial", count, generator)
    count, prob = count.detach(), prob.detach()
    bad = (count < 0) | (count != count.floor()) | ~((prob >= 0) & (prob <= 1))
    _check_values(count, bad.any(), "binomial: expected count to be a non-negative integer and 0 <= prob <= 1")
    # on a GPU the check reports at the next sync: the sampler must not see the bad values meanwhile
    n, p = (where(bad, 0, t) for t in (count.to(_dtype.int64), prob.to(_dtype.float64)))
    n, p = n._data, p._data
    return _sample(lambda rng: rng.binomial(n, p), generator, count.dtype, count.device)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of the Poisson distribution whose rate is each element of ``input``, in its
    dtype. Not differentiable (torch's gradient is zero).

    Raises:
        NotImplementedError: for a non-floating input, as torch.
        RuntimeError: for a negative or NaN rate, or a generator on another device.
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson\" not implemented for '{input.dtype.name}': rates are floating point")
    _check_generator("poisson", input, generator)
    rates = input.detach()
    valid = rates >= 0
    _check_values(input, ~valid.all(), "invalid Poisson rate, expected rate to be non-negative")
    lam = where(valid, rates.to(_dtype.float64), 0.0)._data  # as in binomial
    return _sample(lambda rng: rng.poisson(lam), generator, input.dtype, input.device)


def standard_gamma(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Gamma(``input``, 1), elementwise, in ``input``'s dtype (``torch._standard_gamma``):
    differentiable in ``input`` by implicit reparameterisation (Note [Implicit gamma gradient] in
    ops/special_extra.py). As in torch, samples are at least the dtype's smallest normal number,
    which is also what a concentration that is not positive gives.

    Raises:
        NotImplementedError: for a non-floating input, as torch.
        RuntimeError: for a generator on another device.
    """
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"gamma\" not implemented for '{input.dtype.name}': concentrations are floats")
    _check_generator("_standard_gamma", input, generator)
    concentration = input.detach().to(_dtype.float64)
    valid = concentration > 0  # False for NaN too
    shape = where(valid, concentration, 1.0)._data
    sample = _sample(lambda rng: rng.standard_gamma(shape), generator, input.dtype, input.device)
    tiny = finfo(input.dtype).tiny
    sample = where(valid, sample, tiny).clamp_(min=tiny)
    return reparameterized_gamma(input, sample)
