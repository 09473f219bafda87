"""``get_state_dict`` / ``set_state_dict``: the state of a model and its optimizers as one nested
dict that ``distrib.checkpoint.save``/``load`` handle on any number of ranks, as
``torch.distributed.checkpoint.state_dict``.

Keys are the unwrapped model's parameter names (no ``module.`` of a DDP or FSDP wrapper); the
optimizer's state is keyed by parameter name too, so it does not depend on parameter order. The
shards of ``fully_shard`` units become ``ShardedTensor`` values that refer to the shards
themselves, so that ``load`` fills the model and optimizer in place.
"""

from __future__ import annotations

from typing import Any

import tensor
from nn import Module
from nn.optim import Optimizer

from ..collectives import all_reduce
from ..fsdp import FullyShardedDataParallel
from ..fsdp._state_dict import shard_slots
from ..optim import ZeroRedundancyOptimizer
from ..parallel import DistributedDataParallel
from ..reduce_op import ReduceOp
from ._sharded import ShardedTensor

__all__ = ["get_state_dict", "set_state_dict", "get_model_state_dict", "get_optimizer_state_dict"]


def _unwrap(model: Module) -> Module:
    return model.module if isinstance(model, (DistributedDataParallel, FullyShardedDataParallel)) else model


def _sharded(value, slot):
    if slot is None:
        return value
    state, i = slot
    return ShardedTensor(value, tuple(state.shards.shapes[i]), state.shards.rank * state.shards.lengths[i])


def get_model_state_dict(model: Module) -> dict[str, Any]:
    """The model's parameters and persistent buffers by name; shards as ``ShardedTensor``."""
    module = _unwrap(model)
    slots = shard_slots(module)
    return {key: _sharded(value, slots.get(id(value))) for key, value in module.state_dict(keep_vars=True).items()}


def _init_state(optimizer: Optimizer) -> None:
    """Give a fresh optimizer its state: one step with zero gradients at lr 0, which leaves the
    parameters as they are (as PyTorch's ``_init_optim_state``)."""
    lrs = [group["lr"] for group in optimizer.param_groups]
    for group in optimizer.param_groups:
        group["lr"] = 0.0
        for p in group["params"]:
            if p.grad is None:
                p.grad = tensor.zeros_like(p)
    optimizer.step()
    for group, lr in zip(optimizer.param_groups, lrs):
        group["lr"] = lr
    optimizer.zero_grad(set_to_none=True)


def _zero_state(optimizer: ZeroRedundancyOptimizer, names: dict) -> dict:
    """This rank's share of a ZeRO optimizer's state, each tensor a ``ShardedTensor`` that is all
    of one parameter's (only its owner saves it; any rank that owns it after a reshard loads it)."""
    has_state = tensor.tensor([1.0 if optimizer.optim.state else 0.0])
    all_reduce(has_state, op=ReduceOp.MAX, group=optimizer.process_group)  # every rank decides alike
    if has_state.item() == 0:
        _init_state(optimizer)
    return {
        names[id(p)]: {k: ShardedTensor(v, tuple(v.shape), 0) if tensor.is_tensor(v) else v for k, v in st.items()}
        for p, st in optimizer.optim.state.items()
    }


def get_optimizer_state_dict(model: Module, optimizer: Optimizer) -> dict[str, Any]:
    """``{"state": {name: {...}}, "param_groups": [{..., "params": [names]}]}``, the state of
    sharded parameters (``fully_shard`` pieces, a ``ZeroRedundancyOptimizer``'s partition) as
    ``ShardedTensor`` (a fresh optimizer's state is made first)."""
    module = _unwrap(model)
    names = {id(p): name for name, p in module.named_parameters()}
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        state = _zero_state(optimizer, names)
    else:
        slots = shard_slots(module)
        if not optimizer.state:
            _init_state(optimizer)
        state = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                slot = slots.get(id(p))
                state[names[id(p)]] = {
                    k: _sharded(v, slot) if tensor.is_tensor(v) and v.shape == p.shape and slot else v
                    for k, v in optimizer.state[p].items()
                }
    groups = [
        {**{k: v for k, v in g.items() if k != "params"}, "params": [names[id(p)] for p in g["params"]]}
        for g in optimizer.param_groups
    ]
    return {"state": state, "param_groups": groups}


def get_state_dict(model: Module, optimizers: Optimizer | list[Optimizer]) -> tuple[dict, dict]:
    """(model state dict, optimizer state dict) for ``distrib.checkpoint.save``/``load``; with a
    list of optimizers the second is a dict of their state dicts by position."""
    if isinstance(optimizers, Optimizer):
        return get_model_state_dict(model), get_optimizer_state_dict(model, optimizers)
    return get_model_state_dict(model), {str(i): get_optimizer_state_dict(model, o) for i, o in enumerate(optimizers)}


def set_state_dict(
    model: Module, optimizers: Optimizer | list[Optimizer], *, model_state_dict: dict, optim_state_dict: dict
) -> None:
    """Put state dicts of ``get_state_dict``'s form (e.g. filled by ``load``) into the model and
    optimizers: tensors are copied where they are not the model's own, options replaced."""
    current_model, current_optim = get_state_dict(model, optimizers)
    with tensor.no_grad():
        _copy_tensors(model_state_dict, current_model)
        pairs = (
            [(optim_state_dict, current_optim, optimizers)]
            if isinstance(optimizers, Optimizer)
            else [(optim_state_dict[str(i)], current_optim[str(i)], o) for i, o in enumerate(optimizers)]
        )
        for given, current, optimizer in pairs:
            _copy_tensors(given["state"], current["state"])
            for group, saved in zip(optimizer.param_groups, given["param_groups"]):
                group.update({k: v for k, v in saved.items() if k != "params"})


def _copy_tensors(given: dict, current: dict) -> None:
    for key, value in given.items():
        target = current[key]
        if isinstance(value, dict):
            _copy_tensors(value, target)
        elif isinstance(value, ShardedTensor) and value.local is not target.local:
            target.local.copy_(value.local)
        elif tensor.is_tensor(value) and value is not target:
            target.copy_(value)
