"""Schedulers of schedulers: ``SequentialLR`` (one after another, each taking over at its
milestone) and ``ChainedScheduler`` (all together, each on the lr the previous left).

Public through ``nn.optim.lr_scheduler``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ._lr_base import LRScheduler, _group_values, set_group_value
from ._lr_plateau import ReduceLROnPlateau
from .optimizer import Optimizer

__all__ = ["SequentialLR", "ChainedScheduler"]


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


class SequentialLR(SchedulerOfSchedulers):
    """Run ``schedulers`` one after another, switching at each of the ``milestones``.

    Raises:
        ValueError: for no schedulers, a ReduceLROnPlateau, schedulers of another optimizer, or a
            number of milestones that is not one less than the number of schedulers.
        TypeError: if a scheduler has no ``optimizer``.
    """

    def __init__(
        self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int], last_epoch: int = -1
    ) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        check_schedulers(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more than the number "
                f"of milestone points, but got number of schedulers {len(schedulers)} and the number of "
                f"milestones to be equal to {len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            set_group_value(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Step every (nested) scheduler's ``last_epoch`` back by one, undoing their initial steps."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Step the scheduler in charge of the next epoch (restarting one at its milestone)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()
