"""``RMSprop``: divide the gradient by a running root-mean-square of recent gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensor

from ._checks import check_nonnegative, torch_flags
from ._update_helpers import addcdiv_, effective_grad, increment_step, lerp_, new_step, real_view, square_avg_
from .optimizer import Optimizer, ParamsT

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, step for step as ``torch.optim.RMSprop`` (with ``momentum``, ``centered`` and
    ``maximize``).

    State per parameter: ``step``, ``square_avg``, and ``momentum_buffer`` (with momentum) and
    ``grad_avg`` (when centered).

    Raises:
        ValueError: "Invalid learning rate/epsilon value/momentum value/weight_decay value/alpha
            value: ..." for negative options.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    **torch_flags(differentiable, capturable=capturable)}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = float(group["lr"]), float(group["alpha"]), float(group["eps"])
            weight_decay, momentum = float(group["weight_decay"]), float(group["momentum"])
            centered, maximize = group["centered"], group["maximize"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = new_step()
                    state["square_avg"] = tensor.zeros_like(p)
                    if momentum > 0:
                        state["momentum_buffer"] = tensor.zeros_like(p)
                    if centered:
                        state["grad_avg"] = tensor.zeros_like(p)
                increment_step(state["step"])
                xp = p._device.backend.xp
                data = real_view(p._data)
                g, _ = effective_grad(xp, data, real_view(grad._data), weight_decay, maximize)
                square_avg = real_view(state["square_avg"]._data)
                avg = xp.empty_like(data)
                square_avg_(xp, square_avg, g, alpha, avg)
                if centered:
                    grad_avg = real_view(state["grad_avg"]._data)
                    lerp_(xp, grad_avg, g, 1 - alpha, avg)
                    xp.multiply(grad_avg, -1, out=avg)
                    xp.multiply(avg, grad_avg, out=avg)
                    xp.add(square_avg, avg, out=avg)
                    xp.sqrt(avg, out=avg)
                else:
                    xp.sqrt(square_avg, out=avg)
                xp.add(avg, eps, out=avg)
                if momentum > 0:
                    buf = real_view(state["momentum_buffer"]._data)
                    xp.multiply(buf, momentum, out=buf)
                    xp.divide(g, avg, out=avg)
                    xp.add(buf, avg, out=buf)
                    xp.multiply(buf, lr, out=avg)
                    xp.subtract(data, avg, out=data)
                else:
                    addcdiv_(xp, data, g, avg, -lr)
                p._version_box[0] += 1
        return loss
