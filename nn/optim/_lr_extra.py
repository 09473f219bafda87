"""More learning-rate schedulers: PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR,
ReduceLROnPlateau and ChainedScheduler, each computing PyTorch's sequence exactly.

Public through ``nn.optim.lr_scheduler``.
"""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ._lr_base import (
    EPOCH_DEPRECATION_WARNING,
    LRScheduler,
    _Flag,
    _format_param,
    _group_values,
    set_group_value,
)
from .optimizer import Optimizer

__all__ = ["PolynomialLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ReduceLROnPlateau", "ChainedScheduler"]


class SchedulerOfSchedulers(LRScheduler):
    """A scheduler driving the schedulers in ``self._schedulers``; its ``state_dict`` holds theirs."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        """The attributes, with each inner scheduler's ``state_dict``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes and every inner scheduler."""
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, state in zip(self._schedulers, inner):
            scheduler.load_state_dict(state)


class PolynomialLR(LRScheduler):
    """Decay the lr by ``(1 - epoch / total_iters) ** power`` until ``total_iters``."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The current lrs times the ratio of this epoch's decay to the last one's."""
        self._warn_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current()
        factor = (
            (1.0 - self.last_epoch / self.total_iters) / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
            for base_lr in self.base_lrs
        ]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min`` over ``T_i`` epochs, restarting with
    ``T_i *= T_mult`` (SGDR). ``step(epoch)`` accepts fractional epochs.

    Raises:
        ValueError: for ``T_0`` not a positive integer, ``T_mult`` not an integer >= 1, a
            non-numeric ``eta_min``, or (in ``step``) a negative epoch.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,  # noqa: N803
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """``eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2`` per group."""
        self._warn_outside_step()
        return [
            self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
            for base_lr in self.base_lrs
        ]

    def step(self, epoch: float | None = None) -> None:
        """Advance one epoch, or jump to ``epoch`` (may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult**n
        else:
            self.T_i, self.T_cur = self.T_0, epoch
        self.last_epoch = math.floor(epoch)
        self._step_count = getattr(self, "_step_count", 0) + 1
        with _Flag(self, "_get_lr_called_within_step"):
            values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


class CyclicLR(LRScheduler):
    """Cycle the lr between ``base_lr`` and ``max_lr`` (triangular, triangular2, exp_range or a
    custom ``scale_fn``), and the momentum (or beta1) inversely when ``cycle_momentum``. Step it
    after every batch.

    Raises:
        ValueError: for an unknown ``mode`` without ``scale_fn``, or ``cycle_momentum`` with an
            optimizer that has neither ``momentum`` nor ``betas``.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                set_group_value(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_momentum(self, optimizer, base_momentum, max_momentum, last_epoch) -> None:
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
        self.use_beta1 = "betas" in optimizer.defaults
        self.base_momentums = _format_param("base_momentum", optimizer, base_momentum)
        self.max_momentums = _format_param("max_momentum", optimizer, max_momentum)
        if last_epoch == -1:
            for top, bottom, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                self._set_momentum(group, top)
                group["max_momentum"], group["base_momentum"] = top, bottom

    def _set_momentum(self, group: dict, momentum: float) -> None:
        if self.use_beta1:
            group["betas"] = (momentum, *group["betas"][1:])
        else:
            group["momentum"] = momentum

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = _triangular, "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = _triangular2, "cycle"
        else:
            self._scale_fn_ref, self.scale_mode = partial(_exp_range, self.gamma), "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale at cycle (or iteration) ``x``."""
        return (self._scale_fn_custom or self._scale_fn_ref)(x)

    def get_lr(self) -> list[float]:
        """The lrs for this iteration (also sets each group's momentum when ``cycle_momentum``)."""
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * factor * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, top - (top - base) * factor * scale)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The attributes; a custom ``scale_fn`` as its ``__dict__`` (a plain function as None)."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes (and a callable object's ``scale_fn`` state)."""
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` once a metric (passed to ``step``) has not improved for
    ``patience`` epochs, then wait ``cooldown`` epochs; never below ``min_lr``.

    Raises:
        ValueError: for ``factor >= 1``, an unknown ``mode``/``threshold_mode``, or a list of
            ``min_lr`` without one per group.
        TypeError: if ``optimizer`` is not an Optimizer.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor, self.optimizer = factor, optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = _group_values(optimizer, "lr")
        self._init_is_better(mode, threshold, threshold_mode)
        self.best, self.cooldown_counter, self.num_bad_epochs = self.mode_worse, 0, 0

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` by more than the threshold."""
        if self.mode == "min":
            return a < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if self.threshold_mode == "rel" else best + self.threshold)

    @property
    def in_cooldown(self) -> bool:
        """True while waiting out the cooldown after a reduction."""
        return self.cooldown_counter > 0

    def step(self, metrics: float, epoch: int | None = None) -> None:  # type: ignore[override]
        """Record this epoch's metric, reducing the lr after ``patience`` epochs without improvement."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due to a new param "
                    "group being added to the optimizer. Please modify the `min_lrs` field to match the "
                    "length of the `optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                set_group_value(group, "lr", new_lr)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes."""
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


def check_schedulers(name: str, optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> None:
    """Check the schedulers that ``name`` (ChainedScheduler, SequentialLR) is to drive.

    Raises:
        TypeError: if a scheduler has no ``optimizer``.
        ValueError: for a ReduceLROnPlateau (its ``step`` needs a metric), or a scheduler of
            another optimizer than ``optimizer``.
    """
    for idx, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{name} at index {idx} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{name} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs "
                f"to be specified when calling `step`, but got one at index {idx} in the given schedulers "
                "sequence."
            )
        if optimizer is not scheduler.optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but got scheduler "
                f"{type(scheduler).__name__} at index {idx} has {scheduler.optimizer}, which is different "
                f"from {type(optimizer).__name__}."
            )


class ChainedScheduler(SchedulerOfSchedulers):
    """Step several schedulers of one optimizer together, each on the lr the previous left.

    Raises:
        ValueError: for no schedulers, a ReduceLROnPlateau, or schedulers of different optimizers.
        TypeError: if a scheduler has no ``optimizer``.
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        check_schedulers(name, optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = _group_values(optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Step every chained scheduler, in order."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _group_values(self.optimizer, "lr")


def _triangular(x: float) -> float:
    return 1.0


def _triangular2(x: float) -> float:
    return 1 / (2.0 ** (x - 1))


def _exp_range(gamma: float, x: float) -> float:
    return gamma**x
