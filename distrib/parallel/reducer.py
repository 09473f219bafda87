"""Gradient buckets for ``DistributedDataParallel``: fill them during backward, reduce them as they fill.

Note [bucketing]
    Parameters go into buckets in *reverse* registration order, because backward produces
    gradients roughly in that order. The first bucket is small (``DEFAULT_FIRST_BUCKET_BYTES``)
    so communication starts early; the rest hold up to ``bucket_cap_mb``. Parameters of
    different dtypes or devices never share a bucket. Each bucket owns one flat buffer,
    allocated once and reused every step, and a view of it shaped like each parameter.

Note [overlap]
    A post-accumulate-grad hook on every parameter fires during backward as soon as that
    parameter's gradient is final. It copies the gradient into its bucket view (unless the
    gradient already *is* that view, with ``gradient_as_bucket_view``) and marks it ready.
    When a bucket is full it is handed to the communication hook, which divides by the world
    size and starts an asynchronous all-reduce while backward goes on (on the group's worker
    thread; on nccl, queued on the group's own stream, Note [NCCL streams]). Buckets are
    launched strictly in bucket order (bucket i+1 waits for bucket i), so every rank issues
    the same collectives in the same order whatever order its hooks fire in. The first hook
    of a backward queues an end-of-backward callback with the autograd engine; it waits for
    every bucket and writes the averaged gradients back.

Note [unused parameters]
    A parameter that takes no part in the loss never fires its hook, so its bucket would
    never fill. With ``find_unused_parameters`` the forward's output graph is walked after
    every forward, and the parameters it does not reach are marked ready (with a zero
    gradient) at the first hook. A map of which parameters each rank used is all-reduced
    too, so a parameter no rank used keeps ``grad=None``, as in a single process. Without
    the flag, the end of backward raises an error naming the parameters that got no gradient.
"""

from __future__ import annotations

import tensor
from autograd import engine
from autograd.graph import Node
from tensor import Tensor
from tensor.profiler import _recorder

from .. import collectives
from ..work import Future

__all__ = ["GradBucket", "Reducer", "DEFAULT_FIRST_BUCKET_BYTES", "assign_buckets"]

DEFAULT_FIRST_BUCKET_BYTES = 1 << 20  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES


class GradBucket:
    """One bucket as a communication hook sees it (``torch.distributed.GradBucket``).

    ``buffer()`` is the flat gradient buffer (already holding this rank's gradients);
    a hook returns a Future whose value is a tensor of the same size with the reduced result.
    """

    def __init__(self, index: int, buffer: Tensor, params: list, views: list, is_last: bool) -> None:
        self._index, self._buffer, self._params, self._views, self._is_last = index, buffer, params, views, is_last

    def index(self) -> int:
        """The bucket's position (0 is the first reduced, holding the last-registered parameters)."""
        return self._index

    def buffer(self) -> Tensor:
        """The flat 1-d buffer of this bucket's gradients."""
        return self._buffer

    def set_buffer(self, buffer: Tensor) -> None:
        """Replace the buffer a later hook in a chain would see."""
        self._buffer = buffer

    def gradients(self) -> list:
        """This bucket's gradients: views of ``buffer()`` shaped like the parameters."""
        return list(self._views)

    def parameters(self) -> list:
        """The parameters whose gradients this bucket holds."""
        return list(self._params)

    def is_last(self) -> bool:
        """True for the last bucket of the step (the first-registered parameters)."""
        return self._is_last


class _Bucket:
    __slots__ = ("index", "indices", "params", "buffer", "views", "pending", "future")

    def __init__(self, index: int, indices: list, params: list, process_group) -> None:
        self.index, self.indices, self.params = index, indices, params
        self.buffer = _bucket_buffer(process_group, sum(p.numel() for p in params), params[0])
        self.views, offset = [], 0
        for p in params:
            self.views.append(self.buffer[offset:offset + p.numel()].view(p.shape))
            offset += p.numel()
        self.pending = len(params)
        self.future = None


