"""``Adadelta``: steps scaled by the ratio of running RMS of updates to running RMS of gradients."""

from __future__ import annotations

from typing import Any

import tensor
from tensor import Tensor

from ._checks import check_nonnegative, torch_flags
from ._update_helpers import effective_grad, square_avg_
from .optimizer import ParamsT, ParamwiseOptimizer

__all__ = ["Adadelta"]


class Adadelta(ParamwiseOptimizer):
    """Adadelta, step for step as ``torch.optim.Adadelta``.

    State per parameter: ``step``, ``square_avg`` (of the gradients) and ``acc_delta`` (of the
    updates).

    Raises:
        ValueError: "Invalid learning rate/rho value/epsilon value/weight_decay value: ..." for
            out-of-range options (``rho`` must be in ``[0, 1]``).
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            **torch_flags(differentiable, capturable=capturable),
        }
        super().__init__(params, defaults)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"square_avg": tensor.zeros_like(param), "acc_delta": tensor.zeros_like(param)}

    def _update(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
        lr, rho, eps = float(group["lr"]), float(group["rho"]), float(group["eps"])
        xp, data = param._device.backend.xp, param._data
        g, _ = effective_grad(xp, data, grad._data, float(group["weight_decay"]), group["maximize"])
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        scratch, std, delta = xp.empty_like(data), xp.empty_like(data), xp.empty_like(data)
        square_avg_(xp, square_avg, g, rho, scratch)
        xp.add(square_avg, eps, out=std)
        xp.sqrt(std, out=std)
        xp.add(acc_delta, eps, out=delta)
        xp.sqrt(delta, out=delta)
        xp.divide(delta, std, out=delta)
        xp.multiply(delta, g, out=delta)
        square_avg_(xp, acc_delta, delta, rho, scratch)
        xp.multiply(delta, -lr, out=delta)
        xp.add(data, delta, out=data)
