"""``fully_shard``: FSDP2's per-parameter sharding of a module (a "unit").

Note [FSDP unit lifecycle]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Each parameter of a unit is flattened, padded to a multiple of the world size and cut into
equal pieces; rank r keeps piece r as the module's registered ``Parameter`` (1-D), so
``parameters()``, the optimizers of ``nn.optim`` and ``state_dict`` see only this rank's shard.

* Before the unit's forward (a forward pre-hook) one all_gather of all the unit's shards, laid
  out rank by rank, rebuilds every full parameter, as the outputs of one autograd Function
  (``_Unshard``) whose inputs are the shards; the module runs with those full tensors in place of
  its shards (its ``_parameters`` entries are swapped for the duration of the forward).
* After the forward (a forward hook) the shards are put back; with ``reshard_after_forward`` the
  full tensors' arrays are dropped (the tensors stay, as the backward graph saved them), and a
  hook on the unit's outputs gathers them again when backward reaches the unit, as FSDP frees
  and re-allocates the storage of its unsharded parameters.
* ``_Unshard``'s backward runs after every op that read the full parameters (the engine runs a
  node after all its consumers): one reduce_scatter of the gradients (laid out as the all_gather)
  gives each rank the sum of its shard's gradients, divided by the world size as DDP averages,
  and the full arrays are dropped.
* Prefetching: a unit starts the asynchronous all_gather of another unit when its own forward
  (or backward) starts, so that communication overlaps its compute; a gather whose shards
  changed before it was used (an optimizer step) is dropped and done again. Implicitly (as
  FSDP2) the units under one root (the first unit whose forward runs; it finds the others at
  that forward) record the order their forwards start and end in: from the second forward on,
  each unit prefetches the unit that started after it in the previous forward, and in backward
  each unit prefetches the unit whose forward ended before its own in this forward (the next
  to run backward). ``set_modules_to_forward_prefetch``/``set_modules_to_backward_prefetch``
  (FSDP2's explicit prefetching) replace the implicit choice of a unit. Two units' full
  parameters are then alive at once (the computing one and the prefetched one), as in PyTorch.
* CPU offload (``offload_policy=CPUOffloadPolicy()``): the shards, their gradients and so the
  optimizer's state and step live on the CPU (pinned when a GPU is present and ``pin_memory``);
  the unit's original device computes: each gather copies the local shards there first, and
  the reduce-scattered gradients are copied back to the CPU.
* HSDP (``mesh=(replicate_group, shard_group)``): the pieces are cut within the shard group and
  the same pieces live on each replica; after the reduce_scatter, one all_reduce over the
  replicate group adds the replicas' pieces, and the average divides by both groups' sizes.
* With gradient sync off (``set_requires_gradient_sync(False)``, FSDP's ``no_sync``) the full
  gradients are summed locally instead and go into the next synchronised reduce_scatter.

Peak memory per rank is therefore the shards (1/N of parameters, gradients and optimizer
state) plus the full parameters and gradients of the units being computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import tensor
from autograd import Function
from autograd.graph import save_by_reference
from nn import Module, Parameter
from tensor import Tensor

from ..collectives import all_gather_into_tensor, all_reduce, reduce_scatter_tensor
from ..data._pin_memory import pin_memory
from ..device_mesh import as_process_groups
from ..init_api import get_rank, get_world_size

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy"]


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """FSDP2's mixed precision: the unit computes with its full parameters in ``param_dtype``
    (the shards, gradients and optimizer state stay in the parameters' own dtype), reduces
    gradients in ``reduce_dtype`` (default ``param_dtype``), casts its floating-point outputs
    to ``output_dtype`` and, with ``cast_forward_inputs``, its floating-point inputs to
    ``param_dtype``. None keeps the dtype as it is."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass(frozen=True)
class OffloadPolicy:
    """FSDP2's base offload policy: no offloading (the shards stay on the unit's device)."""


@dataclass(frozen=True)
class CPUOffloadPolicy(OffloadPolicy):
    """Keep the shards and their gradients on the CPU, so that the optimizer steps there; the
    unit still computes on its own device (Note [FSDP unit lifecycle]). ``pin_memory`` pins the
    shards (when a GPU is present; a no-op otherwise) for faster copies to the device."""

    pin_memory: bool = True


class _Shards:
    """A unit's parameters: where each lives, its full shape, and its piece of the flat layout."""

    def __init__(
        self, entries: list[tuple[Module, str, Parameter]], world: int, rank: int, offload: OffloadPolicy
    ) -> None:
        self.slots = [(owner, name) for owner, name, _ in entries]
        self.shapes = [p.shape for _, _, p in entries]
        self.numels = [p.numel() for _, _, p in entries]
        self.lengths = [-(-n // world) for n in self.numels]  # each rank's piece, padded
        self.offsets = [sum(self.lengths[:i]) for i in range(len(entries))]
        self.total = sum(self.lengths)
        self.world, self.rank = world, rank
        self.dtype = entries[0][2].dtype if entries else None
        self.device = entries[0][2].device if entries else None  # where the unit computes
        self.offload = isinstance(offload, CPUOffloadPolicy)
        self.pin = self.offload and offload.pin_memory

    def to_shard_device(self, t: Tensor) -> Tensor:
        """``t`` where the shards live: on the CPU (pinned if asked) when offloading, else as it is."""
        if not self.offload:
            return t
        return pin_memory(t.to("cpu")) if self.pin else t.to("cpu")

    def split(self, full: Tensor, i: int) -> Tensor:
        """Rank ``self.rank``'s piece of parameter ``i`` (a copy, padded with zeros), where the shards live."""
        flat = full.detach().reshape(-1)
        padded = tensor.zeros(self.lengths[i] * self.world, dtype=flat.dtype, device=flat.device)
        padded[: self.numels[i]] = flat
        return self.to_shard_device(padded[self.rank * self.lengths[i] : (self.rank + 1) * self.lengths[i]].clone())

    def start_gather(self, shards: list[Tensor], group, async_op: bool = True) -> tuple:
        """Start the all_gather of every rank's shards on the unit's device: (work, its output, its input)."""
        local = tensor.cat([s.detach() for s in shards]).to(self.device)
        out = tensor.empty(self.total * self.world, dtype=self.dtype, device=self.device)
        return all_gather_into_tensor(out, local, group=group, async_op=async_op), out, local

    def gather(self, shards: list[Tensor], group) -> list[Tensor]:
        """The full parameters from every rank's shards: one all_gather, in this thread.

        Not through ``start_gather``'s asynchronous op unless prefetching: that stages more
        memory (the FULL_SHARD memory test's peak went from 1.06x to 1.10x of its bound on 2
        ranks, 1.08x to 1.14x on 3, when every gather was asynchronous)."""
        _, out, _ = self.start_gather(shards, group, async_op=False)
        return self.unpack(out)

    def unpack(self, out: Tensor) -> list[Tensor]:
        """The full parameters from an all_gather's output."""
        rows = out.reshape(self.world, self.total)
        # Copies, not views: a view would keep the whole gathered buffer alive until backward.
        return [
            rows[:, off : off + length].reshape(-1)[:n].reshape(shape).clone()
            for off, length, n, shape in zip(self.offsets, self.lengths, self.numels, self.shapes)
        ]

    def reduce_scatter(self, grads: list[Tensor | None], group, dtype, replicate_group=None) -> list[Tensor]:
        """This rank's pieces of the gradients summed over ranks, in ``dtype``: one reduce_scatter
        (and one all_reduce over ``replicate_group``, the ranks that hold the same pieces)."""
        rows = tensor.zeros(self.world, self.total, dtype=dtype, device=self.device)
        for g, off, length, n in zip(grads, self.offsets, self.lengths, self.numels):
            if g is None:
                continue
            flat = g.reshape(-1)
            for r in range(self.world):  # rank r's piece, straight from the gradient (no padded copy)
                piece = flat[r * length : min((r + 1) * length, n)]
                rows[r, off : off + piece.shape[0]] = piece
        out = tensor.empty(self.total, dtype=dtype, device=self.device)
        reduce_scatter_tensor(out, rows.reshape(-1), group=group)
        if replicate_group is not None:  # HSDP: the replicas of this piece add theirs
            all_reduce(out, group=replicate_group)
        return [out[off : off + length] for off, length in zip(self.offsets, self.lengths)]


class _UnitState:
    """What one ``fully_shard`` unit keeps between its hooks."""

    def __init__(
        self,
        module: Module,
        group,
        reshard_after_forward: bool,
        mp_policy: MixedPrecisionPolicy,
        offload_policy: OffloadPolicy,
    ) -> None:
        self.replicate_group, group = group if isinstance(group, tuple) else (None, group)
        self.module, self.group, self.mp_policy = module, group, mp_policy
        self.ranks = get_world_size(group) * (  # what the gradients are averaged over
            1 if self.replicate_group is None else get_world_size(self.replicate_group)
        )
        self.reshard_after_forward = reshard_after_forward
        self.requires_gradient_sync = True
        self.shards = _Shards(_managed(module), get_world_size(group), get_rank(group), offload_policy)
        self.full: list[Tensor] | None = None  # the full parameters of the current forward
        self.resharded = True
        self.pending_grads: list[Tensor | None] | None = None  # summed while sync is off
        self.in_forward: list[Parameter] = []  # the shards, while the full parameters stand in
        self.prefetched: tuple | None = None  # (work, output, input, shard versions) of a started gather
        self.schedule: _Schedule | None = None  # set by the root's first forward
        self.forward_prefetch: list[_UnitState] | None = None  # explicit lists; None: implicit
        self.backward_prefetch: list[_UnitState] | None = None
        self.implicit_forward_prefetch = True
        self.implicit_backward_prefetch: str | None = "pre"  # "pre", "post" (FSDP1's BackwardPrefetch) or None
        for (owner, name), i in zip(self.shards.slots, range(len(self.shards.slots))):
            param = owner._parameters[name]
            owner._parameters[name] = Parameter(self.shards.split(param, i), param.requires_grad)

    def sharded_params(self) -> list[Parameter]:
        return [owner._parameters[name] for owner, name in self.shards.slots]

    def unshard(self) -> None:
        """Gather the full parameters (for a forward)."""
        self.full = list(_Unshard.apply(self, *self.sharded_params()))
        for full in self.full:  # reshard() swaps their arrays: graphs must not keep the old ones
            save_by_reference(full)
        self.resharded = False

    def regather(self) -> None:
        """Give the full parameters of the last forward their values again (for its backward),
        then start the gathers of the units to prefetch for backward."""
        if self.resharded and self.full is not None:
            with tensor.no_grad():
                for full, values in zip(self.full, self.gathered()):
                    full._data = values._data
            self.resharded = False
        self.prefetch_for_backward("pre")

    def prefetch_for_forward(self) -> None:
        """Start the gathers of the units whose forward comes next: the explicit list, else the
        unit that started after this one in the last whole forward."""
        targets = self.forward_prefetch
        if targets is None:
            follower = self.schedule.forward_next.get(self) if self.implicit_forward_prefetch else None
            targets = [] if follower is None else [follower]
        for unit in targets:
            unit.prefetch()

    def prefetch_for_backward(self, when: str) -> None:
        """Start the gathers of the units whose backward comes next, ``when`` this unit's backward
        starts ("pre") or its gradients are computed ("post"): the explicit list (at "pre"),
        else the unit whose forward ended before this one's (at the time the policy says)."""
        targets = self.backward_prefetch if when == "pre" else None
        if self.backward_prefetch is None and self.implicit_backward_prefetch == when:
            follower = self.schedule.backward_next.get(self)
            targets = None if follower is None else [follower]
        for unit in targets or []:
            if unit.resharded and unit.full is not None:
                unit.prefetch()

    def prefetch(self) -> None:
        """Start gathering the full parameters now, for a forward or backward soon after
        (Note [FSDP unit lifecycle])."""
        if self.prefetched is None:
            params = self.sharded_params()
            self.prefetched = (*self.shards.start_gather(params, self.group), [p._version for p in params])

    def gathered(self) -> list[Tensor]:
        """The full parameters: from the prefetched gather if the shards have not changed since
        it started (an optimizer step in between makes it stale), else gathered now."""
        pending, self.prefetched = self.prefetched, None
        full = None
        if pending is not None:
            work, out, _, versions = pending
            work.wait()
            if versions == [p._version for p in self.sharded_params()]:
                full = self.shards.unpack(out)
        if full is None:
            full = self.shards.gather(self.sharded_params(), self.group)
        dtype = self.mp_policy.param_dtype
        return full if dtype is None else [t.to(dtype) for t in full]

    def reshard(self) -> None:
        """Drop the full parameters' arrays (the tensors stay; see Note [FSDP unit lifecycle])."""
        if self.full is not None and not self.resharded:
            for full in self.full:
                full._data = tensor.empty(0, dtype=full.dtype, device=full.device)._data
            self.resharded = True

    def swap_in(self) -> None:
        """Put the full parameters in the module's place of its shards (for the forward)."""
        self.in_forward = self.sharded_params()
        for (owner, name), full in zip(self.shards.slots, self.full):
            owner._parameters[name] = full

    def swap_out(self) -> None:
        """Put the shards back."""
        for (owner, name), shard in zip(self.shards.slots, self.in_forward):
            owner._parameters[name] = shard
        self.in_forward = []


class _Unshard(Function):
    """The full parameters from the shards (all_gather); their gradients back to the shards
    (reduce_scatter, averaged over the ranks)."""

    @staticmethod
    def forward(ctx, state: _UnitState, *shards: Tensor):
        ctx.state = state
        ctx.set_materialize_grads(False)
        return tuple(state.gathered())

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        state.prefetch_for_backward("post")
        grads = list(grads)
        if state.pending_grads is not None:
            grads = [p if g is None else g if p is None else g + p for g, p in zip(grads, state.pending_grads)]
        state.reshard()
        if not state.requires_gradient_sync:
            state.pending_grads = grads
            return (None,) * (len(grads) + 1)
        state.pending_grads = None
        policy, shard_dtype = state.mp_policy, state.shards.dtype
        dtype = policy.reduce_dtype or policy.param_dtype or shard_dtype
        grads = [None if g is None else g.to(dtype) for g in grads]
        pieces = state.shards.reduce_scatter(grads, state.group, dtype, state.replicate_group)
        return (None, *[state.shards.to_shard_device((piece / state.ranks).to(shard_dtype)) for piece in pieces])


def _successors(units: list[_UnitState]) -> dict[_UnitState, _UnitState]:
    """Each unit's follower in ``units`` (after its first occurrence)."""
    found: dict[_UnitState, _UnitState] = {}
    for unit, follower in zip(units, units[1:]):
        if follower is not unit:
            found.setdefault(unit, follower)
    return found


class _Schedule:
    """The units under one root (the first unit whose forward ran) and the order of their
    forwards, for implicit prefetching (Note [FSDP unit lifecycle])."""

    def __init__(self, root: _UnitState) -> None:
        self.root = root
        self.running = False
        self.started: list[_UnitState] = []  # the running forward's units, as their forwards start
        self.ended: list[_UnitState] = []  # ... and end
        self.forward_next: dict[_UnitState, _UnitState] = {}  # from the last whole forward
        self.backward_next: dict[_UnitState, _UnitState] = {}

    def forward_started(self, state: _UnitState) -> None:
        if state is self.root:
            self.running, self.started, self.ended = True, [], []
        if self.running:
            self.started.append(state)

    def forward_ended(self, state: _UnitState) -> None:
        if not self.running:
            return
        self.ended.append(state)
        if state is self.root:
            self.running = False
            self.forward_next = _successors(self.started)
            self.backward_next = _successors(self.ended[::-1])


def _managed(module: Module) -> list[tuple[Module, str, Parameter]]:
    """``(owner, name, parameter)`` for the parameters of ``module`` and its descendants that no
    nested unit manages, each parameter once."""
    found, seen, stack = [], set(), [module]
    while stack:
        owner = stack.pop()
        for name, param in owner._parameters.items():
            if param is not None and id(param) not in seen:
                seen.add(id(param))
                found.append((owner, name, param))
        stack.extend(reversed([c for c in owner.children() if not isinstance(c, FSDPModule)]))
    return found


def _pre_forward(module: Module, args: tuple) -> tuple | None:
    state = module._fsdp_state
    if state.schedule is None:  # the root's first forward: it schedules every unit under it
        schedule = _Schedule(state)
        for unit in module.modules():
            if isinstance(unit, FSDPModule):
                unit._fsdp_state.schedule = schedule
    state.schedule.forward_started(state)
    if state.shards.slots:  # a unit without parameters of its own (a root over units) only schedules
        state.unshard()
        state.swap_in()
    state.prefetch_for_forward()
    policy = state.mp_policy
    if policy.param_dtype is not None and policy.cast_forward_inputs:
        return _cast_floats(args, policy.param_dtype)
    return None


def _cast_floats(value: Any, dtype) -> Any:
    """``value`` with its floating-point tensors (in tuples, lists, dicts) cast to ``dtype``."""
    if isinstance(value, Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast_floats(item, dtype) for item in value)
    if isinstance(value, dict):
        return {k: _cast_floats(v, dtype) for k, v in value.items()}
    return value


def _post_forward(module: Module, args: tuple, output: Any) -> None:
    state = module._fsdp_state
    state.schedule.forward_ended(state)
    state.swap_out()
    if not tensor.is_grad_enabled():
        state.reshard()
        output_dtype = state.mp_policy.output_dtype
        return None if output_dtype is None else _cast_floats(output, output_dtype)
    if state.reshard_after_forward:
        state.reshard()
    for out in _tensors(output):
        if out.requires_grad:
            out.register_hook(lambda grad: state.regather())
    if state.mp_policy.output_dtype is not None:
        return _cast_floats(output, state.mp_policy.output_dtype)
    return None


def _tensors(output: Any) -> list[Tensor]:
    if isinstance(output, Tensor):
        return [output]
    if isinstance(output, (tuple, list)):
        return [t for item in output for t in _tensors(item)]
    if isinstance(output, dict):
        return [t for item in output.values() for t in _tensors(item)]
    return []


class FSDPModule:
    """Mixed into a module's class by ``fully_shard`` (as FSDP2's ``FSDPModule``)."""

    def set_requires_gradient_sync(self, requires_gradient_sync: bool) -> None:
        """With False, backward sums the full gradients locally instead of reduce-scattering them
        (gradient accumulation); the next backward with True reduce-scatters the sum."""
        self._fsdp_state.requires_gradient_sync = requires_gradient_sync

    def reshard(self) -> None:
        """Drop this unit's full parameters (after a forward without backward, for example)."""
        self._fsdp_state.reshard()

    def set_modules_to_forward_prefetch(self, modules: list[FSDPModule]) -> None:
        """Start gathering ``modules``' parameters as soon as this unit's forward starts (list the
        units that run next, so that their all_gather overlaps this unit's compute), instead of
        the implicit choice (Note [FSDP unit lifecycle])."""
        self._fsdp_state.forward_prefetch = [m._fsdp_state for m in modules]

    def set_modules_to_backward_prefetch(self, modules: list[FSDPModule]) -> None:
        """Start gathering ``modules``' parameters again as soon as backward reaches this unit
        (list the units whose backward comes next, i.e. those that ran before this one), instead
        of the implicit choice."""
        self._fsdp_state.backward_prefetch = [m._fsdp_state for m in modules]


_FSDP_CLASSES: dict[type, type] = {}


def fully_shard(
    module: Module,
    *,
    mesh=None,
    reshard_after_forward: bool = True,
    mp_policy: MixedPrecisionPolicy | None = None,
    offload_policy: OffloadPolicy | None = None,
) -> Module:
    """Shard ``module``'s parameters (those not in a nested ``fully_shard`` unit) over the ranks of
    ``mesh`` (a process group or a 1-d ``DeviceMesh``, the world by default; or, for HSDP,
    ``(replicate_group, shard_group)`` or a 2-d ``(replicate, shard)`` ``DeviceMesh``: sharded
    within the shard group, replicated across the replicate group) and gather them around its forward and
    backward (Note [FSDP unit lifecycle]), in the dtypes of ``mp_policy`` (a
    ``MixedPrecisionPolicy``), the shards on the CPU with ``offload_policy=CPUOffloadPolicy()``.
    Apply it to the blocks first, then to the root; build the optimizer afterwards, on
    ``module.parameters()`` (this rank's shards). Returns ``module``, whose class becomes a
    subclass of ``FSDPModule``.

    Raises:
        TypeError: if ``offload_policy`` is not an ``OffloadPolicy``.
        ValueError: if ``module`` is already sharded, or its parameters differ in dtype or device.
    """
    if offload_policy is not None and not isinstance(offload_policy, OffloadPolicy):
        raise TypeError(f"fully_shard: offload_policy must be an OffloadPolicy, got {offload_policy!r}")
    if isinstance(module, FSDPModule):
        raise ValueError(f"fully_shard: {type(module).__name__} is already sharded")
    kinds = {(p.dtype, str(p.device)) for _, _, p in _managed(module)}
    if len(kinds) > 1:
        raise ValueError(f"fully_shard: the parameters of one unit must share a dtype and device, got {kinds}")
    state = _UnitState(
        module, as_process_groups(mesh), reshard_after_forward, mp_policy or MixedPrecisionPolicy(),
        offload_policy or OffloadPolicy(),
    )
    object.__setattr__(module, "_fsdp_state", state)
    cls = type(module)
    if cls not in _FSDP_CLASSES:
        _FSDP_CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    module.__class__ = _FSDP_CLASSES[cls]
    module.register_forward_pre_hook(_pre_forward)
    module.register_forward_hook(_post_forward)
    return module
