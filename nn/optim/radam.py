"""``RAdam``: Adam with the variance of the adaptive learning rate rectified in early steps."""

from __future__ import annotations

from typing import Any

import tensor
from tensor import Tensor

from ._checks import torch_flags
from ._update_helpers import adam_defaults, decayed_grad, lerp_, square_avg_
from .optimizer import ParamsT, ParamwiseOptimizer

__all__ = ["RAdam"]


class RAdam(ParamwiseOptimizer):
    """RAdam, step for step as ``torch.optim.RAdam`` (with ``decoupled_weight_decay`` and
    ``maximize``). While the variance estimate is unreliable (``rho_t <= 5``) the step is plain
    momentum SGD.

    State per parameter: ``step``, ``exp_avg`` and ``exp_avg_sq``.

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value: ..." for out-of-range options.
    """

    _integer_param_error = NotImplementedError  # as torch (see Optimizer._integer_param_error)

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
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(
            params,
            adam_defaults(
                lr,
                betas,
                eps,
                weight_decay,
                maximize=maximize,
                foreach=foreach,
                decoupled_weight_decay=decoupled_weight_decay,
                **torch_flags(differentiable, capturable=capturable),
            ),
        )

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"exp_avg": tensor.zeros_like(param), "exp_avg_sq": tensor.zeros_like(param)}

    def _update(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
        lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        xp, data = param._device.backend.xp, param._data
        g = decayed_grad(xp, data, grad._data, lr, weight_decay, group["decoupled_weight_decay"], group["maximize"])
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        scratch = xp.empty_like(data)
        lerp_(xp, exp_avg, g, 1 - beta1, scratch)
        square_avg_(xp, exp_avg_sq, g, beta2, scratch)
        _rectified_step(xp, data, exp_avg, exp_avg_sq, scratch, lr, beta1, beta2, eps, step)


def _rectified_step(xp, data, exp_avg, exp_avg_sq, scratch, lr, beta1, beta2, eps, step) -> None:
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
