"""``ASGD``: averaged stochastic gradient descent."""

from __future__ import annotations

from typing import Any

import tensor
from tensor import Tensor

from ._checks import check_nonnegative, torch_flags
from ._update_helpers import effective_grad
from .optimizer import ParamsT, ParamwiseOptimizer

__all__ = ["ASGD"]


def _scalar(value: float) -> tensor.Tensor:
    return tensor.tensor(value, dtype=tensor.float32, device="cpu")


class ASGD(ParamwiseOptimizer):
    """ASGD, step for step as ``torch.optim.ASGD``.

    State per parameter: ``step``, ``eta`` (the decayed learning rate), ``mu`` (the averaging
    weight, 1 until step ``t0``) — float32 scalars as in PyTorch — and ``ax``, the running
    average of the parameter.

    Raises:
        ValueError: "Invalid learning rate/weight_decay value: ..." for negative options.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        lambd: float = 1e-4,
        alpha: float = 0.75,
        t0: float = 1e6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr, weight_decay=weight_decay)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            **torch_flags(differentiable, capturable=capturable),
        }
        super().__init__(params, defaults)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        return {"eta": _scalar(float(group["lr"])), "mu": _scalar(1.0), "ax": tensor.zeros_like(param)}

    def _update(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
        lr, lambd, alpha, t0 = float(group["lr"]), float(group["lambd"]), float(group["alpha"]), group["t0"]
        xp, data = param._device.backend.xp, param._data
        g, _ = effective_grad(xp, data, grad._data, float(group["weight_decay"]), group["maximize"])
        eta, mu, ax = float(state["eta"]), float(state["mu"]), state["ax"]._data
        xp.multiply(data, 1 - lambd * eta, out=data)
        scratch = xp.empty_like(data)
        xp.multiply(g, -eta, out=scratch)
        xp.add(data, scratch, out=data)
        if mu != 1:
            xp.subtract(data, ax, out=scratch)
            xp.multiply(scratch, mu, out=scratch)
            xp.add(ax, scratch, out=ax)
        else:
            ax[...] = data
        state["eta"] = _scalar(lr / ((1 + lambd * lr * step) ** alpha))
        state["mu"] = _scalar(1 / max(1, step - t0))
