"""``Adafactor``: Adam-like steps with the second moment of a matrix kept as row and column
factors (memory ``O(rows + cols)``), relative step sizes and update clipping."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import tensor
from tensor import Tensor

from ._update_helpers import lerp_
from .optimizer import Optimizer, ParamsT

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor, step for step as ``torch.optim.Adafactor`` (PyTorch's variant: no first moment,
    ``beta2_t = 1 - step ** beta2_decay``, step size ``min(lr, 1/sqrt(step))`` scaled by the
    parameter's RMS, updates clipped to RMS ``d``).

    State per parameter: ``step``, and ``row_var``/``col_var`` (factored, for parameters with 2
    or more dims) or ``variance`` (vectors and scalars).

    Raises:
        ValueError: for ``lr < 0``, ``beta2_decay > 0``, negative epsilons, ``d < 1`` or negative
            ``weight_decay``, with PyTorch's messages.
        RuntimeError: at ``step``, for a complex parameter (as torch).
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        checks = [
            (0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
            (0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
            (eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}"),
            (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
            (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
            (0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            eps1, eps2 = group["eps"]
            if any(p.is_complex() for p, _ in self._params_with_grad(group)):
                raise RuntimeError("Adafactor does not support complex parameters")
            for p, grad, state, step in self._param_states(group, _init_state):
                if eps1 is None:
                    eps1 = float(np.finfo(p.dtype.numpy).eps)  # from the first parameter, as PyTorch
                _update(p, grad, state, group, step, eps1, eps2)
        return loss


def _init_state(param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
    """Factored second-moment estimates for a matrix (or batch of them), a full one otherwise."""
    if param.ndim > 1:
        return {
            "row_var": tensor.zeros(*param.shape[:-1], 1, dtype=param.dtype, device=param.device),
            "col_var": tensor.zeros(*param.shape[:-2], 1, param.shape[-1], dtype=param.dtype, device=param.device),
        }
    return {"variance": tensor.zeros_like(param)}


def _rms(xp, array) -> float:
    return float(xp.sqrt(xp.sum(array * array))) / (array.size**0.5)


def _update(p, grad, state, group, step: float, eps1: float, eps2: float) -> None:
    xp, data = p._device.backend.xp, p._data
    lr, d, weight_decay = float(group["lr"]), float(group["d"]), float(group["weight_decay"])
    g = -grad._data if group["maximize"] else grad._data
    weight = step ** group["beta2_decay"]
    alpha = max(eps2, _rms(xp, data)) * min(lr, 1 / step**0.5)
    if weight_decay != 0:
        xp.multiply(data, 1 - lr * weight_decay, out=data)
    squares = g * g
    if p.ndim > 1:
        row_var, col_var = state["row_var"]._data, state["col_var"]._data
        row_mean = xp.sqrt(squares.sum(-1, keepdims=True)) ** 2 / g.shape[-1]
        lerp_(xp, row_var, row_mean.astype(data.dtype), weight, xp.empty_like(row_var))
        col_mean = xp.sqrt(squares.sum(-2, keepdims=True)) ** 2 / g.shape[-2]
        lerp_(xp, col_var, col_mean.astype(data.dtype), weight, xp.empty_like(col_var))
        estimate = xp.matmul(row_var, col_var) / xp.maximum(row_var.mean(-2, keepdims=True), eps1)
    else:
        variance = state["variance"]._data
        lerp_(xp, variance, squares, weight, xp.empty_like(variance))
        estimate = variance.copy()
    update = (1 / xp.sqrt(xp.maximum(estimate, eps1 * eps1))) * g
    denom = max(1.0, _rms(xp, update) / d)
    data -= (alpha / denom) * update.astype(data.dtype)
