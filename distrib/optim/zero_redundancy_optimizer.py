"""``ZeroRedundancyOptimizer``: ZeRO stage 1, as ``torch.distributed.optim.ZeroRedundancyOptimizer``.

Note [ZeRO-1 partition]
~~~~~~~~~~~~~~~~~~~~~~~
Each rank keeps the optimizer state of only its own parameters. The partition is PyTorch's:
within each parameter group, parameters in decreasing size go one by one to the rank that owns
the fewest elements so far, so every rank holds about 1/N of the state (at most the largest
parameter more). Gradients are still all-reduced whole (by DDP), every rank
steps its own parameters with a local instance of the wrapped optimizer, and then each rank's
parameters go to every other rank: one all_gather per dtype and device, whatever the number of
parameters or ranks (PyTorch broadcasts once per rank). Its output is a flat buffer made once,
holding every rank's parameters in order (each rank's run padded to the longest), and the
parameters' storage *is* that buffer (``p.data`` is rebound to a view of it at construction):
the local optimizer updates its parameters in place there, the gather writes the others' there,
and no step concatenates or unflattens anything. Only this rank's run is copied, into a send
buffer also made once (MPI forbids the input to alias the output). Moving the parameters
afterwards (``model.to(...)``) gives them new storage and ends the aliasing; make the optimizer
after the model is where it will train. The step of N ranks is 1/N of
the optimizer's arithmetic plus that all_gather, whose volume is the parameters once; unlike
DDP's all_reduce it is not hidden behind backward, which is what the benchmark's ratio to the
DDP step measures (BENCHMARKS.md, issue 15).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import tensor
from nn.optim import Optimizer
from tensor import Tensor

from ..collectives import all_gather_into_tensor
from ..init_api import get_global_rank, get_rank, get_world_size
from ..object_collectives import gather_object

__all__ = ["ZeroRedundancyOptimizer"]


def partition(param_groups: list[dict], world_size: int) -> list[list[list[Tensor]]]:
    """``[rank][group] -> parameters``: each group's parameters, largest first, each to the rank
    owning the fewest elements so far (Note [ZeRO-1 partition])."""
    sizes = [0] * world_size
    owned: list[list[list[Tensor]]] = [[[] for _ in param_groups] for _ in range(world_size)]
    for g, group in enumerate(param_groups):
        for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
            rank = sizes.index(min(sizes))
            owned[rank][g].append(p)
            sizes[rank] += p.numel()
    return owned


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps ``optimizer_class`` so that each rank of ``process_group`` keeps the state of about
    1/N of the parameters and steps only those, then broadcasts them (Note [ZeRO-1 partition]).

    Use it in place of the optimizer, with gradients averaged as usual (DDP)::

        model = dist.DistributedDataParallel(net)
        opt = ZeroRedundancyOptimizer(model.parameters(), nn.optim.Adam, lr=1e-3)

    ``optim`` is the local optimizer; ``state`` is its state (this rank's shard).
    ``consolidate_state_dict(to)`` then ``state_dict()`` on rank ``to`` give the state of the
    whole optimizer, in the wrapped optimizer's format; ``load_state_dict`` takes that on every rank.

    Raises:
        ValueError: for ``overlap_with_ddp=True`` or ``parameters_as_bucket_view=True`` (not
            supported).
    """

    def __init__(
        self,
        params: Iterable,
        optimizer_class: type[Optimizer],
        process_group=None,
        parameters_as_bucket_view: bool = False,
        overlap_with_ddp: bool = False,
        **defaults: Any,
    ) -> None:
        if overlap_with_ddp or parameters_as_bucket_view:
            raise ValueError(
                "ZeroRedundancyOptimizer: overlap_with_ddp and parameters_as_bucket_view "
                "are not supported; leave them False"
            )
        super().__init__(params, defaults)
        self.process_group = process_group  # None: the world
        self.world_size = get_world_size(self.process_group)
        self.rank = get_rank(self.process_group)
        self._optimizer_class = optimizer_class
        self._owned = partition(self.param_groups, self.world_size)
        self._buckets = [_FlatBucket(per_rank, self.rank) for per_rank in _buckets(self._owned)]
        local_groups = [
            {**_options(group), "params": mine} for group, mine in zip(self.param_groups, self._owned[self.rank])
        ]
        self.optim = optimizer_class(local_groups, **defaults)
        self.state = self.optim.state
        self._all_state_dicts: list | None = None

    # ------------------------------------------------------------ stepping
    def step(self, closure=None, **kwargs: Any):
        """Step this rank's parameters with the local optimizer, then broadcast every rank's.

        Returns the closure's loss (None without one).
        """
        for local, group in zip(self.optim.param_groups, self.param_groups):
            local.update(_options(group))  # e.g. an LR scheduler changed ``lr``
        loss = self.optim.step(closure, **kwargs) if closure is not None else self.optim.step(**kwargs)
        self._sync_parameters()
        return loss

    def _sync_parameters(self) -> None:
        """Every rank's parameters to every rank: one all_gather per dtype and device into the
        buffer that holds the parameters (Note [ZeRO-1 partition])."""
        with tensor.no_grad():
            for bucket in self._buckets:
                bucket.send.copy_(bucket.mine)
                all_gather_into_tensor(bucket.flat, bucket.send, group=self.process_group)

    # ------------------------------------------------------------ state
    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collect every rank's shard of the state on rank ``to`` (a group rank); call it on every
        rank, then ``state_dict()`` on rank ``to``."""
        shards: list | None = [None] * self.world_size if self.rank == to else None
        gather_object(
            self.optim.state_dict(), shards, dst=get_global_rank(self.process_group, to), group=self.process_group
        )
        self._all_state_dicts = shards

    def state_dict(self) -> dict[str, Any]:
        """The whole optimizer's state, numbered as the wrapped optimizer's would be.

        Raises:
            RuntimeError: on a rank that did not receive ``consolidate_state_dict``'s shards.
        """
        if self._all_state_dicts is None:
            raise RuntimeError(
                f"Optimizer state has not been consolidated on this rank ({self.rank}); "
                "call consolidate_state_dict(to=...) on every rank first, then "
                "state_dict() on rank `to`"
            )
        index = self._global_index()
        state: dict[int, Any] = {}
        for rank, shard in enumerate(self._all_state_dicts):
            local_params = [p for group in self._owned[rank] for p in group]
            for local_index, value in shard["state"].items():
                state[index[id(local_params[local_index])]] = value
        groups = []
        for group, local in zip(self.param_groups, self._all_state_dicts[0]["param_groups"]):
            packed = {k: v for k, v in local.items() if k != "params"}
            packed.update(_options(group))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a whole optimizer's state (``state_dict()``'s); each rank keeps its own shard.

        Raises:
            ValueError: if the number of groups, or of parameters in a group, differs.
        """
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups) or any(
            len(s["params"]) != len(g["params"]) for s, g in zip(saved_groups, self.param_groups)
        ):
            raise ValueError(
                "loaded state dict does not match the optimizer's parameter groups "
                f"({[len(g['params']) for g in self.param_groups]} parameters per group)"
            )
        saved_index = {
            id(p): i for g, s in zip(self.param_groups, saved_groups) for p, i in zip(g["params"], s["params"])
        }
        local_state, local_groups, start = {}, [], 0
        for mine, saved in zip(self._owned[self.rank], saved_groups):
            for k, p in enumerate(mine, start):
                if saved_index[id(p)] in state_dict["state"]:
                    local_state[k] = state_dict["state"][saved_index[id(p)]]
            local_groups.append(
                {**{k: v for k, v in saved.items() if k != "params"}, "params": list(range(start, start + len(mine)))}
            )
            start += len(mine)
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        self.state = self.optim.state
        for group, saved in zip(self.param_groups, saved_groups):
            group.update({k: v for k, v in saved.items() if k != "params"})

    def _global_index(self) -> dict[int, int]:
        ordered = [p for group in self.param_groups for p in group["params"]]
        return {id(p): i for i, p in enumerate(ordered)}


