"""Fused optimizer steps (``fused=True``): one elementwise kernel per bucket of parameters.

Note [Fused optimizer steps]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Stepping parameter by parameter launches 13 kernels per parameter for Adam (130 for a model
with 10 parameters). With ``fused=True``, the parameters of a group
that share device, dtype and step are a *bucket*: their values and their optimizer state live
in flat buffers, each parameter (and state tensor) being a view of its slice, so that one
elementwise kernel updates them all. The gradients are concatenated into one flat buffer first
(one copy kernel). PyTorch's fused kernels reach the same one launch with lists of pointers
instead; a flat buffer needs no pointer arithmetic in the kernel, at the price of re-pointing
each parameter's storage when the bucket is built (tensors viewing a parameter's old storage,
taken before the first fused step, stop seeing its updates; parameters in host shared memory,
as Hogwild training shares them, stop being shared: use ``fused=False`` there). A bucket is
rebuilt, from the current values, when a parameter's or state tensor's storage was replaced since (``p.data =``,
``load_state_dict``) or the set of parameters with gradients changes.

The kernel is a ``Rule``: the C operation (a CuPy ``ElementwiseKernel`` on a GPU) and the numpy
composition that defines it (run on the CPU), kept in step by tests.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import tensor
from tensor import Tensor


@dataclass(frozen=True)
class Rule:
    """One fused update: ``kernel(grad, *scalars, param, *state)`` with ``scalars`` named in
    ``scalar_names`` (C doubles) and the state buffers ``state_keys``, updated in place."""

    name: str
    scalar_names: tuple[str, ...]
    state_keys: tuple[str, ...]
    operation: str
    host: Callable

    def kernel(self, backend):
        """The kernel of this rule on ``backend``'s device."""
        inputs = ", ".join(["T grad", *(f"float64 {n}" for n in self.scalar_names)])
        outputs = ", ".join(f"T {n}" for n in ("param", *self.state_keys))
        return backend.elementwise_kernel(self.name, inputs, outputs, self.operation, self.host)


class _Bucket:
    """Flat buffers of a bucket's parameters and state, and the views the tensors hold."""

    def __init__(self, params: list[Tensor], states: list[dict], keys: tuple[str, ...]) -> None:
        self.params = params
        self.flats = {key: _flatten([s.get(key) if key else p for p, s in zip(params, states)], params)
                      for key in ("", *keys)}
        self.views: dict[str, list] = {key: [] for key in self.flats}
        offset = 0
        for p, state in zip(params, states):
            size = p.numel()
            for key, flat in self.flats.items():
                view = flat[offset:offset + size].reshape(p.shape)
                holder = p if not key else state.setdefault(key, tensor.zeros_like(p))
                holder._data = view
                self.views[key].append(view)
            offset += size

    def intact(self, states: list[dict]) -> bool:
        """Whether every parameter and state tensor still holds its view of the flat buffers."""
        for key, views in self.views.items():
            for p, state, view in zip(self.params, states, views):
                holder = p if not key else state.get(key)
                if holder is None or holder._data is not view:
                    return False
        return True


def _flatten(tensors: list[Tensor | None], params: list[Tensor]):
    """One flat array holding ``tensors`` in order (zeros where a tensor is None)."""
    xp = params[0]._device.backend.xp
    with params[0]._device.backend.device_guard(params[0]._device.index):
        return xp.concatenate([(t._data if t is not None else xp.zeros(p.shape, p._data.dtype)).reshape(-1)
                               for t, p in zip(tensors, params)])


def check_options(optimizer, fused: bool | None, foreach: bool | None) -> None:
    """Refuse what PyTorch refuses with ``fused=True``.

    Raises:
        RuntimeError: with ``foreach=True`` too, or for a parameter that is not floating point.
    """
    if not fused:
        return
    if foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    for group in optimizer.param_groups:
        for p in group["params"]:
            if not p.is_floating_point():
                raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of "
                                   f"supported devices, got {p.dtype} on {p.device}")


_BUCKETS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def step_bucket(optimizer, members: list[tuple[Tensor, Tensor]], rule: Rule, scalars: tuple) -> None:
    """Update ``members`` (``(param, grad)`` pairs of one device, dtype and step) with one launch
    of ``rule``'s kernel; their state is created (zeros) or adopted into flat buffers first."""
    params = [p for p, _ in members]
    states = [optimizer.state[p] if rule.state_keys else {} for p in params]  # no empty entries
    cache = _BUCKETS.setdefault(optimizer, {})
    key = tuple(map(id, params))
    bucket = cache.get(key)
    if bucket is None or not bucket.intact(states):
        for stale in [k for k in cache if not set(k).isdisjoint(key)]:
            del cache[stale]  # its tensors are about to be re-pointed
        bucket = cache[key] = _Bucket(params, states, rule.state_keys)
    backend = params[0]._device.backend
    with backend.device_guard(params[0]._device.index):
        grad = _flatten([g for _, g in members], params).astype(params[0]._data.dtype, copy=False)
        rule.kernel(backend)(grad, *scalars, *(bucket.flats[k] for k in ("", *rule.state_keys)))
    for p in params:
        p._version_box[0] += 1


def buckets(members, split: Callable) -> list[list[tuple[Tensor, Tensor]]]:
    """``(param, grad)`` pairs grouped by device, dtype and ``split(param)`` (a step count)."""
    out: dict = {}
    for p, grad in members:
        out.setdefault((str(p.device), p.dtype, split(p)), []).append((p, grad))
    return list(out.values())
