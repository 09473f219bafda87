"""``NAdam``: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from typing import Any

import tensor
from tensor import Tensor

from ._checks import check_nonnegative, torch_flags
from ._update_helpers import adam_defaults, addcdiv_, decayed_grad, lerp_, square_avg_
from .optimizer import ParamsT, ParamwiseOptimizer

__all__ = ["NAdam"]


class NAdam(ParamwiseOptimizer):
    """NAdam, step for step as ``torch.optim.NAdam`` (with ``decoupled_weight_decay``, which makes
    it NAdamW, and ``maximize``).

    State per parameter: ``step``, ``mu_product`` (a float32 scalar: the product of the momentum
    coefficients so far), ``exp_avg`` and ``exp_avg_sq``.

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value/momentum_decay value: ..." for out-of-range options.
    """

    _integer_param_error = NotImplementedError  # as torch (see Optimizer._integer_param_error)

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
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = adam_defaults(
            lr,
            betas,
            eps,
            weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
            foreach=foreach,
            **torch_flags(differentiable, capturable=capturable),
        )
        check_nonnegative(momentum_decay=momentum_decay)
        super().__init__(params, defaults)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        return {
            "mu_product": tensor.tensor(1.0, dtype=tensor.float32, device="cpu"),
            "exp_avg": tensor.zeros_like(param),
            "exp_avg_sq": tensor.zeros_like(param),
        }

    def _update(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
        lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        momentum_decay = float(group["momentum_decay"])
        xp, data = param._device.backend.xp, param._data
        g = decayed_grad(xp, data, grad._data, lr, weight_decay, group["decoupled_weight_decay"], group["maximize"])
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
