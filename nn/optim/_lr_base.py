"""``LRScheduler``, the base class of the learning-rate schedulers, and their shared helpers.

Public through ``nn.optim.lr_scheduler``.
"""

from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any

from tensor import Tensor

from .optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different "
    "from None, the closed form is used instead of the new chainable form, where available."
)


def _format_param(name: str, optimizer: Optimizer, param) -> list:
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has {len(optimizer.param_groups)}."
            )
        return [_copy(p) for p in param]
    return [_copy(param) for _ in optimizer.param_groups]


def _copy(value):
    """A tensor option (an lr, a momentum) cloned, so that a scheduler does not alias the group's."""
    return value.clone() if isinstance(value, Tensor) else value


def _group_values(optimizer: Optimizer, key: str) -> list:
    return [_copy(group[key]) for group in optimizer.param_groups]


def set_group_value(group: dict[str, Any], key: str, value) -> None:
    """Set ``group[key]``; a tensor there (a tensor lr) is filled in place, as torch does, so that
    whoever holds it sees the new value."""
    current = group[key]
    if isinstance(current, Tensor):
        current.fill_(float(value))
    else:
        group[key] = value


def _track_step_calls(optimizer: Optimizer) -> None:
    """Wrap ``optimizer.step`` (once per optimizer) so that it records ``_opt_called``, for the
    step-order warnings of ``LRScheduler.step``: steps before the first scheduler do not count."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    optimizer_ref = weakref.ref(optimizer)  # no cycle through the instance attribute
    func = optimizer.step.__func__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        opt = optimizer_ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


class _Flag:
    """Set a boolean attribute of a scheduler for the duration of a block."""

    def __init__(self, scheduler: LRScheduler, name: str) -> None:
        self.scheduler, self.name = scheduler, name

    def __enter__(self) -> None:
        setattr(self.scheduler, self.name, True)

    def __exit__(self, *exc) -> None:
        setattr(self.scheduler, self.name, False)


class LRScheduler:
    """Base class: adjusts each param group's ``lr`` on every ``step()``.

    Construction records ``initial_lr`` in each group (when ``last_epoch == -1``) and takes the
    initial step, which sets the lrs for epoch 0. ``state_dict`` holds every attribute except
    the optimizer.

    Raises:
        TypeError: if ``optimizer`` is not an Optimizer.
        KeyError: when resuming (``last_epoch >= 0``) and a group has no ``initial_lr``.
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler "
                        "with last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume "
                        "training from a checkpoint but haven't properly loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not recommended)"
                    )
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_step_calls(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        with _Flag(self, "_is_initial"):
            self.step()

    def state_dict(self) -> dict[str, Any]:
        """Every attribute of the scheduler except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last ``step()``, one per group."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """The learning rates for the current ``last_epoch`` (subclasses implement it)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or jump to ``epoch``, deprecated) and set each group's ``lr``.

        Warns on the first call if ``optimizer.step`` was replaced after the scheduler was made, or
        was not called since.

        Raises:
            ValueError: if a param group was added after the scheduler was made.
        """
        if self._step_count == 1:
            self._warn_step_order()
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _warn_step_order(self) -> None:
        if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
            warnings.warn(
                "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                "initialization. Please, make sure to call `optimizer.step()` before "
                "`lr_scheduler.step()`. See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning, stacklevel=3,
            )
        elif not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
                "later, you should call them in the opposite order: `optimizer.step()` before "
                "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
                "value of the learning rate schedule. See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning, stacklevel=3,
            )

    def _update_lr(self, epoch: int | None = None) -> None:
        with _Flag(self, "_get_lr_called_within_step"):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def _current(self) -> list[float]:
        return _group_values(self.optimizer, "lr")
