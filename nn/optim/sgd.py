"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import tensor

from . import _fused
from ._checks import check_nonnegative, torch_flags
from ._update_helpers import effective_grad, for_blocks
from .optimizer import Optimizer, ParamsT

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, step for step as ``torch.optim.SGD``.

    With momentum ``m`` the buffer is ``b = m * b + (1 - dampening) * g`` (the first step sets
    ``b = g``); the update is ``p -= lr * b`` (or ``lr * (g + m * b)`` with ``nesterov``).
    ``fused=True`` updates the parameters of a device and dtype with one kernel (Note [Fused
    optimizer steps] in ``_fused.py``); ``foreach`` is accepted and changes nothing.

    Raises:
        ValueError: "Invalid learning rate/momentum value/weight_decay value: ..." for negative
            values, and "Nesterov momentum requires a momentum and zero dampening".
        RuntimeError: for ``fused=True`` with ``foreach=True`` or a non-floating parameter.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        check_nonnegative(lr=lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "fused": fused,
                    **torch_flags(differentiable)}
        super().__init__(params, defaults)
        _fused.check_options(self, fused, foreach)

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            hyper = (float(group["lr"]), float(group["momentum"]), float(group["dampening"]),
                     float(group["weight_decay"]), group["nesterov"], group["maximize"])
            if group.get("fused"):
                self._step_fused(group, hyper)
                continue
            for p, grad in self._params_with_grad(group):
                xp = p._device.backend.xp
                buf, first = None, False
                if hyper[1] != 0:
                    state = self.state[p]
                    first = "momentum_buffer" not in state
                    if first:
                        state["momentum_buffer"] = tensor.empty_like(p)
                    buf = state["momentum_buffer"]._data
                arrays = (p._data, grad._data) if buf is None else (p._data, grad._data, buf)
                for_blocks(xp, arrays, functools.partial(_update, xp, hyper=hyper, first=first))
                p._version_box[0] += 1
        return loss

    def _step_fused(self, group, hyper: tuple) -> None:
        momentum = hyper[1] != 0
        scalars = (*hyper[:4], float(hyper[4]), float(hyper[5]))
        for members in _fused.buckets(self._params_with_grad(group), self._is_first):
            first = float(momentum and self._is_first(members[0][0]))
            _fused.step_bucket(self, members, _FUSED[momentum], (*scalars, first))

    def _is_first(self, p) -> bool:
        return "momentum_buffer" not in self.state.get(p, ())


def _fused_host(xp, grad, lr, momentum, dampening, weight_decay, nesterov, maximize, first, param, *buf):
    hyper = (lr, momentum, dampening, weight_decay, bool(nesterov), bool(maximize))
    for_blocks(xp, [param, grad, *buf], functools.partial(_update, xp, hyper=hyper, first=bool(first)))


def _fused_rule(momentum: bool) -> _fused.Rule:
    """The fused SGD step (``nesterov``, ``maximize``, ``first`` are 0 or 1): ``_update`` in C."""
    operation = "T g = (1 - 2 * maximize) * grad + weight_decay * param;"
    if momentum:  # the first step sets the buffer to g; nesterov steps by g + momentum * buffer
        operation += """
            momentum_buffer = (1 - first) * (momentum * momentum_buffer + (1 - dampening) * g) + first * g;
            g = nesterov * g + (1 - nesterov + nesterov * momentum) * momentum_buffer;"""
    operation += "param = param - lr * g;"
    scalars = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "first")
    keys = ("momentum_buffer",) if momentum else ()
    return _fused.Rule(f"distrib_sgd{'_momentum' * momentum}", scalars, keys, operation, _fused_host)


_FUSED = {momentum: _fused_rule(momentum) for momentum in (False, True)}


def _update(xp, data, grad, buf=None, *, hyper, first):
    """One SGD step on raw arrays (``buf`` is the momentum buffer, None without momentum)."""
    lr, momentum, dampening, weight_decay, nesterov, maximize = hyper
    g, owned = effective_grad(xp, data, grad, weight_decay, maximize)
    if buf is not None:
        if first:
            xp.copyto(buf, g)
        else:
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
