"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensor

from .optimizer import Optimizer, ParamsT, effective_grad

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, step for step as ``torch.optim.SGD``.

    With momentum ``m`` the buffer is ``b = m * b + (1 - dampening) * g`` (the first step sets
    ``b = g``); the update is ``p -= lr * b`` (or ``lr * (g + m * b)`` with ``nesterov``).

    Raises:
        ValueError: "Invalid learning rate/momentum value/weight_decay value: ..." for negative
            values, and "Nesterov momentum requires a momentum and zero dampening".
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = float(group["momentum"])
            dampening = float(group["dampening"])
            weight_decay = float(group["weight_decay"])
            nesterov, maximize = group["nesterov"], group["maximize"]
            for p, grad in self._params_with_grad(group):
                xp = p._device.backend.xp
                data = p._data
                g, owned = effective_grad(xp, data, grad._data, weight_decay, maximize)
                if momentum != 0:
                    state = self.state[p]
                    buf_t = state.get("momentum_buffer")
                    if buf_t is None:
                        buf_t = state["momentum_buffer"] = tensor.empty_like(p)
                        buf = buf_t._data
                        xp.copyto(buf, g)
                    else:
                        buf = buf_t._data
                        xp.multiply(buf, momentum, out=buf)
                        if dampening == 0:
                            xp.add(buf, g, out=buf)
                        else:
                            scaled = xp.empty_like(buf)
                            xp.multiply(g, 1 - dampening, out=scaled)
                            xp.add(buf, scaled, out=buf)
                    if nesterov:
                        ahead = xp.empty_like(buf)
                        xp.multiply(buf, momentum, out=ahead)
                        xp.add(g, ahead, out=ahead)
                        g, owned = ahead, True
                    else:
                        g, owned = buf, False
                step = g if owned else xp.empty_like(data)
                xp.multiply(g, lr, out=step)
                xp.subtract(data, step, out=data)
                p._version_box[0] += 1
        return loss
