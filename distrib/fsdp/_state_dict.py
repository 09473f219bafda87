"""Full state dicts of sharded modules: every unit's parameters gathered to their original shapes,
and the reverse (each rank keeps its piece of each full tensor)."""

from __future__ import annotations

from collections import OrderedDict

import tensor
from nn import Module
from tensor import Tensor

from ._fully_shard import FSDPModule

__all__ = ["get_full_state_dict", "set_full_state_dict"]


def shard_slots(module: Module) -> dict[int, tuple]:
    """``id(shard) -> (unit state, index)`` for every sharded parameter under ``module``."""
    found = {}
    for unit in module.modules():
        if isinstance(unit, FSDPModule):
            state = unit._fsdp_state
            for i, shard in enumerate(state.sharded_params()):
                found[id(shard)] = (state, i)
    return found


def get_full_state_dict(module: Module) -> OrderedDict:
    """``module.state_dict()`` with each shard replaced by the whole parameter (gathered from every
    rank: call it on every rank). Keys and order are those of the unsharded module.
    """
    slots = shard_slots(module)
    gathered: dict[int, list[Tensor]] = {}
    result = OrderedDict()
    with tensor.no_grad():
        for key, value in module.state_dict(keep_vars=True).items():
            slot = slots.get(id(value))
            if slot is None:
                result[key] = value.detach()
                continue
            state, i = slot
            if id(state) not in gathered:
                gathered[id(state)] = state.shards.gather(state.sharded_params(), state.group)
            result[key] = gathered[id(state)][i].clone()
    return result


def set_full_state_dict(module: Module, state_dict: dict, strict: bool = True):
    """Load a full (unsharded) state dict into a sharded ``module``: each rank copies its piece of
    each parameter. Returns the missing and unexpected keys, as ``load_state_dict``.

    Raises:
        RuntimeError: for missing or unexpected keys (when ``strict``), or a shape that differs
            from the parameter's original shape.
    """
    slots = shard_slots(module)
    local = OrderedDict()
    for key, value in module.state_dict(keep_vars=True).items():
        if key not in state_dict:
            continue
        slot = slots.get(id(value))
        if slot is None:
            local[key] = state_dict[key]
            continue
        state, i = slot
        source = state_dict[key]
        if tuple(source.shape) != tuple(state.shards.shapes[i]):
            raise RuntimeError(
                f"size mismatch for {key}: copying a param with shape {list(source.shape)} from "
                f"checkpoint, the shape in current model is {list(state.shards.shapes[i])}."
            )
        local[key] = state.shards.split(source.to(dtype=value.dtype, device=value.device), i)
    for key in state_dict:
        if key not in local:
            local[key] = state_dict[key]  # reported as unexpected by load_state_dict
    return module.load_state_dict(local, strict=strict)
