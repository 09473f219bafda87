"""``DistributedDataParallel``: data-parallel training, one process per model replica.

Wrap the model once every rank has joined the process group; then train as usual. Each
rank feeds its own share of the batch; backward averages the gradients over the ranks
(overlapping the all-reduces with the rest of backward, see ``reducer.py``), so every
replica takes the same optimizer step and the replicas stay identical.

    >>> dist.init_process_group("zmq")                                   # doctest: +SKIP
    >>> model = DistributedDataParallel(Net())                           # doctest: +SKIP
    >>> loss_fn(model(x), y).backward(); optimizer.step()                # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import weakref

import tensor
from nn import Module

from .. import collectives
from .. import process_group as _pg
from ..algorithms.join import Join, Joinable, JoinHook
from ..object_collectives import all_gather_object
from ..reduce_op import ReduceOp
from .reducer import DEFAULT_FIRST_BUCKET_BYTES, Reducer

__all__ = ["DistributedDataParallel"]


def _broadcast_coalesced(tensors: list, group, group_src: int) -> None:
    """Broadcast ``tensors`` from group rank ``group_src``: one flat message per dtype and device."""
    by_kind: dict = {}
    for t in tensors:
        by_kind.setdefault((t.dtype, str(t.device)), []).append(t)
    receiver = group.rank() != group_src
    with tensor.no_grad():
        for ts in by_kind.values():
            flat = tensor.cat([t.detach().reshape(-1) for t in ts])
            collectives.broadcast(flat, group=group, group_src=group_src)
            if receiver:
                offset = 0
                for t in ts:
                    t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                    offset += t.numel()


class _DDPJoinHook(JoinHook):
    """What a rank that ran out of inputs does for DDP while the others train (see ``Join``)."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool) -> None:
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        ddp = self.ddp
        if ddp.will_sync_module_buffers():  # shadow the forward's buffer broadcast
            ddp._sync_buffers(ddp._find_common_rank(ddp.process_group.rank(), False))
        ddp.reducer.match_backward_collectives()  # and the backward's bucket all-reduces

    def post_hook(self, is_last_joiner: bool) -> None:
        ddp = self.ddp
        src = ddp._find_common_rank(ddp.process_group.rank(), is_last_joiner)
        _broadcast_coalesced(ddp._params + list(ddp.module.buffers()), ddp.process_group, src)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism over the ranks of ``process_group`` (``torch.nn.parallel.DistributedDataParallel``).

    Args:
        module: the model; the same architecture on every rank.
        device_ids, output_device: for a module on one CUDA device, ``[device]`` (or None);
            must be None for CPU modules.
        dim: the batch dimension (kept for compatibility: each rank feeds its own inputs).
        broadcast_buffers: copy rank 0's buffers (e.g. BatchNorm statistics) to every rank at each forward.
        process_group: the group to average over (default: the world).
        bucket_cap_mb: the size of the gradient buckets after the first (about 1 MiB).
        find_unused_parameters: walk each forward's output graph and do not wait for parameters it
            does not reach. Without it, a parameter that gets no gradient is an error naming it.
        gradient_as_bucket_view: make each ``param.grad`` a view into its bucket (saves a copy and memory).
        static_graph: the set of used parameters never changes: it is found on the first iteration.

    Raises:
        TypeError: ``module`` is not an ``nn.Module``.
        ValueError: bad ``device_ids``/``bucket_cap_mb``, or parameters on several devices.
        RuntimeError: no parameter requires grad, the default group is not initialized, or the
            parameters differ across ranks (the message names the first mismatch).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=25, find_unused_parameters=False,
                 gradient_as_bucket_view=False, static_graph=False) -> None:
        Module.__init__(self)
        Joinable.__init__(self)
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got {type(module).__name__}")
        group = _pg.resolve(process_group, "DistributedDataParallel")
        if group is None:
            raise ValueError("DistributedDataParallel: this rank is not a member of process_group")
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        devices = {str(p.device) for _, p in named}
        if len(devices) > 1:
            raise ValueError("DistributedDataParallel's input module must be on one device, but its parameters "
                             f"are on {sorted(devices)}")
        device = named[0][1].device
        if device.type == "cpu" and (device_ids or output_device is not None):
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with single-device GPU "
                f"modules, but got device_ids {device_ids}, output_device {output_device}, and module parameters "
                f"on {device}. help: leave them None for a CPU module")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError(f"DistributedDataParallel: device_ids must list one device (the module's), "
                             f"got {device_ids}")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be > 0, got {bucket_cap_mb}")

        self.module = module
        self.device_ids, self.output_device, self.dim = device_ids, output_device, dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = group
        self.bucket_bytes_cap = int(bucket_cap_mb * 1024 * 1024)
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._divide_by_initial_world_size = True
        self._params = [p for _, p in named]
        self._param_names = [name for name, _ in named]
        self._device = device

        if group.size() > 1:
            self._verify_params_across_ranks()
            _broadcast_coalesced(self._params + list(module.buffers()), group, 0)
        self.reducer = Reducer(self._params, self._param_names, group,
                               [min(DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap), self.bucket_bytes_cap],
                               gradient_as_bucket_view, find_unused_parameters, static_graph)
        weakref.finalize(self, self.reducer.remove_hooks)

    # ------------------------------------------------------------ construction
    def _verify_params_across_ranks(self) -> None:
        mine = [(name, tuple(p.shape), p.dtype.name) for name, p in zip(self._param_names, self._params)]
        everyone: list = [None] * self.process_group.size()
        all_gather_object(everyone, mine, group=self.process_group)
        reference = everyone[0]
        for rank, theirs in enumerate(everyone[1:], start=1):
            for i, (a, b) in enumerate(zip(reference, theirs)):
                if a[1:] != b[1:]:
                    raise RuntimeError(
                        f"DistributedDataParallel: parameter {i} ({b[0]!r}) has shape {list(b[1])} and dtype "
                        f"{b[2]} on rank {rank}, but rank 0's ({a[0]!r}) has shape {list(a[1])} and dtype "
                        f"{a[2]}. DDP expects the same model on every rank")
            if len(theirs) != len(reference):
                raise RuntimeError(f"DistributedDataParallel: rank {rank} has {len(theirs)} parameters that "
                                   f"require grad, while rank 0 has {len(reference)}. DDP expects the same model "
                                   "on every rank")

    # ------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        """Run the wrapped module; with grad enabled, get ready to reduce the gradients of its backward."""
        grad_sync = tensor.is_grad_enabled() and self.require_backward_grad_sync
        join_work = None
        if grad_sync:
            join_work = Join.notify_join_context(self)
            self.reducer.ensure_prior_reduction_finished()
        if self.will_sync_module_buffers():
            src = self._find_common_rank(self.process_group.rank(), True) if self._join_config.enable else 0
            self._sync_buffers(src)
        output = self.module(*inputs, **kwargs)
        if grad_sync:
            self.reducer.prepare_for_backward(output)
            if join_work is not None and not self._divide_by_initial_world_size:
                self.reducer.set_divisor_work(join_work)
        return output

    def will_sync_module_buffers(self) -> bool:
        """Whether forward broadcasts the buffers (``broadcast_buffers`` and the module has some)."""
        return (self.require_forward_param_sync and self.broadcast_buffers and self.process_group.size() > 1
                and any(True for _ in self.module.buffers()))

    def _sync_buffers(self, src: int) -> None:
        _broadcast_coalesced(list(self.module.buffers()), self.process_group, src)

    def _find_common_rank(self, rank: int, condition: bool) -> int:
        """The highest group rank for which ``condition`` holds (all ranks agree on it)."""
        value = tensor.tensor([rank if condition else -1], dtype=tensor.int64)
        collectives.all_reduce(value, op=ReduceOp.MAX, group=self.process_group)
        found = int(value.item())
        if found < 0:
            raise ValueError("DistributedDataParallel: no rank met the condition (the last joiner)")
        return found

    # ------------------------------------------------------------ user API
    @contextlib.contextmanager
    def no_sync(self):
        """Accumulate gradients locally (no communication) for the backward passes inside; the first
        backward after the block averages the accumulated gradients.

        >>> with ddp.no_sync():                                      # doctest: +SKIP
        ...     ddp(x1).sum().backward()
        >>> ddp(x2).sum().backward()   # all-reduces the sum of both   # doctest: +SKIP
        """
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state, hook) -> None:
        """Reduce each bucket with ``hook(state, bucket) -> Future`` instead of the built-in all-reduce
        (see ``distrib.algorithms.ddp_comm_hooks``). Call it once, before the first backward.

        Raises:
            TypeError: ``hook`` is not callable.
            RuntimeError: a hook is already registered, or training has started.
        """
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        if self.reducer.comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if self.reducer.iteration > 0:
            raise RuntimeError("register_comm_hook must be called before the first backward pass")
        self.reducer.comm_hook = (state, hook)

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """``Join([self], ...)``: the context manager for uneven inputs (see ``distrib.algorithms.Join``)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> JoinHook:
        """The ``JoinHook`` of a rank that ran out of inputs; takes ``divide_by_initial_world_size``."""
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        return self._device

    @property
    def join_process_group(self):
        return self.process_group

    def extra_repr(self) -> str:
        return (f"world_size={self.process_group.size()}, buckets={len(self.reducer.buckets)}, "
                f"find_unused_parameters={self.find_unused_parameters}")
