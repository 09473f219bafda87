"""``SequentialLR``: schedulers run one after another, each taking over at its milestone.

Public through ``nn.optim.lr_scheduler``.
"""

from __future__ import annotations

from bisect import bisect_right

from ._lr_base import LRScheduler, set_group_value
from ._lr_extra import SchedulerOfSchedulers, check_schedulers
from .optimizer import Optimizer

__all__ = ["SequentialLR"]


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
