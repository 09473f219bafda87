"""``Adagrad``: per-coordinate learning rates from the accumulated squared gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensor

from ._checks import check_nonnegative, torch_flags
from ._update_helpers import addcdiv_, effective_grad, increment_step, new_step, real_view
from .optimizer import Optimizer, ParamsT

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, step for step as ``torch.optim.Adagrad``.

    State per parameter (created for every parameter at construction, as PyTorch does):
    ``step`` and ``sum``, which starts at ``initial_accumulator_value``.

    Raises:
        ValueError: "Invalid learning rate/lr_decay value/weight_decay value/
            initial_accumulator_value value/epsilon value: ..." for negative options.
        RuntimeError: at ``step``, for a complex parameter with ``fused=True`` (as torch).
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None,
                 *, maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, **torch_flags(differentiable, fused=fused)}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group) -> dict:
        state = self.state[p]
        if len(state) == 0:
            state["step"] = new_step()
            value = group["initial_accumulator_value"]
            state["sum"] = tensor.full_like(p, complex(value, value) if p.is_complex() else value)
        return state

    def share_memory(self) -> None:
        """Move each parameter's ``sum`` accumulator into shared memory (for Hogwild training)."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, lr_decay, eps = float(group["lr"]), float(group["lr_decay"]), float(group["eps"])
            weight_decay, maximize = float(group["weight_decay"]), group["maximize"]
            if group["fused"] and any(p.is_complex() for p, _ in self._params_with_grad(group)):
                raise RuntimeError("`fused` does not support sparse grad or complex param")
            for p, grad in self._params_with_grad(group):
                state = self._init_state(p, group)
                step = increment_step(state["step"])
                xp = p._device.backend.xp
                data = real_view(p._data)
                g, _ = effective_grad(xp, data, real_view(grad._data), weight_decay, maximize)
                clr = lr / (1 + (step - 1) * lr_decay)
                state_sum = real_view(state["sum"]._data)
                std = xp.empty_like(data)
                xp.multiply(g, g, out=std)
                xp.add(state_sum, std, out=state_sum)
                xp.sqrt(state_sum, out=std)
                xp.add(std, eps, out=std)
                addcdiv_(xp, data, g, std, -clr)
                p._version_box[0] += 1
        return loss
