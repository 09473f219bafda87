"""``Muon``: momentum SGD whose update for each matrix is orthogonalised by a Newton-Schulz
iteration (MomentUm Orthogonalized by Newton-schulz)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import tensor

from ._update_helpers import lerp_
from .optimizer import Optimizer, ParamsT

__all__ = ["Muon"]

DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def _to_bfloat16(xp, x):
    """``x`` (float32) rounded to bfloat16 precision (round to nearest even), kept as float32.

    Note [Muon in bfloat16]: PyTorch runs the Newton-Schulz iteration in bfloat16; every step of it
    here is computed in float32 and rounded to bfloat16 like PyTorch's result, so the iterates agree
    with PyTorch's to bfloat16 precision (accumulation order can move a rounding by one ulp).
    """
    bits = xp.array(x, dtype=xp.float32, order="C").view(xp.uint32)
    rounded = (bits + (xp.uint32(0x7FFF) + ((bits >> 16) & xp.uint32(1)))) & xp.uint32(0xFFFF0000)
    return rounded.view(xp.float32)


def zeropower_via_newtonschulz(xp, grad, coefficients: tuple[float, float, float], steps: int, eps: float):
    """The Newton-Schulz approximation of ``U V^T`` for ``grad = U S V^T`` (raw 2-d arrays), in
    bfloat16 precision (Note [Muon in bfloat16]).

    Raises:
        ValueError: for 100 or more steps, a grad that is not 2-d, or not 3 coefficients.
    """
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    bf16 = lambda x: _to_bfloat16(xp, x)  # noqa: E731 - a local shorthand
    x = bf16(grad.astype(xp.float32))
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = bf16(xp.sqrt((x * x).sum(dtype=xp.float32)))
    x = bf16(x / max(float(norm), eps))
    for _ in range(steps):
        gram = bf16(x @ x.T)
        update = bf16(b * gram + c * (gram @ gram))
        x = bf16(a * x + update @ x)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon, step for step as ``torch.optim.Muon`` to bfloat16 precision (Note [Muon in
    bfloat16]); for 2-d parameters only.

    Raises:
        ValueError: for negative ``lr``/``momentum``/``weight_decay``, an unknown
            ``adjust_lr_fn``, or a parameter that is not 2-d.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = DEFAULT_NS_COEFFICIENTS,
        eps: float = 1e-7,
        ns_steps: int = 5,
        adjust_lr_fn: str | None = None,
    ) -> None:
        for value, message in (
            (lr, f"Learning rate should be >= 0 but is: {lr}"),
            (momentum, f"momentum should be >= 0 but is: {momentum}"),
            (weight_decay, f"weight decay should be >= 0 but is: {weight_decay}"),
        ):
            if not 0.0 <= value:
                raise ValueError(message)
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {list(p.shape)}"
                    )

    def step(self, closure: Callable[[], Any] | None = None):
        """Update every parameter that has a gradient; returns the closure's loss (or None)."""
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, momentum = float(group["lr"]), float(group["momentum"])
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = tensor.zeros_like(p)
                xp, data, g = p._device.backend.xp, p._data, grad._data
                buf = state["momentum_buffer"]._data
                lerp_(xp, buf, g, 1 - momentum, xp.empty_like(buf))
                if group["nesterov"]:
                    update = g.copy()
                    lerp_(xp, update, buf, momentum, xp.empty_like(update))
                else:
                    update = buf
                ortho = zeropower_via_newtonschulz(
                    xp, update, tuple(group["ns_coefficients"]), group["ns_steps"], float(group["eps"])
                )
                xp.multiply(data, 1 - lr * float(group["weight_decay"]), out=data)
                data -= (_adjust_lr(lr, group["adjust_lr_fn"], p.shape) * ortho).astype(data.dtype)
                p._version_box[0] += 1
        return loss
