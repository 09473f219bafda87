"""``Rprop``: resilient backpropagation, steps from the signs of the gradients only."""

from __future__ import annotations

from typing import Any

import tensor
from tensor import Tensor

from ._checks import check_nonnegative, torch_flags
from .optimizer import ParamsT, ParamwiseOptimizer

__all__ = ["Rprop"]


class Rprop(ParamwiseOptimizer):
    """Rprop, step for step as ``torch.optim.Rprop``: each coordinate's step size grows by
    ``etaplus`` while its gradient keeps its sign and shrinks by ``etaminus`` (skipping that
    update) when the sign flips, clamped to ``step_sizes``.

    State per parameter: ``step``, ``prev`` (the last gradient used) and ``step_size``.

    Raises:
        ValueError: "Invalid learning rate: ..." or "Invalid eta values: ..." unless
            ``0 < etaminus < 1 < etaplus``.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-2,
        etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50),
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr,
            "etas": tuple(etas),
            "step_sizes": tuple(step_sizes),
            "foreach": foreach,
            "maximize": maximize,
            **torch_flags(differentiable, capturable=capturable),
        }
        super().__init__(params, defaults)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        lr = float(group["lr"])
        initial_size = complex(lr, lr) if param.is_complex() else lr  # each part steps by lr (as torch)
        return {"prev": tensor.zeros_like(param), "step_size": tensor.full_like(param, initial_size)}

    def _update(self, param: Tensor, grad: Tensor, state: dict[str, Any], step: float, group: dict[str, Any]) -> None:
        etaminus, etaplus = (float(e) for e in group["etas"])
        size_min, size_max = (float(s) for s in group["step_sizes"])
        xp, data = param._device.backend.xp, param._data
        g = grad._data.copy()
        if group["maximize"]:
            xp.negative(g, out=g)
        prev, step_size = state["prev"]._data, state["step_size"]._data
        agreement = xp.sign(g * prev)
        flipped = agreement < 0
        factor = xp.where(agreement > 0, etaplus, xp.where(flipped, etaminus, 1.0)).astype(data.dtype)
        xp.multiply(step_size, factor, out=step_size)
        xp.clip(step_size, size_min, size_max, out=step_size)
        g[flipped] = 0
        direction = xp.where(xp.isnan(g), 0, xp.sign(g))  # torch's sign(nan) is 0: a nan entry does not move
        xp.subtract(data, direction * step_size, out=data)
        prev[...] = g
