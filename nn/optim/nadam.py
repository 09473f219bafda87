"""``NAdam``: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensor

from ._checks import check_betas, check_nonnegative
from .optimizer import (
    Optimizer,
    ParamsT,
    addcdiv_,
    effective_grad,
    increment_step,
    lerp_,
    new_step,
    square_avg_,
)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam, step for step as ``torch.optim.NAdam`` (with ``decoupled_weight_decay``, which makes
    it NAdamW, and ``maximize``).

    State per parameter: ``step``, ``mu_product`` (a float32 scalar: the product of the momentum
    coefficients so far), ``exp_avg`` and ``exp_avg_sq``.

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value/momentum_decay value: ..." for out-of-range options.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
        }
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
            beta1, beta2 = (float(b) for b in group["betas"])
            momentum_decay = float(group["momentum_decay"])
            decoupled = group["decoupled_weight_decay"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = new_step()
                    state["mu_product"] = tensor.tensor(1.0, dtype=tensor.float32, device="cpu")
                    state["exp_avg"] = tensor.zeros_like(p)
                    state["exp_avg_sq"] = tensor.zeros_like(p)
                step = increment_step(state["step"])
                xp, data = p._device.backend.xp, p._data
                if weight_decay != 0 and decoupled:
                    xp.multiply(data, 1 - lr * weight_decay, out=data)
                g, _ = effective_grad(xp, data, grad._data, 0 if decoupled else weight_decay, group["maximize"])
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                mu_product = state["mu_product"]._data
                mu_product *= mu  # float32, as PyTorch keeps it
                state["mu_product"]._version_box[0] += 1
                exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
                scratch = xp.empty_like(data)
                lerp_(xp, exp_avg, g, 1 - beta1, scratch)
                square_avg_(xp, exp_avg_sq, g, beta2, scratch)
                denom = scratch
                xp.divide(exp_avg_sq, 1 - beta2**step, out=denom)
                xp.sqrt(denom, out=denom)
                xp.add(denom, eps, out=denom)
                product = float(mu_product)
                addcdiv_(xp, data, g, denom, -lr * (1.0 - mu) / (1.0 - product))
                addcdiv_(xp, data, exp_avg, denom, -lr * mu_next / (1.0 - product * mu_next))
                p._version_box[0] += 1
        return loss
