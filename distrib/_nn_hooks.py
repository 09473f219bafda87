"""What ``distrib`` installs into ``nn``'s seam (``nn/_distrib_hooks.py``) when it is imported."""

from __future__ import annotations

from nn import _distrib_hooks

from .collectives import all_reduce
from .init_api import get_world_size, is_initialized
from .reduce_op import ReduceOp


def _all_reduce_sum(t, group) -> None:
    all_reduce(t, op=ReduceOp.SUM, group=group)


def _world_size(group) -> int:
    return get_world_size(group) if is_initialized() else 1


def install() -> None:
    """Give ``nn`` the collectives of ``distrib`` (SyncBatchNorm's statistics)."""
    _distrib_hooks.api.all_reduce_sum = _all_reduce_sum
    _distrib_hooks.api.world_size = _world_size
