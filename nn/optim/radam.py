"""``RAdam``: Adam with the variance of the adaptive learning rate rectified in early steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensor

from ._checks import check_betas, check_nonnegative
from .optimizer import Optimizer, ParamsT, effective_grad, increment_step, lerp_, new_step, square_avg_

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam, step for step as ``torch.optim.RAdam`` (with ``decoupled_weight_decay`` and
    ``maximize``). While the variance estimate is unreliable (``rho_t <= 5``) the step is plain
    momentum SGD.

    State per parameter: ``step``, ``exp_avg`` and ``exp_avg_sq``.

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value: ..." for out-of-range options.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "betas": tuple(betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
            beta1, beta2 = (float(b) for b in group["betas"])
            decoupled = group["decoupled_weight_decay"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = new_step()
                    state["exp_avg"] = tensor.zeros_like(p)
                    state["exp_avg_sq"] = tensor.zeros_like(p)
                step = increment_step(state["step"])
                xp, data = p._device.backend.xp, p._data
                if weight_decay != 0 and decoupled:
                    xp.multiply(data, 1 - lr * weight_decay, out=data)
                g, _ = effective_grad(xp, data, grad._data, 0 if decoupled else weight_decay, group["maximize"])
                exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
                scratch = xp.empty_like(data)
                lerp_(xp, exp_avg, g, 1 - beta1, scratch)
                square_avg_(xp, exp_avg_sq, g, beta2, scratch)
                _update(xp, data, exp_avg, exp_avg_sq, scratch, lr, beta1, beta2, eps, step)
                p._version_box[0] += 1
        return loss


def _update(xp, data, exp_avg, exp_avg_sq, scratch, lr, beta1, beta2, eps, step) -> None:
    """``data -= lr * exp_avg / (1 - beta1**step)``, times the rectified adaptive rate once the
    variance is tractable (``rho_t > 5``); PyTorch's order of operations."""
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    update = scratch
    xp.divide(exp_avg, bias_correction1, out=update)
    xp.multiply(update, lr, out=update)
    if rho_t > 5.0:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        adaptive = xp.empty_like(exp_avg_sq)
        xp.sqrt(exp_avg_sq, out=adaptive)
        xp.add(adaptive, eps, out=adaptive)
        xp.divide(bias_correction2**0.5, adaptive, out=adaptive)
        xp.multiply(update, adaptive, out=update)
        xp.multiply(update, rect, out=update)
    xp.subtract(data, update, out=data)