def _bucket_buffer(process_group, numel: int, like: Tensor) -> Tensor:
    """A zeroed flat buffer for ``numel`` elements like ``like``; in the memory the backend
    reduces fastest (for zmq on one host, shared memory its peers read directly) when it
    offers such memory for this device. Collective: every rank makes the same buckets."""
    backend = process_group.backend_for(like)
    if like.device.type in backend.device_types and numel:
        raw = backend.alloc_comm_buffer(numel * like.element_size())
        if raw is not None:
            return tensor.from_numpy(raw.view(like.dtype.numpy))
    return tensor.zeros(numel, dtype=like.dtype, device=like.device)


def assign_buckets(params: list, caps: list[int]) -> list[list[int]]:
    """Indices of ``params`` per bucket (see Note [bucketing]). ``caps`` are byte limits: the
    first for each dtype/device's first bucket, the last for all later ones."""
    open_buckets: dict = {}  # (dtype, device) -> [indices, bytes, number of buckets closed]
    buckets = []
    for i in reversed(range(len(params))):
        p = params[i]
        entry = open_buckets.setdefault((p.dtype, str(p.device)), [[], 0, 0])
        entry[0].append(i)
        entry[1] += p.numel() * p.element_size()
        if entry[1] >= caps[min(entry[2], len(caps) - 1)]:
            buckets.append(entry[0])
            entry[:] = [[], 0, entry[2] + 1]
    buckets.extend(entry[0] for entry in open_buckets.values() if entry[0])
    # In the order their gradients become ready: by their latest-registered parameter.
    return sorted(buckets, key=lambda indices: -indices[0])


def _output_tensors(obj, found: list) -> list:
    if isinstance(obj, Tensor):
        found.append(obj)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _output_tensors(item, found)
    elif isinstance(obj, dict):
        for item in obj.values():
            _output_tensors(item, found)
    return found


