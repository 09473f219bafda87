"""The collective API on Tensors: ``dist.all_reduce(t)`` and friends (point to point is in
``p2p.py``).

Each function checks its arguments, turns tensors into contiguous arrays the backend
accepts (staging through host memory when the backend cannot read the tensor's
device, copying non-contiguous tensors), and runs the backend primitive as the
group's next op. Outputs are written into the tensors' storage in place and their
version counters are bumped, so autograd sees the modification. ``src``/``dst`` are
global ranks; ``group_src``/``group_dst`` are ranks within ``group``.
"""

from __future__ import annotations

import numpy as np

from tensor import Tensor
from tensor.profiler import _recorder

from . import process_group as _pg
from ._staging import (
    Staged,
    check_len,
    check_list,
    check_root_list,
    debug_sig,
    empty_flat,
    in_place_array,
    resolve_rank,
    unstack,
)
from .errors import CollectiveArgumentError, DistError
from .process_group import world as _world
from .reduce_op import ReduceOp, check_op
from .work import _seconds

__all__ = [
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "barrier",
    "monitored_barrier",
]


# ---------------------------------------------------------------- collectives
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the group; every rank gets the result, in place.

    >>> t = tensor.full((2,), float(dist.get_rank())); dist.all_reduce(t)   # doctest: +SKIP
    """
    if group is None and not async_op and isinstance(tensor, Tensor):
        # The backend's hot path, inline: every Python frame here costs about 4% of a 4 KB
        # all_reduce (Note [Hot all_reduce] in backends/base.py).
        hot = _world.hot_all_reduce
        if hot is not None and _recorder.current is None:  # profiled: the path below records it
            x, executor = tensor._data, hot.executor
            last_array, last_op, spec, op_arg = hot.last
            if x is not last_array or op is not last_op:
                spec, op_arg = hot.lookup(x, op)
            if spec is not None and not (executor.active or executor.queue):  # else async ops go first
                hot.started = seq = executor.seq + 1
                executor.seq = seq
                try:
                    hot.reduce(hot.in_place, spec, op_arg)
                except Exception as exc:
                    raise hot.fail(exc, seq) from None
                hot.finished = seq
                tensor._version_box[0] += 1
                return None
    pg = _pg.resolve(group, "all_reduce")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    flat = in_place_array(tensor, be) if not async_op and not pg._debug and isinstance(tensor, Tensor) else None
    if flat is not None:  # in place, in this thread: no staging, no closures
        pg.run_sync("all_reduce", be, be.all_reduce, flat, check_op(op, flat.dtype))
        tensor._version_box[0] += 1
        return None
    s = Staged(tensor, be, "all_reduce: tensor")
    op = check_op(op, s.flat.dtype)

    def body(b):
        b.all_reduce(s.flat, op)
        s.written()

    return pg.run("all_reduce", body, backend=be, async_op=async_op, result=[tensor],
                  signature=debug_sig(tensor, op=op.name))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` from rank ``src`` to every rank of the group, in place."""
    pg = _pg.resolve(group, "broadcast")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = resolve_rank(pg, src, group_src, "src", "broadcast")
    s = Staged(tensor, be, "broadcast: tensor")

    def body(b):
        b.broadcast(s.flat, root)
        if pg.rank() != root:
            s.written()

    return pg.run("broadcast", body, backend=be, async_op=async_op, result=[tensor],
                  signature=debug_sig(tensor, src=root))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across the group into rank ``dst``'s tensor (others are unchanged)."""
    pg = _pg.resolve(group, "reduce")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = resolve_rank(pg, dst, group_dst, "dst", "reduce")
    s = Staged(tensor, be, "reduce: tensor")
    op = check_op(op, s.flat.dtype)

    def body(b):
        b.reduce(s.flat, root, op)
        if pg.rank() == root:
            s.written()

    return pg.run("reduce", body, backend=be, async_op=async_op, result=[tensor],
                  signature=debug_sig(tensor, dst=root, op=op.name))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` gets rank r's ``tensor``."""
    pg = _pg.resolve(group, "all_gather")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    s = Staged(tensor, be, "all_gather: tensor")
    check_list("all_gather", "tensor_list", tensor_list, tensor, pg.size())
    outs = [Staged(t, be, "all_gather: tensor_list entry") for t in tensor_list]
    flat = empty_flat(s, s.flat.size * pg.size())

    def body(b):
        b.all_gather(flat, s.flat)
        unstack(flat, outs)

    return pg.run("all_gather", body, backend=be, async_op=async_op, result=list(tensor_list),
                  signature=debug_sig(tensor))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's ``input_tensor`` into ``output_tensor`` (concatenated or stacked on dim 0)."""
    pg = _pg.resolve(group, "all_gather_into_tensor")
    if pg is None:
        return None
    be = pg.backend_for(input_tensor)
    s = Staged(input_tensor, be, "all_gather_into_tensor: input_tensor")
    o = Staged(output_tensor, be, "all_gather_into_tensor: output_tensor")
    if o.flat.size != s.flat.size * pg.size() or o.flat.dtype != s.flat.dtype:
        raise CollectiveArgumentError(f"all_gather_into_tensor: output_tensor must hold world_size ({pg.size()}) x "
                         f"{s.flat.size} elements of {input_tensor.dtype.name}, got shape "
                         f"{tuple(output_tensor.shape)} of {output_tensor.dtype.name}")

    def body(b):
        b.all_gather(o.flat, s.flat)
        o.written()

    return pg.run("all_gather_into_tensor", body, backend=be, async_op=async_op, result=[output_tensor],
                  signature=debug_sig(input_tensor))


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Rank ``dst`` gets every rank's ``tensor`` in ``gather_list``."""
    pg = _pg.resolve(group, "gather")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = resolve_rank(pg, dst, group_dst, "dst", "gather")
    s = Staged(tensor, be, "gather: tensor")
    is_root = pg.rank() == root
    check_root_list("gather", "gather_list", gather_list, tensor, pg, is_root, "destination")
    outs = [Staged(t, be, "gather: gather_list entry") for t in gather_list] if is_root else []
    flat = empty_flat(s, s.flat.size * pg.size()) if is_root else None

    def body(b):
        b.gather(flat, s.flat, root)
        if is_root:
            unstack(flat, outs)

    return pg.run("gather", body, backend=be, async_op=async_op, result=list(gather_list or []),
                  signature=debug_sig(tensor, dst=root))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank r gets ``scatter_list[r]`` from rank ``src`` into ``tensor``."""
    pg = _pg.resolve(group, "scatter")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = resolve_rank(pg, src, group_src, "src", "scatter")
    o = Staged(tensor, be, "scatter: tensor")
    is_root = pg.rank() == root
    check_root_list("scatter", "scatter_list", scatter_list, tensor, pg, is_root, "source")
    flat = np.concatenate([Staged(t, be, "scatter: scatter_list entry").flat for t in scatter_list]) \
        if is_root else None

    def body(b):
        b.scatter(o.flat, flat, root)
        o.written()

    return pg.run("scatter", body, backend=be, async_op=async_op, result=[tensor],
                  signature=debug_sig(tensor, src=root))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank r gets the reduction of every rank's ``input_list[r]``."""
    pg = _pg.resolve(group, "reduce_scatter")
    if pg is None:
        return None
    be = pg.backend_for(output)
    check_list("reduce_scatter", "input_list", input_list, output, pg.size())
    o = Staged(output, be, "reduce_scatter: output")
    op = check_op(op, o.flat.dtype)
    flat = np.concatenate([Staged(t, be, "reduce_scatter: input").flat for t in input_list])

    def body(b):
        b.reduce_scatter(o.flat, flat, op)
        o.written()

    return pg.run("reduce_scatter", body, backend=be, async_op=async_op, result=[output],
                  signature=debug_sig(output, op=op.name))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (world_size blocks along dim 0) across ranks; rank r gets block r in ``output``."""
    pg = _pg.resolve(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    be = pg.backend_for(output)
    o = Staged(output, be, "reduce_scatter_tensor: output")
    s = Staged(input, be, "reduce_scatter_tensor: input")
    if s.flat.size != o.flat.size * pg.size() or s.flat.dtype != o.flat.dtype:
        raise CollectiveArgumentError(
            f"reduce_scatter_tensor: input must hold world_size ({pg.size()}) x {o.flat.size} "
            f"elements of {output.dtype.name}, got shape {tuple(input.shape)} of {input.dtype.name}")
    op = check_op(op, o.flat.dtype)

    def body(b):
        b.reduce_scatter(o.flat, s.flat, op)
        o.written()

    return pg.run("reduce_scatter_tensor", body, backend=be, async_op=async_op, result=[output],
                  signature=debug_sig(input, op=op.name))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r sends ``input_tensor_list[j]`` to rank j, which receives it in ``output_tensor_list[r]``."""
    pg = _pg.resolve(group, "all_to_all")
    if pg is None:
        return None
    be = pg.backend_for(input_tensor_list[0] if input_tensor_list else None)
    check_len("all_to_all", "output_tensor_list", output_tensor_list, pg.size())
    check_len("all_to_all", "input_tensor_list", input_tensor_list, pg.size())
    outs = [Staged(t, be, "all_to_all: output entry") for t in output_tensor_list]
    ins = [Staged(t, be, "all_to_all: input entry") for t in input_tensor_list]
    dtypes = {o.flat.dtype for o in outs + ins}
    if len(dtypes) != 1:
        raise CollectiveArgumentError(
            f"all_to_all: all tensors must have one dtype, got {sorted(str(d) for d in dtypes)}")
    flat_in = np.concatenate([i.flat for i in ins])
    flat_out = np.empty(sum(o.flat.size for o in outs), dtype=flat_in.dtype)
    in_counts, out_counts = [i.flat.size for i in ins], [o.flat.size for o in outs]

    def body(b):
        b.all_to_all(flat_out, flat_in, out_counts, in_counts)
        unstack(flat_out, outs)

    return pg.run("all_to_all", body, backend=be, async_op=async_op, result=list(output_tensor_list),
                  signature={"dtype": str(flat_in.dtype)})


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """Split ``input`` along dim 0 (evenly, or by ``input_split_sizes``) and exchange the pieces."""
    pg = _pg.resolve(group, "all_to_all_single")
    if pg is None:
        return None
    be = pg.backend_for(input)
    n = pg.size()
    o = Staged(output, be, "all_to_all_single: output")
    s = Staged(input, be, "all_to_all_single: input")

    def counts(t, splits, what):
        rows = t.shape[0] if t.ndim else 1
        per_row = t.numel() // rows if rows else 0
        if splits is None:
            if rows % n:
                raise CollectiveArgumentError(
                    f"all_to_all_single: {what} dim 0 ({rows}) is not divisible by the group size "
                    f"{n}; pass {what}_split_sizes")
            return [rows // n * per_row] * n
        splits = list(splits)
        if len(splits) != n or sum(splits) != rows:
            raise CollectiveArgumentError(
                f"all_to_all_single: {what}_split_sizes {splits} must have {n} entries summing "
                f"to {what}.shape[0] = {rows}")
        return [k * per_row for k in splits]

    in_counts, out_counts = counts(input, input_split_sizes, "input"), counts(output, output_split_sizes, "output")
    if output.dtype != input.dtype:
        raise CollectiveArgumentError(
            f"all_to_all_single: output is {output.dtype.name} but input is {input.dtype.name}")
    me = pg.rank()
    if out_counts[me] != in_counts[me]:  # the piece a rank sends itself: the one size checkable here
        raise CollectiveArgumentError(
            f"all_to_all_single: this rank (group rank {me}) sends itself {in_counts[me]} elements "
            f"of input but has room for {out_counts[me]} in output; check the split sizes and shapes")

    def body(b):
        b.all_to_all(o.flat, s.flat, out_counts, in_counts)
        o.written()

    return pg.run("all_to_all_single", body, backend=be, async_op=async_op, result=[output],
                  signature={"dtype": input.dtype.name})


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reaches the barrier."""
    pg = _pg.resolve(group, "barrier")
    if pg is None:
        return None
    be = pg.backend_for(None)
    return pg.run("barrier", lambda b: b.barrier(), backend=be, async_op=async_op, result=[])


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier through the store that names the ranks that did not arrive within ``timeout``.

    Rank 0 of the group collects the others; with ``wait_all_ranks`` it reports every
    missing rank, otherwise the first one. All ranks raise DistError on failure.
    """
    pg = _pg.resolve(group, "monitored_barrier")
    if pg is None:
        return None
    seq, me, store = pg.next_seq(), pg.rank(), pg.store
    seconds = pg.timeout if timeout is None else _seconds(timeout)
    store.set(f"mb/{seq}/{me}", "1")
    if me == 0:
        missing = []
        for r in range(1, pg.size()):
            try:
                store.wait([f"mb/{seq}/{r}"], 0 if missing else seconds)
            except DistError:
                missing.append(r)
                if not wait_all_ranks:
                    break
        if missing:
            store.set(f"mb/{seq}/done", f"fail:{missing}")
            raise DistError(f"monitored_barrier (op seq {seq}): rank(s) {missing} failed to pass "
                            f"monitored_barrier within {seconds:g} s")
        store.set(f"mb/{seq}/done", "ok")
        return None
    try:
        outcome = store.get(f"mb/{seq}/done") if store.check([f"mb/{seq}/done"]) else None
        if outcome is None:
            store.wait([f"mb/{seq}/done"], seconds + 5)
            outcome = store.get(f"mb/{seq}/done")
    except DistError as exc:
        raise DistError(f"monitored_barrier (op seq {seq}): rank 0 did not report within {seconds:g} s") from exc
    if outcome != b"ok":
        raise DistError(f"monitored_barrier (op seq {seq}): rank(s) {outcome.decode()[5:]} failed to pass "
                        f"monitored_barrier within {seconds:g} s")
    return None
