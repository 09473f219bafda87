"""``swap_in_optimizer_params_and_state``: run an optimizer on other parameters and state."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Generator
from typing import Any

from tensor import Tensor

from .optimizer import Optimizer

__all__ = ["swap_in_optimizer_params_and_state"]


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(
    optimizer: Optimizer, swapin_parameters: dict[str, Tensor], swapin_optim_state: dict[str, Any]
) -> Generator[None, None, None]:
    """Inside the block, ``optimizer`` works on ``swapin_parameters`` (in the order of its
    parameter groups) with the state and group options of ``swapin_optim_state`` (a
    ``state_dict()``-shaped dict); on exit its own parameters, options and state are back. In-place
    changes to the swapped-in tensors (a ``step``) stay in them.

    Raises:
        RuntimeError: if the optimizer has no state yet, or the swapped-in parameters or state do
            not match its groups.
    """
    if not optimizer.state:
        raise RuntimeError("swap_in_optimizer_params_and_state requires initialized optimizer state.")
    if (
        not isinstance(swapin_optim_state, dict)
        or not isinstance(swapin_optim_state.get("state"), dict)
        or not isinstance(swapin_optim_state.get("param_groups"), list)
    ):
        raise RuntimeError("swap_in_optimizer_params_and_state requires a DCP-style optimizer state_dict.")
    groups = swapin_optim_state["param_groups"]
    flat = list(swapin_parameters.values())
    sizes = [len(g["params"]) for g in optimizer.param_groups]
    if (
        len(groups) != len(optimizer.param_groups)
        or [len(g["params"]) for g in groups] != sizes
        or len(flat) != sum(sizes)
    ):
        raise RuntimeError(
            "swap_in_optimizer_params_and_state requires the explicit parameter state to match "
            "optimizer.param_groups ordering."
        )
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        state: defaultdict = defaultdict(dict)
        offset = 0
        for live, saved in zip(optimizer.param_groups, groups):
            params = flat[offset : offset + len(saved["params"])]
            offset += len(params)
            live.update({k: v for k, v in saved.items() if k != "params"})
            live["params"] = params
            for param, index in zip(params, saved["params"]):
                state[param] = dict(swapin_optim_state["state"].get(index, {}))
        optimizer.state = state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
