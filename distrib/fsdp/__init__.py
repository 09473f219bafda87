"""``distrib.fsdp``: fully sharded data parallelism. Our ``torch.distributed.fsdp``.

``fully_shard`` is FSDP2's per-parameter sharding (Note [FSDP unit lifecycle] in
``_fully_shard.py``); ``FullyShardedDataParallel`` is FSDP1's wrapper (``sharding_strategy``,
``auto_wrap_policy``, ``state_dict_type``) built on it; ``get_full_state_dict`` and
``set_full_state_dict`` move whole (unsharded) state dicts in and out of sharded modules.
"""

from ._fully_shard import CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard
from ._state_dict import get_full_state_dict, set_full_state_dict
from .fully_sharded_data_parallel import (
    BackwardPrefetch,
    CPUOffload,
    FullyShardedDataParallel,
    ModuleWrapPolicy,
    ShardingStrategy,
    StateDictType,
    size_based_auto_wrap_policy,
)

__all__ = [
    "FSDPModule",
    "MixedPrecisionPolicy",
    "OffloadPolicy",
    "CPUOffloadPolicy",
    "fully_shard",
    "get_full_state_dict",
    "set_full_state_dict",
    "FullyShardedDataParallel",
    "BackwardPrefetch",
    "CPUOffload",
    "ModuleWrapPolicy",
    "ShardingStrategy",
    "StateDictType",
    "size_based_auto_wrap_policy",
]