def _options(group: dict) -> dict:
    return {k: v for k, v in group.items() if k not in ("params", "param_names")}


def _buckets(owned: list[list[list[Tensor]]]) -> list[list[list[Tensor]]]:
    """``[bucket][rank] -> parameters``: the partition split by dtype and device, one flat
    buffer each, every rank's parameters in group order."""
    buckets: dict = {}
    for rank, groups in enumerate(owned):
        for p in (p for group in groups for p in group):
            per_rank = buckets.setdefault((p.dtype, str(p.device)), [[] for _ in owned])
            per_rank[rank].append(p)
    return list(buckets.values())


class _FlatBucket:
    """The parameters of one dtype and device in one flat buffer, ``[rank][offset]``: each rank's
    run padded to the longest (``length``); each parameter's storage becomes its view of the
    buffer. ``mine`` is this rank's run, ``send`` its copy for the all_gather."""

    def __init__(self, per_rank: list[list[Tensor]], rank: int) -> None:
        some = next(p for params in per_rank for p in params)
        length = max(sum(p.numel() for p in params) for params in per_rank)
        self.flat = tensor.zeros(length * len(per_rank), dtype=some.dtype, device=some.device)
        with tensor.no_grad():
            for r, params in enumerate(per_rank):
                offset = r * length
                for p in params:
                    view = self.flat[offset : offset + p.numel()]
                    view.copy_(p.detach().reshape(-1))
                    p.data = view.view(p.shape)
                    offset += p.numel()
        self.mine = self.flat[rank * length : (rank + 1) * length]
        self.send = tensor.empty(length, dtype=some.dtype, device=some.device)
