"""``tensor.amp.GradScaler``: dynamic loss scaling, PyTorch's algorithm and numbers.

Note [Loss scaling without host syncs]
The scale and the growth tracker are 0-d tensors on the gradients' device. ``unscale_`` multiplies
each gradient by ``1/scale`` in place and reduces "is every element finite" on the device: one pass
over each gradient, one small ``stack(...).all()`` per (device, dtype) group, no host round trip
(PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``). ``step`` reads the found-inf flags
once per device (``.item()``, the one sync per step PyTorch also makes) to decide whether to skip
``optimizer.step()``; ``update`` adjusts the scale with ``where`` on the device.
"""

from __future__ import annotations

import enum
import warnings
from collections import defaultdict

from .. import _autograd_hooks, _creation, cuda
from .. import ops as _ops

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    """Where an optimizer is in the scaler's step cycle (PyTorch's names)."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss so that float16/bfloat16 gradients do not underflow, and undo it before the
    optimizer step; steps whose gradients hold inf/NaN are skipped and the scale backs off
    (Note [Loss scaling without host syncs] in tensor/amp/grad_scaler.py)::

        scaler = tensor.amp.GradScaler("cpu")
        with tensor.autocast("cpu"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)   # unscales, skips the step on inf/NaN
        scaler.update()          # backoff on inf/NaN, growth after growth_interval clean steps

    Raises:
        AssertionError: when enabled, for ``growth_factor <= 1`` or ``backoff_factor >= 1``
            (PyTorch's asserts).
    """

    def __init__(
        self,
        device: str = "cuda",
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and device == "cuda" and not cuda.is_available():
            warnings.warn("tensor.amp.GradScaler is enabled, but CUDA is not available. Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError(f"The growth factor must be > 1.0, got {growth_factor}")
            if not backoff_factor < 1.0:
                raise AssertionError(f"The backoff factor must be < 1.0, got {backoff_factor}")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale = None
        self._growth_tracker = None
        self._per_optimizer_states: defaultdict[int, dict] = defaultdict(_fresh_state)

    # ------------------------------------------------------------------ scaling
    def _lazy_init_scale_growth_tracker(self, device) -> None:
        self._scale = _creation.full((), self._init_scale, dtype="float32", device=device)
        self._growth_tracker = _creation.full((), self._init_growth_tracker, dtype="int32", device=device)

    def scale(self, outputs):
        """``outputs`` (a tensor, or a list/tuple/iterable of them) multiplied by the scale.

        Raises:
            ValueError: for outputs that are not tensors or containers of them (as PyTorch).
        """
        if not self._enabled:
            return outputs
        if hasattr(outputs, "_device"):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError(f"outputs must be a Tensor or an iterable of Tensors, got {type(outputs).__name__}")

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        groups: defaultdict[tuple, list] = defaultdict(list)
        for group in optimizer.param_groups:
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if not allow_fp16 and grad.dtype.name == "float16":
                    raise ValueError("Attempting to unscale FP16 gradients.")
                groups[(grad.device, grad.dtype)].append(grad)
        per_device: dict = {}
        with _autograd_hooks.api.no_grad():
            for (device, _), grads in groups.items():
                flag = per_device.setdefault(device, found_inf.to(device).clone())
                _foreach_non_finite_check_and_unscale_(grads, flag, inv_scale.to(device))
        return per_device

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, and record inf/NaN among them.

        Raises:
            RuntimeError: if called twice before ``update()``, or after ``step()``.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = _creation.full((), 0.0, dtype="float32", device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless the unscaled gradients hold inf/NaN (then
        skipped, returning None). Unscales first if ``unscale_`` was not called.

        Raises:
            RuntimeError: with a ``closure`` argument, or if called twice before ``update()``.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def _maybe_opt_step(self, optimizer, optimizer_state: dict, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless ``optimizer_state``'s found-inf flags are set
        (then None); reads the flags from the device, the step's one sync. PyTorch's hook for
        subclasses and trainer libraries."""
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def update(self, new_scale=None) -> None:
        """Back the scale off if any step since the last update saw inf/NaN, else count a clean
        step and grow it every ``growth_interval`` of them; or set it to ``new_scale``.

        Raises:
            AssertionError: for a ``new_scale`` tensor on another device type, with more than one
                element, or requiring grad (PyTorch's asserts).
            RuntimeError: for a ``new_scale`` tensor that is not 0-d (it is copied into the scale).
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                self._check_new_scale(new_scale)
                self._scale.copy_(new_scale)
        else:
            found_infs = [
                flag.to(self._scale.device)
                for state in self._per_optimizer_states.values()
                for flag in state["found_inf_per_device"].values()
            ]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            found = found_infs[0]
            for flag in found_infs[1:]:
                found = found + flag
            self._update_scale(found)
        self._per_optimizer_states = defaultdict(_fresh_state)

    def _check_new_scale(self, new_scale) -> None:
        if new_scale.device.type != self._device or new_scale.numel() != 1 or new_scale.requires_grad:
            raise AssertionError(
                "new_scale should be a float or a 1-element tensor.FloatTensor with requires_grad=False, on the "
                f"scaler's device type {self._device!r}; got shape {list(new_scale.shape)} on {new_scale.device}"
                f"{' requiring grad' if new_scale.requires_grad else ''}"
            )
        if new_scale.ndim:  # copied into the 0-d scale, as PyTorch's copy_ does
            raise RuntimeError(f"output with shape [] doesn't match the broadcast shape {list(new_scale.shape)}")

    def _update_scale(self, found) -> None:
        """PyTorch's ``_amp_update_scale_``, on the device."""
        with _autograd_hooks.api.no_grad():
            saw_inf = found > 0
            successful = self._growth_tracker + 1
            grown = self._scale * self._growth_factor
            grow = saw_inf.logical_not() & (successful >= self._growth_interval)
            scale = _ops.where(
                saw_inf, self._scale * self._backoff_factor, _ops.where(grow & _ops.isfinite(grown), grown, self._scale)
            )
            tracker = _ops.where(saw_inf | grow, _creation.zeros_like(successful), successful)
            self._scale.copy_(scale)
            self._growth_tracker.copy_(tracker)

    def _check_scale_growth_tracker(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None. This may indicate your "
                "script did not use scaler.scale(loss or outputs) earlier in the iteration."
            )

    # ------------------------------------------------------------------ helpers trainer libraries call
    def _check_inf_per_device(self, optimizer) -> dict:
        """Record, without unscaling, whether ``optimizer``'s gradients hold inf/NaN: a 0-d float
        flag per device, also returned (PyTorch's helper; float16 gradients are allowed).

        Raises:
            AssertionError: before ``scale()`` was called.
        """
        self._check_scale_growth_tracker("_check_inf_per_device")
        device = self._scale.device
        dummy_inv_scale = _creation.full((), 1.0, dtype="float32", device=device)
        found_inf = _creation.full((), 0.0, dtype="float32", device=device)
        state = self._per_optimizer_states[id(optimizer)]
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, dummy_inv_scale, found_inf, True)
        return state["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer) -> dict:
        """The found-inf flags per device recorded for ``optimizer`` since the last ``update()``."""
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _get_scale_async(self):
        """The scale as a 0-d tensor on the device, without a sync (None before ``scale()``)."""
        return self._scale

    # ------------------------------------------------------------------ settings and state
    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled); reads it from the device."""
        if not self._enabled:
            return 1.0
        scale = self._get_scale_async()
        return self._init_scale if scale is None else float(scale.item())

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale grows by."""
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale backs off by."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """Clean steps between growths."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the number of clean steps between growths."""
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """Whether scaling is on."""
        return self._enabled

    def state_dict(self) -> dict:
        """``scale``, the factors, ``growth_interval`` and ``_growth_tracker`` (empty when disabled)."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._get_growth_tracker(),
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a ``state_dict()``.

        Raises:
            RuntimeError: for an empty state dict (saved from a disabled scaler).
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError(
                "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler."
            )
        self._init_scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)


def _foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale) -> None:
    """Multiply ``grads`` (one device and dtype) by ``inv_scale`` in place; set ``found_inf`` to 1
    if any element of any of them is inf or NaN. Everything stays on the device."""
    finite = []
    for grad in grads:
        grad.mul_(inv_scale)
        finite.append(_ops.isfinite(grad).all())
    all_finite = _ops.stack(finite).all() if len(finite) > 1 else finite[0]
    found_inf.copy_(_ops.where(all_finite, found_inf, _creation.ones_like(found_inf)))
