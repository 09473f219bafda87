"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay."""

from __future__ import annotations

import functools
from collections.abc import Callable
from numbers import Real
from typing import Any

import tensor
from tensor import Tensor

from . import _fused
from ._checks import check_betas, check_nonnegative, torch_flags
from ._update_helpers import (
    addcdiv_,
    effective_grad,
    for_blocks,
    increment_step,
    lerp_,
    new_step,
    real_view,
    square_avg_,
)
from .optimizer import Optimizer, ParamsT

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam, step for step as ``torch.optim.Adam`` (with ``amsgrad``, ``maximize`` and
    ``decoupled_weight_decay``, which makes it AdamW).

    State per parameter: ``step`` (a float32 scalar tensor), ``exp_avg``, ``exp_avg_sq`` and,
    with ``amsgrad``, ``max_exp_avg_sq``. ``fused=True`` updates the parameters of a device and
    dtype with one kernel (Note [Fused optimizer steps] in ``_fused.py``); ``foreach`` is accepted
    and changes nothing.

    Raises:
        ValueError: "Invalid learning rate/epsilon value/beta parameter at index i/weight_decay
            value: ..." for out-of-range options.
        RuntimeError: for ``fused=True`` with ``foreach=True`` or a non-floating parameter.
    """

    _integer_param_error = NotImplementedError  # as torch (see Optimizer._integer_param_error)

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, decoupled_weight_decay: bool = False,
                 fused: bool | None = None) -> None:
        check_nonnegative(lr=lr, eps=eps)
        check_betas(betas)
        check_nonnegative(weight_decay=weight_decay)
        if not (all(isinstance(b, Real) for b in betas) or all(isinstance(b, Tensor) for b in betas)):
            raise ValueError("betas must be either both floats or both Tensors")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "decoupled_weight_decay": decoupled_weight_decay, "fused": fused,
                    **torch_flags(differentiable, capturable=capturable)}
        super().__init__(params, defaults)
        _fused.check_options(self, fused, foreach)

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            beta1, beta2 = (float(b) for b in group["betas"])
            eps = float(group["eps"])
            weight_decay = float(group["weight_decay"])
            amsgrad, maximize = group["amsgrad"], group["maximize"]
            decoupled = group.get("decoupled_weight_decay", False)
            if group.get("fused"):
                hyper = (lr, beta1, beta2, eps, weight_decay, float(decoupled), float(maximize))
                self._step_fused(group, _FUSED[bool(amsgrad)], hyper)
                continue
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = new_step()
                    state["exp_avg"] = tensor.zeros_like(p)
                    state["exp_avg_sq"] = tensor.zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = tensor.zeros_like(p)
                step = increment_step(state["step"])
                xp = p._device.backend.xp
                arrays = [p._data, grad._data, state["exp_avg"]._data, state["exp_avg_sq"]._data]
                if amsgrad:
                    arrays.append(state["max_exp_avg_sq"]._data)
                if p.is_complex():
                    arrays = [real_view(a) for a in arrays]
                hyper = (lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step)
                for_blocks(xp, arrays, functools.partial(_update, xp, hyper=hyper))
                p._version_box[0] += 1
        return loss

    def _step_fused(self, group, rule: _fused.Rule, hyper: tuple) -> None:
        for members in _fused.buckets(self._params_with_grad(group), self._step_count):
            for p, _ in members:
                step = increment_step(self.state[p].setdefault("step", new_step()))
            _fused.step_bucket(self, members, rule, (*hyper, step))

    def _step_count(self, p) -> float:
        return float(self.state[p]["step"]) if "step" in self.state[p] else 0.0


def _update(xp, data, grad, exp_avg, exp_avg_sq, max_exp_avg_sq=None, *, hyper):
    """One Adam step on raw arrays (``max_exp_avg_sq`` only with amsgrad)."""
    lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step = hyper
    if weight_decay != 0 and decoupled:
        xp.multiply(data, 1 - lr * weight_decay, out=data)
        g, _ = effective_grad(xp, data, grad, 0, maximize)
    else:
        g, _ = effective_grad(xp, data, grad, weight_decay, maximize)
    scratch = xp.empty_like(data)
    lerp_(xp, exp_avg, g, 1 - beta1, scratch)
    square_avg_(xp, exp_avg_sq, g, beta2, scratch)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    second = exp_avg_sq
    if max_exp_avg_sq is not None:
        second = max_exp_avg_sq
        xp.maximum(second, exp_avg_sq, out=second)
    denom = scratch
    xp.sqrt(second, out=denom)
    xp.divide(denom, bias_correction2_sqrt, out=denom)
    xp.add(denom, eps, out=denom)
    addcdiv_(xp, data, exp_avg, denom, -lr / bias_correction1)


def _fused_host(xp, grad, lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step, param, *state):
    hyper = (lr, beta1, beta2, eps, weight_decay, bool(decoupled), bool(maximize), step)
    for_blocks(xp, [param, grad, *state], functools.partial(_update, xp, hyper=hyper))


def _fused_rule(amsgrad: bool) -> _fused.Rule:
    """The fused Adam step (``decoupled`` and ``maximize`` are 0 or 1): ``_update`` in C."""
    second = "max_exp_avg_sq" if amsgrad else "exp_avg_sq"
    operation = f"""
        param = param * (1 - lr * weight_decay * decoupled);
        T g = (1 - 2 * maximize) * grad + weight_decay * (1 - decoupled) * param;
        exp_avg = exp_avg + (1 - beta1) * (g - exp_avg);
        exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * g * g;
        {"max_exp_avg_sq = max(max_exp_avg_sq, exp_avg_sq);" if amsgrad else ""}
        T denom = sqrt({second}) / sqrt(1 - pow(beta2, step)) + eps;
        param = param - lr / (1 - pow(beta1, step)) * exp_avg / denom;
    """
    keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")[:3 if amsgrad else 2]
    scalars = ("lr", "beta1", "beta2", "eps", "weight_decay", "decoupled", "maximize", "step")
    return _fused.Rule(f"distrib_adam{'_amsgrad' * amsgrad}", scalars, keys, operation, _fused_host)


_FUSED = {amsgrad: _fused_rule(amsgrad) for amsgrad in (False, True)}


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` before the
    Adam update), step for step as ``torch.optim.AdamW``. Default ``weight_decay`` is 0.01.

    Raises:
        ValueError: as ``Adam`` for out-of-range options.
    """

    _integer_param_error = RuntimeError  # as torch (see Optimizer._integer_param_error)

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, decoupled_weight_decay=True,
                         fused=fused)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
