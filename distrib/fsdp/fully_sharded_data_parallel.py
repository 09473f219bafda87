"""``FullyShardedDataParallel``: FSDP1's wrapper API (``sharding_strategy``, ``auto_wrap_policy``,
``state_dict_type``) over ``fully_shard`` units.

Unlike PyTorch's FSDP1 the wrapped submodules are sharded in place (no nested wrapper modules),
so parameter and state-dict names stay those of the unwrapped model.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from nn import Module

from .._procs import host_id
from ..init_api import get_rank, get_world_size
from ..object_collectives import all_gather_object
from ..parallel import DistributedDataParallel
from ..process_group import GroupMember, new_group
from ._fully_shard import CPUOffloadPolicy, FSDPModule, fully_shard
from ._state_dict import get_full_state_dict, set_full_state_dict

__all__ = [
    "FullyShardedDataParallel",
    "BackwardPrefetch",
    "CPUOffload",
    "ShardingStrategy",
    "StateDictType",
    "ModuleWrapPolicy",
    "size_based_auto_wrap_policy",
]


class ShardingStrategy(enum.Enum):
    """What is sharded: FULL_SHARD parameters, gradients and optimizer state, with parameters
    freed after forward; SHARD_GRAD_OP the same, but parameters kept from forward to backward;
    NO_SHARD nothing (DDP); HYBRID_SHARD within a node and replicated across nodes."""

    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4


class BackwardPrefetch(enum.Enum):
    """When a unit's backward starts the all_gather of the unit whose backward comes next:
    BACKWARD_PRE as it starts (before computing its gradients: more overlap, one more unit's
    parameters alive), BACKWARD_POST once its gradients are computed."""

    BACKWARD_PRE = 1
    BACKWARD_POST = 2


@dataclass(frozen=True)
class CPUOffload:
    """FSDP1's offload: with ``offload_params`` the shards and their gradients live on the CPU
    (the optimizer steps there) and are copied to the module's device for its forward and backward."""

    offload_params: bool = False


class StateDictType(enum.Enum):
    """FULL_STATE_DICT: whole tensors of the original shapes; SHARDED_STATE_DICT: each rank's
    flat pieces (``distrib.checkpoint`` saves those)."""

    FULL_STATE_DICT = 1
    SHARDED_STATE_DICT = 3


def size_based_auto_wrap_policy(
    module: Module, recurse: bool, nonwrapped_numel: int, min_num_params: int = int(1e8)
) -> bool:
    """Shard a submodule as its own unit when it holds at least ``min_num_params`` parameters
    not already in a smaller unit (PyTorch's policy; bind ``min_num_params`` with functools.partial)."""
    return True if recurse else nonwrapped_numel >= min_num_params


class ModuleWrapPolicy:
    """Shard every submodule of one of ``module_classes`` as its own unit."""

    def __init__(self, module_classes) -> None:
        self._classes = tuple(module_classes)

    def __call__(self, module: Module, recurse: bool, nonwrapped_numel: int) -> bool:
        return True if recurse else isinstance(module, self._classes)


def _auto_wrap(module: Module, policy: Callable, wrap: Callable[[Module], None]) -> int:
    """Shard, children first, each submodule the policy picks; returns how many parameters of
    ``module``'s subtree are left for an enclosing unit."""
    left = sum(p.numel() for p in module._parameters.values() if p is not None)
    for child in module.children():
        child_left = (
            _auto_wrap(child, policy, wrap)
            if policy(module=child, recurse=True, nonwrapped_numel=0)
            else sum(p.numel() for p in child.parameters())
        )
        if policy(module=child, recurse=False, nonwrapped_numel=child_left):
            wrap(child)
        else:
            left += child_left
    return left


def _hybrid_mesh(process_group) -> tuple:
    """``(replicate_group, shard_group)`` for HYBRID_SHARD: PyTorch's ``(shard_group,
    replicate_group)`` pair as given, or by default the ranks of this host (sharded) and the ranks
    with the same place on every host (replicated).

    Raises:
        ValueError: if the hosts do not run the same number of ranks.
    """
    if isinstance(process_group, tuple):
        shard_group, replicate_group = process_group
        return replicate_group, shard_group
    hosts: list = [None] * get_world_size()
    all_gather_object(hosts, host_id())
    by_host: dict[str, list[int]] = {}
    for rank, host in enumerate(hosts):
        by_host.setdefault(host, []).append(rank)
    per_host = sorted(by_host.values())
    if len({len(ranks) for ranks in per_host}) != 1:
        raise ValueError(f"HYBRID_SHARD needs the same number of ranks on every host, got {[len(r) for r in per_host]}")
    me = get_rank()
    shard_groups = [new_group(ranks) for ranks in per_host]  # every rank creates every group, in order
    replicate_groups = [new_group([ranks[i] for ranks in per_host]) for i in range(len(per_host[0]))]
    host = next(h for h, ranks in enumerate(per_host) if me in ranks)
    return replicate_groups[per_host[host].index(me)], shard_groups[host]