def reached_leaves(output) -> set:
    """ids of the leaf tensors the autograd graph of ``output`` (tensors, nested in lists,
    tuples and dicts) leads to."""
    leaves, seen, stack = set(), set(), []
    for t in _output_tensors(output, []):
        if t._grad_fn is None:
            leaves.add(id(t))
        else:
            stack.append(t._grad_fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for edge in node.next_edges:
            if edge is not None:
                if type(edge[0]) is Node:
                    stack.append(edge[0])
                else:
                    leaves.add(id(edge[0]))
    return leaves


def _divide_into(source: Tensor, divisor: float, target: Tensor) -> None:
    """``target[...] = source / divisor`` in one pass (``source`` may be ``target`` itself)."""
    xp = target.device.backend.xp
    xp.divide(source._data, divisor, out=target._data)
    target._version_box[0] += 1


def _is_alias(a: Tensor, b: Tensor) -> bool:
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()


class Reducer:
    """Buckets, hooks and the per-iteration state of one ``DistributedDataParallel``."""

    def __init__(self, params: list, names: list[str], process_group, bucket_caps: list[int],
                 gradient_as_bucket_view: bool, find_unused_parameters: bool, static_graph: bool) -> None:
        self.params, self.names, self.pg = params, names, process_group
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.find_unused_parameters = find_unused_parameters
        self.static_graph = static_graph
        self.buckets = [_Bucket(b, idx, [params[i] for i in idx], process_group)
                        for b, idx in enumerate(assign_buckets(params, bucket_caps))]
        self.locate = [None] * len(params)
        for bucket in self.buckets:
            for pos, i in enumerate(bucket.indices):
                self.locate[i] = (bucket, pos)
        self.comm_hook = None  # (state, hook) from register_comm_hook
        self.timeout = process_group.timeout
        self.static_unused: list[int] | None = None
        self.iteration = 0
        self._reset()
        self.expect_hooks = False
        self.handles = [p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(params)]

    def _reset(self) -> None:
        self.ready = [False] * len(self.params)
        self.next_bucket = 0
        for bucket in self.buckets:
            bucket.pending, bucket.future = len(bucket.params), None
        self.unused: list[int] = []
        self.marked_unused = False
        self.require_finalize = False  # a hook fired; finalize must run before the next forward
        self.finalize_when_launched = False
        self.divisor = self.pg.size()
        self.divisor_work = None  # under Join without divide_by_initial_world_size: the count's all-reduce

    def remove_hooks(self) -> None:
        for handle in self.handles:
            handle.remove()

    # ------------------------------------------------------------ forward side
    def ensure_prior_reduction_finished(self) -> None:
        """Raise if the previous backward started reducing but never finished (see Note [unused parameters])."""
        if self.require_finalize:
            missing = [i for i, ready in enumerate(self.ready) if not ready]
            self._drain()
            self._reset()
            raise RuntimeError(self._unused_message(missing))

    def prepare_for_backward(self, output) -> None:
        """Called after a forward that will be followed by a synchronised backward."""
        self._reset()
        self.expect_hooks = True
        if self.find_unused_parameters or (self.static_graph and self.static_unused is None):
            reached = reached_leaves(output)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]
            if self.static_graph and not self.find_unused_parameters:
                self.static_unused = self.unused
        elif self.static_unused:
            self.unused = self.static_unused

    def set_divisor_work(self, work) -> None:
        """Divide by the number of ranks that have not joined: the value of ``work``, the all-reduce
        ``Join.notify_join_context`` started."""
        self.divisor_work = work

    # ------------------------------------------------------------ backward side
    def _make_hook(self, index: int):
        def hook(param):
            if not self.expect_hooks:  # no_sync(), or a backward without a DDP forward: stay local
                return
            if not self.require_finalize:
                self.require_finalize = True
                try:
                    engine.queue_callback(self.finalize)
                except RuntimeError:  # backward(inputs=...) accumulates outside the engine's pass
                    self.finalize_when_launched = True
                if self.unused and not self.marked_unused:
                    self.marked_unused = True
                    for i in self.unused:
                        self._mark_ready(i, unused=True)
            self._mark_ready(index)
        return hook

    def _mark_ready(self, index: int, unused: bool = False) -> None:
        if self.ready[index]:
            raise RuntimeError(
                f"DistributedDataParallel: parameter {self.names[index]!r} (index {index}) was marked ready "
                "twice in one iteration: it got a gradient from two backward passes after one forward, or is "
                "used in a reentrant backward. help: run forward again before each backward, or accumulate "
                "inside no_sync()")
        self.ready[index] = True
        bucket, pos = self.locate[index]
        view, param = bucket.views[pos], self.params[index]
        with tensor.no_grad():
            if unused:
                view.zero_()
            elif self.comm_hook is None and self.divisor_work is None:
                # The default hook averages: divide while copying in, one pass instead of three.
                source = param.grad if not _is_alias(param.grad, view) else view
                _divide_into(source, float(self.divisor), view)
                if self.gradient_as_bucket_view:
                    param.grad = view
            elif not _is_alias(param.grad, view):
                view.copy_(param.grad)
                if self.gradient_as_bucket_view:
                    param.grad = view
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready_buckets()

    def _launch_ready_buckets(self) -> None:
        buckets = self.buckets
        while self.next_bucket < len(buckets) and buckets[self.next_bucket].pending == 0:
            bucket = buckets[self.next_bucket]
            self.next_bucket += 1
            launch = self._run_comm_hook
            if _recorder.current is not None:  # tensor.profiler: the bucket's launch as one event
                launch = _recorder.current.wrap(launch, f"DDP bucket {bucket.index}", "ddp",
                                                {"bucket": bucket.index, "bytes": bucket.buffer.nbytes})
            bucket.future = launch(bucket)
        if self.next_bucket == len(buckets) and self.finalize_when_launched:
            self.finalize()

    def _run_comm_hook(self, bucket: _Bucket) -> Future:
        grad_bucket = GradBucket(bucket.index, bucket.buffer, bucket.params, bucket.views,
                                 bucket.index == len(self.buckets) - 1)
        if self.comm_hook is not None:
            state, hook = self.comm_hook
            future = hook(state, grad_bucket)
            if not isinstance(future, Future):
                raise TypeError(f"DistributedDataParallel: the communication hook {hook!r} must return a "
                                f"distrib Future (e.g. work.get_future()), got {type(future).__name__}")
            return future
        if self.divisor_work is not None:  # under Join: the divisor is known only now
            work, self.divisor_work = self.divisor_work, None
            work.wait(self.timeout)
            self.divisor = max(1, int(work.result()[0].item()))
            with tensor.no_grad():
                bucket.buffer.div_(float(self.divisor))  # a float divisor takes the fast path
        # Otherwise _mark_ready divided each gradient as it copied it into the bucket.
        return collectives.all_reduce(bucket.buffer, group=self.pg, async_op=True).get_future()

    def _wait(self, future: Future):
        """``future``'s value. A completed one needs no timeout: on nccl a bucket's future is
        complete once its all-reduce is queued, and waiting orders the current stream after it
        without blocking the host (Note [NCCL streams] in backends/nccl_backend.py)."""
        return future.wait() if future.done() else future.wait(self.timeout)

    def _drain(self) -> list:
        """Wait for every launched bucket; their results (the first error is raised after all waited)."""
        results, error = [], None
        for bucket in self.buckets[:self.next_bucket]:
            try:
                value = self._wait(bucket.future)
                results.append(value[0] if isinstance(value, list) else value)
            except Exception as exc:  # noqa: BLE001 - re-raised below once every bucket is accounted for
                error = error or exc
        if error is not None:
            raise error
        return results

    def finalize(self) -> None:
        """End of backward: wait for every bucket and write the averaged gradients."""
        if not self.require_finalize:
            return
        self.expect_hooks = False
        missing = [i for i, ready in enumerate(self.ready) if not ready]
        try:
            results = self._drain()
        except BaseException:
            self._reset()
            raise
        if missing:
            self._reset()
            raise RuntimeError(self._unused_message(missing))
        globally_unused = set(self._globally_unused())
        with tensor.no_grad():
            for bucket, result in zip(self.buckets, results):
                if not isinstance(result, Tensor) or result.numel() != bucket.buffer.numel():
                    got = tuple(result.shape) if isinstance(result, Tensor) else type(result).__name__
                    raise RuntimeError(f"DistributedDataParallel: the communication hook's Future for bucket "
                                       f"{bucket.index} must hold a tensor of {bucket.buffer.numel()} elements, "
                                       f"got {got}")
                if not _is_alias(result, bucket.buffer):
                    bucket.buffer.copy_(result.reshape(-1))
                for pos, i in enumerate(bucket.indices):
                    if i not in globally_unused:
                        self._write_grad(self.params[i], bucket.views[pos])
        self._reset()
        self.iteration += 1

    def _write_grad(self, param, view: Tensor) -> None:
        grad = param.grad
        if self.gradient_as_bucket_view:
            if grad is None or not _is_alias(grad, view):
                param.grad = view
        elif grad is None:
            param.grad = view.clone()
        else:
            grad.copy_(view)

    def _globally_unused(self) -> list[int]:
        if not self.find_unused_parameters:  # static graph: the same parameters are unused everywhere
            return self.unused
        used = tensor.ones(len(self.params), dtype=tensor.int32)
        if self.unused:
            used[tensor.tensor(self.unused)] = 0
        collectives.all_reduce(used, group=self.pg)
        return [i for i, count in enumerate(used.tolist()) if count == 0]

    def _unused_message(self, missing: list[int]) -> str:
        names = ", ".join(self.names[i] for i in missing)
        return (
            "DistributedDataParallel: expected to have finished reduction in the prior iteration before starting "
            "a new one. Your module has parameters that were not used in producing the loss. Parameters which "
            f"did not receive grad for rank {self.pg.rank()}: {names} (indices "
            f"{' '.join(map(str, missing))}). help: pass find_unused_parameters=True to DistributedDataParallel, "
            "and make sure every output of forward takes part in computing the loss")

    # ------------------------------------------------------------ join
    def match_backward_collectives(self) -> None:
        """For a rank that has joined (no more inputs): issue the all-reduces a backward would, with zeros."""
        futures = []
        for bucket in self.buckets:
            # The bucket itself, zeroed: the peers reduce their buckets, and a backend may reduce
            # tensors in its own comm buffers differently from others (Note [Shared buffers]).
            zeros = bucket.buffer
            with tensor.no_grad():
                zeros.zero_()
            if self.comm_hook is not None:
                state, hook = self.comm_hook
                futures.append(hook(state, GradBucket(bucket.index, zeros, bucket.params, [],
                                                      bucket.index == len(self.buckets) - 1)))
            else:
                futures.append(collectives.all_reduce(zeros, group=self.pg, async_op=True).get_future())
        for future in futures:
            self._wait(future)
        if self.find_unused_parameters:
            collectives.all_reduce(tensor.zeros(len(self.params), dtype=tensor.int32), group=self.pg)
