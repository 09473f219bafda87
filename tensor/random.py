"""``tensor.random``: the seeding functions and ``fork_rng``, as ``torch.random``."""

from __future__ import annotations

import collections.abc
import contextlib
from collections.abc import Iterable

from . import cuda
from ._device import device as _device
from ._random import (
    Generator,
    default_generator,
    generator_of,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices: Iterable[int] | None = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices",
             device_type: str | None = None) -> collections.abc.Generator[None, None, None]:
    """Run the block, then put the CPU generator's state back, and that of the generators of
    ``devices`` (indices of ``device_type``, "cuda" by default; every CUDA device when None).

    Raises:
        RuntimeError: for a device type other than ``cpu`` and ``cuda``.
    """
    device_type = device_type or "cuda"
    if device_type not in ("cpu", "cuda"):
        raise RuntimeError(f"fork_rng: no generators for device type {device_type!r} here (cpu, cuda)")
    if not enabled:
        yield
        return
    if devices is None:
        devices = range(cuda.device_count()) if device_type == "cuda" and cuda.is_available() else ()
    cpu_state = get_rng_state()
    generators = [generator_of(_device(device_type, index)) for index in devices] if device_type == "cuda" else []
    states = [g.get_state() for g in generators]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for generator, state in zip(generators, states):
            generator.set_state(state)
