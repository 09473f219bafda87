"""``Join``: train on uneven inputs without hanging (``torch.distributed.algorithms.Join``).

When ranks get different numbers of batches, the ranks that run out first would leave the
others waiting forever in their next all-reduce. Inside ``with Join([ddp]):`` a rank that has
finished its loop *shadows* the collectives the others still issue: each iteration it joins
an all-reduce that counts the ranks still training, then runs every joinable's
``JoinHook.main_hook`` (for DDP: the buffer broadcast and the bucket all-reduces, with zeros).
When the count reaches zero every rank runs ``post_hook(is_last_joiner)`` (for DDP: take the
parameters of the last rank to finish) and leaves the context together.

    with Join([model]):                                   # doctest: +SKIP
        for batch in my_uneven_share_of_the_data:
            model(batch).sum().backward()
            optimizer.step()
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from typing import Any, NamedTuple

import tensor

from .. import collectives

__all__ = ["Join", "Joinable", "JoinHook"]


class JoinHook:
    """What a joined rank runs for one ``Joinable``: ``main_hook`` once per iteration the other
    ranks still run, ``post_hook`` once at the end. Both do nothing by default."""

    def main_hook(self) -> None:
        """Shadow one iteration's collectives of the ranks still training."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once every rank has joined; ``is_last_joiner`` is True on the rank(s) that finished last."""


class _JoinConfig(NamedTuple):
    enable: bool
    throw_on_early_termination: bool
    is_first_joinable: bool

    @staticmethod
    def disabled() -> _JoinConfig:
        return _JoinConfig(enable=False, throw_on_early_termination=False, is_first_joinable=False)


class Joinable(ABC):
    """Something that takes part in ``Join``: gives a ``JoinHook``, a device and a process group,
    and calls ``Join.notify_join_context(self)`` at the start of every iteration."""

    @abstractmethod
    def __init__(self) -> None:
        super().__init__()
        self._join_config = _JoinConfig.disabled()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The hook a joined rank runs for this object."""

    @property
    @abstractmethod
    def join_device(self):
        """The device of the join all-reduces."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group the join all-reduces run on."""


class Join:
    """Context manager for uneven inputs across ranks; see the module docstring.

    Args:
        joinables: the ``Joinable`` objects of the loop (e.g. ``[ddp_model]``), sharing one process group.
        enable: False turns the context into a no-op.
        throw_on_early_termination: raise on every rank as soon as one rank runs out of inputs,
            instead of shadowing.
        kwargs: passed to each ``joinable.join_hook``.

    Raises:
        ValueError: no joinables, or joinables on different process groups.
    """

    def __init__(self, joinables: list[Joinable], enable: bool = True, throw_on_early_termination: bool = False,
                 **kwargs: Any) -> None:
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        for j in joinables:
            if not isinstance(j, Joinable):
                raise TypeError(f"Join: every joinable must be a Joinable, got {type(j).__name__}")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        for i, j in enumerate(self._joinables):
            j._join_config = _JoinConfig(enable, throw_on_early_termination, is_first_joinable=i == 0)
        groups = {id(j.join_process_group) for j in self._joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = self._joinables[0].join_process_group
        self._device = self._joinables[0].join_device

    def __enter__(self) -> Join:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if not self._enable or exc_type is not None:
                return  # an error propagates as is; the other ranks' collectives time out
            is_last_joiner = True
            iterations = 0
            while self._count_nonjoined() > 0:
                if self._throw_on_early_termination:
                    self._notify_to_terminate()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                iterations += 1
                if iterations == 1000:
                    warnings.warn("Join: this rank has shadowed 1000 iterations of the others; the inputs "
                                  "are very uneven", stacklevel=2)
            for hook in self._join_hooks:
                hook.post_hook(is_last_joiner)
        finally:
            for j in self._joinables:
                j._join_config = _JoinConfig.disabled()

    def _count_nonjoined(self) -> int:
        count = tensor.zeros(1, device=self._device)
        collectives.all_reduce(count, group=self._process_group)
        return int(count.item())

    def _notify_to_terminate(self) -> None:
        flag = tensor.ones(1, device=self._device)
        collectives.all_reduce(flag, group=self._process_group)
        raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")

    @staticmethod
    def notify_join_context(joinable: Joinable):
        """Called by a joinable at the start of each iteration on a rank that still has inputs:
        contributes 1 to the joined ranks' count. Returns the async Work (None when not in a Join)."""
        config = joinable._join_config
        if not config.is_first_joinable or not config.enable:
            return None
        device, group = joinable.join_device, joinable.join_process_group
        ones = tensor.ones(1, device=device)
        work = collectives.all_reduce(ones, group=group, async_op=True)
        if config.throw_on_early_termination:
            zeros = tensor.zeros(1, device=device)
            collectives.all_reduce(zeros, group=group)
            if zeros.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        return work
