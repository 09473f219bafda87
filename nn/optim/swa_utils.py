"""Stochastic weight averaging and EMA (our ``torch.optim.swa_utils``): ``AveragedModel``,
``SWALR``, ``update_bn`` and the averaging functions.

    >>> swa_model = nn.optim.swa_utils.AveragedModel(model)
    >>> swa_model.update_parameters(model)      # after each epoch of the SWA phase
    >>> nn.optim.swa_utils.update_bn(loader, swa_model)
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

import tensor
from tensor import Tensor

from ..modules.module import Module
from ..modules.normalization import _BatchNorm
from ._lr_base import LRScheduler, _format_param
from ._update_helpers import lerp_
from .optimizer import Optimizer

__all__ = [
    "AveragedModel",
    "SWALR",
    "update_bn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``avg_fn`` for an exponential moving average: ``decay * avg + (1 - decay) * current``.

    Raises:
        ValueError: for ``decay`` outside ``[0, 1]``.
    """
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """``avg_fn`` for the running mean: ``avg + (current - avg) / (num_averaged + 1)``."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged) -> Tensor:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _lerp_all(targets: list[Tensor], ends: list[Tensor], weight: float) -> None:
    """``target += weight * (end - target)`` for each pair; integer and bool targets (such as
    BatchNorm's ``num_batches_tracked``) get ``(1 - weight) * target + weight * end`` rounded
    toward zero, as torch's EMA computes them (torch's SWA raises for them instead)."""
    for target, end in zip(targets, ends):
        if not (target.is_floating_point() or target.is_complex()):
            target.copy_(target * (1 - weight) + end * weight)
            continue
        xp = target._device.backend.xp
        lerp_(xp, target._data, end._data, weight, xp.empty_like(target._data))
        target._version_box[0] += 1


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """``multi_avg_fn`` for an exponential moving average, in place over lists of tensors.

    Raises:
        ValueError: for ``decay`` outside ``[0, 1]``.
    """
    _check_decay(decay)

    def ema_update(ema_params: list[Tensor], current_params: list[Tensor], _num_averaged) -> None:
        _lerp_all(ema_params, current_params, 1 - decay)

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """``multi_avg_fn`` for the running mean, in place over lists of tensors."""

    def swa_update(averaged_params: list[Tensor], current_params: list[Tensor], num_averaged) -> None:
        _lerp_all(averaged_params, current_params, 1 / (float(num_averaged) + 1))

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) are the running
    average (or ``avg_fn``/``multi_avg_fn``'s average) of ``model``'s over ``update_parameters``
    calls. ``n_averaged`` counts them (an int64 buffer).

    Raises:
        AssertionError: if both ``avg_fn`` and ``multi_avg_fn`` are given (torch's type).
    """

    def __init__(
        self,
        model: Module,
        device=None,
        avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")  # torch's type
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor.tensor(0, dtype=tensor.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        """Run the averaged copy."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current parameters into the average (the first call copies them)."""
        with tensor.no_grad():
            ours = self._averaged(self.module)
            theirs = [p.detach().to(a.device) for a, p in zip(ours, self._averaged(model))]
            if int(self.n_averaged) == 0:
                for averaged, current in zip(ours, theirs):
                    averaged.copy_(current)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(ours, theirs, self.n_averaged)
            else:
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for averaged, current in zip(ours, theirs):
                    averaged.copy_(avg_fn(averaged, current, self.n_averaged.to(averaged.device)))
            if not self.use_buffers:
                for ours_buffer, model_buffer in zip(self.module.buffers(), model.buffers()):
                    ours_buffer.copy_(model_buffer.detach().to(ours_buffer.device))
            self.n_averaged.add_(1)

    def _averaged(self, module: Module) -> list[Tensor]:
        found = itertools.chain(module.parameters(), module.buffers()) if self.use_buffers else module.parameters()
        return [t.detach() for t in found]


def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute the running statistics of every BatchNorm in ``model`` with one pass over
    ``loader`` (its batches, or the first item of each list/tuple batch), as a cumulative average."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with tensor.no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to ``swa_lr`` over ``anneal_epochs`` (cosine or linear), then hold it.

    Raises:
        ValueError: for an unknown ``anneal_strategy`` or a negative (or non-int) ``anneal_epochs``.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float | list[float],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self._anneal_strategy == "cos" else t

    @staticmethod
    def _initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        """The lrs for the current step of the annealing."""
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self._anneal(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self._anneal(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]