def _no_shard_mesh(process_group) -> tuple:
    """``(replicate_group, shard_group)`` for NO_SHARD with CPU offload: each rank is a shard group
    of its own (it holds whole parameters), replicated across ``process_group`` (the world by
    default), so gradients are all-reduced as DDP's and the parameters can live on the CPU."""
    singles = [new_group([rank]) for rank in range(get_world_size())]  # every rank creates every group, in order
    return (GroupMember.WORLD if process_group is None else process_group), singles[get_rank()]


class FullyShardedDataParallel(Module):
    """Shards ``module`` over ``process_group`` (the world by default) with ``sharding_strategy``;
    the submodules ``auto_wrap_policy`` picks become units of their own, the rest belongs to the
    root unit. Build the optimizer on this wrapper's ``parameters()`` (this rank's shards).

    HYBRID_SHARD shards within each host and replicates across hosts (or within and across the
    ``(shard_group, replicate_group)`` given as ``process_group``). ``cpu_offload=CPUOffload(True)``
    keeps the shards and gradients on the CPU. ``backward_prefetch`` says when backward starts
    gathering the next unit (None: when it is needed); with ``forward_prefetch`` each unit's
    forward starts gathering the unit that ran next in the previous forward (Note [FSDP unit
    lifecycle]).

    NO_SHARD is ``DistributedDataParallel`` around the module; with CPU offload it is FSDP with a
    one-rank shard group per rank replicated across the group, so the whole parameters can live
    on the CPU.
    """

    def __init__(
        self,
        module: Module,
        process_group=None,
        sharding_strategy: ShardingStrategy | None = None,
        cpu_offload: CPUOffload | None = None,
        auto_wrap_policy: Callable | None = None,
        backward_prefetch: BackwardPrefetch | None = BackwardPrefetch.BACKWARD_PRE,
        forward_prefetch: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        offload = cpu_offload is not None and cpu_offload.offload_params
        self.sharding_strategy = strategy
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        if strategy is ShardingStrategy.NO_SHARD and not offload:
            self._fsdp_wrapped_module = DistributedDataParallel(module, process_group=process_group)
            return
        reshard = strategy in (ShardingStrategy.FULL_SHARD, ShardingStrategy.HYBRID_SHARD)
        mesh = process_group
        if strategy is ShardingStrategy.HYBRID_SHARD:
            mesh = _hybrid_mesh(process_group)
        elif strategy is ShardingStrategy.NO_SHARD:
            mesh = _no_shard_mesh(process_group)

        when = {BackwardPrefetch.BACKWARD_PRE: "pre", BackwardPrefetch.BACKWARD_POST: "post", None: None}

        def wrap(m: Module) -> None:
            if not isinstance(m, FSDPModule):
                policy = CPUOffloadPolicy() if offload else None
                fully_shard(m, mesh=mesh, reshard_after_forward=reshard, offload_policy=policy)
                m._fsdp_state.implicit_forward_prefetch = forward_prefetch
                m._fsdp_state.implicit_backward_prefetch = when[backward_prefetch]

        if auto_wrap_policy is not None:
            _auto_wrap(module, auto_wrap_policy, wrap)
        wrap(module)
        self._fsdp_wrapped_module = module

    @property
    def module(self) -> Module:
        """The wrapped module (its parameters are this rank's shards)."""
        inner = self._fsdp_wrapped_module
        return inner.module if isinstance(inner, DistributedDataParallel) else inner

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The wrapped module's forward, its units gathered around it."""
        return self._fsdp_wrapped_module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Generator[None, None, None]:
        """Accumulate gradients locally (no reduce-scatter or all-reduce) inside the block."""
        if isinstance(self._fsdp_wrapped_module, DistributedDataParallel):
            with self._fsdp_wrapped_module.no_sync():
                yield
            return
        units = [m for m in self.module.modules() if isinstance(m, FSDPModule)]
        for unit in units:
            unit.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            for unit in units:
                unit.set_requires_gradient_sync(True)

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(
        module: FullyShardedDataParallel, state_dict_type: StateDictType
    ) -> Generator[None, None, None]:
        """Make ``module.state_dict()``/``load_state_dict`` use ``state_dict_type`` inside the block."""
        previous = module._state_dict_type
        module._state_dict_type = state_dict_type
        try:
            yield
        finally:
            module._state_dict_type = previous

    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        """The wrapped module's state: whole tensors (FULL_STATE_DICT, the default; gathered, so
        call it on every rank) or this rank's pieces (SHARDED_STATE_DICT)."""
        if (
            self._state_dict_type is StateDictType.FULL_STATE_DICT
            and not isinstance(self._fsdp_wrapped_module, DistributedDataParallel)
        ):
            state = get_full_state_dict(self.module)
        else:
            state = self.module.state_dict(keep_vars=keep_vars)
        if destination is None:
            return state.__class__((prefix + k, v) for k, v in state.items())
        destination.update((prefix + k, v) for k, v in state.items())
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Load a state of the current ``state_dict_type``."""
        if (
            self._state_dict_type is StateDictType.FULL_STATE_DICT
            and not isinstance(self._fsdp_wrapped_module, DistributedDataParallel)
        ):
            return set_full_state_dict(self.module, state_dict, strict)
        return self.module.load_state_dict(state_dict, strict, assign)
