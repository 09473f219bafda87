"""``Adamax``: Adam with the infinity norm of the gradients in place of the second moment."""

from __future__ import annotations

from typing import Any

import tensor
from tensor import Tensor

from ._checks import torch_flags
from ._update_helpers import adam_defaults, addcdiv_, effective_grad, lerp_
from .optimizer import ParamsT, ParamwiseOptimizer

__all__ = ["Adamax"]


class Adamax(ParamwiseOptimizer):
    """Adamax, step for step as ``torch.optim.Adamax``.

    State per parameter: ``step``, ``exp_avg`` and ``exp_inf`` (the decayed max of ``|grad|``).

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value: ..." for out-of-range options.
    """

    _integer_param_error = NotImplementedError  # as torch (see Optimizer._integer_param_error)

    def __init__(
        self,
        params: ParamsT,
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        super().__init__(
            params,
            adam_defaults(lr, betas, eps, weight_decay, foreach=foreach, maximize=maximize,
                          **torch_flags(differentiable, capturable=capturable)),
        )

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"exp_avg": tensor.zeros_like(param), "exp_inf": tensor.zeros_like(param)}

    def _update(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
        lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        xp, data = param._device.backend.xp, param._data
        g, _ = effective_grad(xp, data, grad._data, weight_decay, group["maximize"])
        exp_avg, exp_inf = state["exp_avg"]._data, state["exp_inf"]._data
        scratch = xp.empty_like(data)
        lerp_(xp, exp_avg, g, 1 - beta1, scratch)
        xp.abs(g, out=scratch)
        xp.add(scratch, eps, out=scratch)
        xp.multiply(exp_inf, beta2, out=exp_inf)
        xp.maximum(exp_inf, scratch, out=exp_inf)
        addcdiv_(xp, data, exp_avg, exp_inf, -lr / (1 - beta1**step))
