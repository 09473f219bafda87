"""The collective and point-to-point API on Tensors: ``dist.all_reduce(t)`` and friends.

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
from tensor import _backend as array_backend

from . import process_group as _pg
from .errors import DistError
from .process_group import world as _world
from .reduce_op import ReduceOp, check_op
from .work import Work, _seconds

__all__ = [
    "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "gather", "scatter",
    "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "barrier",
    "monitored_barrier", "send", "recv", "isend", "irecv", "batch_isend_irecv", "P2POp",
]


# ---------------------------------------------------------------- staging
def _in_place(t: Tensor, backend):
    """``t``'s storage as a flat array ``backend`` can use directly, or None if it must be
    staged (a device the backend cannot read, or a non-contiguous tensor)."""
    arr = t._data
    if t._device.type in backend.device_types and arr.flags.c_contiguous:
        return arr if arr.ndim == 1 else arr.reshape(-1)
    return None


class _Staged:
    """A contiguous flat array the backend can use for ``t``, and the write-back of results."""

    __slots__ = ("t", "flat", "_copy")

    def __init__(self, t: Tensor, backend, what: str) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must be a Tensor, got {type(t).__name__}")
        self.t = t
        self._copy = None
        self.flat = _in_place(t, backend)
        if self.flat is not None:
            return
        arr = t._data
        if t.device.type not in backend.device_types:  # e.g. a CUDA tensor on the zmq backend
            # to_numpy synchronises the device before the host copy is made
            self._copy = np.ascontiguousarray(array_backend.backend_for_array(arr)[0].to_numpy(arr))
        else:
            self._copy = arr.copy()  # C order
        self.flat = self._copy.reshape(-1)

    def written(self) -> None:
        """Copy results back into the tensor if staged, and bump its version counter."""
        if self._copy is not None:
            arr = self.t._data
            if isinstance(arr, np.ndarray):
                arr[...] = self._copy
            else:
                arr[...] = array_backend.move(self._copy, array_backend.backend_for_array(arr)[0],
                                              array_backend.backend_for_array(arr)[1])
        self.t._version_box[0] += 1


def _group_rank(pg, rank, group_rank, what: str, op: str) -> int:
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{op}: pass {what} or group_{what}, not both")
        r = int(group_rank)
    else:
        r = 0 if rank is None else int(rank)
        if r not in pg.ranks:
            raise ValueError(f"{op}: {what}={r} is not a member of the group (global ranks {pg.ranks})")
        r = pg.ranks.index(r)
    if not 0 <= r < pg.size():
        raise ValueError(f"{op}: group_{what}={r} is out of range for a group of size {pg.size()}")
    return r


def _sig(t: Tensor, **extra) -> dict:
    return {"shape": tuple(t.shape), "dtype": t.dtype.name, **extra}


def _check_list(op: str, name: str, tensors, like: Tensor, size: int) -> None:
    """``tensors`` holds one Tensor per rank (``size``), each with the dtype and element count of ``like``."""
    _check_len(op, name, tensors, size)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name}[{i}] must be a Tensor, got {type(t).__name__}")
        if t.dtype != like.dtype or t.numel() != like.numel():
            raise ValueError(f"{op}: {name}[{i}] has shape {tuple(t.shape)} and dtype {t.dtype.name}; "
                             f"expected {like.numel()} elements of {like.dtype.name}")


def _check_len(op: str, name: str, tensors, size: int) -> None:
    if tensors is None or len(tensors) != size:
        got = "None" if tensors is None else f"{len(tensors)} entries"
        raise ValueError(f"{op}: {name} must hold one tensor per rank of the group ({size}), got {got}")


def _check_root_list(op: str, name: str, tensors, like: Tensor, pg, is_root: bool, root_role: str) -> None:
    """``tensors`` is a valid per-rank list (see ``_check_list``) on the root rank and not given elsewhere."""
    if is_root:
        _check_list(op, name, tensors, like, pg.size())
    elif tensors:
        raise ValueError(f"{op}: {name} must be given on the {root_role} rank only")


def _empty_flat(like: _Staged, count: int):
    return like.flat.__class__((count,), dtype=like.flat.dtype) if not isinstance(like.flat, np.ndarray) \
        else np.empty(count, dtype=like.flat.dtype)


def _unstack(flat, outs: list[_Staged]) -> None:
    pos = 0
    for o in outs:
        n = o.flat.size
        o.flat[...] = flat[pos: pos + n]
        pos += n
        o.written()


# ---------------------------------------------------------------- collectives
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the group; every rank gets the result, in place.

    >>> t = tensor.full((2,), float(dist.get_rank())); dist.all_reduce(t)   # doctest: +SKIP
    """
    if group is None and not async_op and isinstance(tensor, Tensor):
        # The backend's hot path, inline: every Python frame here costs about 4% of a 4 KB
        # all_reduce (Note [Hot all_reduce] in backends/base.py).
        hot = _world.hot_all_reduce
        if hot is not None:
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
    flat = _in_place(tensor, be) if not async_op and not pg._debug and isinstance(tensor, Tensor) else None
    if flat is not None:  # the hot path: no staging, no closures
        pg.run_sync("all_reduce", be, be.all_reduce, flat, check_op(op, flat.dtype))
        tensor._version_box[0] += 1
        return None
    s = _Staged(tensor, be, "all_reduce: tensor")
    op = check_op(op, s.flat.dtype)

    def body(b):
        b.all_reduce(s.flat, op)
        s.written()

    return pg.run("all_reduce", body, backend=be, async_op=async_op, result=[tensor],
                  signature=_sig(tensor, op=op.name))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` from rank ``src`` to every rank of the group, in place."""
    pg = _pg.resolve(group, "broadcast")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = _group_rank(pg, src, group_src, "src", "broadcast")
    s = _Staged(tensor, be, "broadcast: tensor")

    def body(b):
        b.broadcast(s.flat, root)
        if pg.rank() != root:
            s.written()

    return pg.run("broadcast", body, backend=be, async_op=async_op, result=[tensor], signature=_sig(tensor, src=root))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across the group into rank ``dst``'s tensor (others are unchanged)."""
    pg = _pg.resolve(group, "reduce")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = _group_rank(pg, dst, group_dst, "dst", "reduce")
    s = _Staged(tensor, be, "reduce: tensor")
    op = check_op(op, s.flat.dtype)

    def body(b):
        b.reduce(s.flat, root, op)
        if pg.rank() == root:
            s.written()

    return pg.run("reduce", body, backend=be, async_op=async_op, result=[tensor],
                  signature=_sig(tensor, dst=root, op=op.name))


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` gets rank r's ``tensor``."""
    pg = _pg.resolve(group, "all_gather")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    _check_list("all_gather", "tensor_list", tensor_list, tensor, pg.size())
    s = _Staged(tensor, be, "all_gather: tensor")
    outs = [_Staged(t, be, "all_gather: tensor_list entry") for t in tensor_list]
    flat = _empty_flat(s, s.flat.size * pg.size())

    def body(b):
        b.all_gather(flat, s.flat)
        _unstack(flat, outs)

    return pg.run("all_gather", body, backend=be, async_op=async_op, result=list(tensor_list), signature=_sig(tensor))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's ``input_tensor`` into ``output_tensor`` (concatenated or stacked on dim 0)."""
    pg = _pg.resolve(group, "all_gather_into_tensor")
    if pg is None:
        return None
    be = pg.backend_for(input_tensor)
    s = _Staged(input_tensor, be, "all_gather_into_tensor: input_tensor")
    o = _Staged(output_tensor, be, "all_gather_into_tensor: output_tensor")
    if o.flat.size != s.flat.size * pg.size() or o.flat.dtype != s.flat.dtype:
        raise ValueError(f"all_gather_into_tensor: output_tensor must hold world_size ({pg.size()}) x "
                         f"{s.flat.size} elements of {input_tensor.dtype.name}, got shape "
                         f"{tuple(output_tensor.shape)} of {output_tensor.dtype.name}")

    def body(b):
        b.all_gather(o.flat, s.flat)
        o.written()

    return pg.run("all_gather_into_tensor", body, backend=be, async_op=async_op, result=[output_tensor],
                  signature=_sig(input_tensor))


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Rank ``dst`` gets every rank's ``tensor`` in ``gather_list``."""
    pg = _pg.resolve(group, "gather")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = _group_rank(pg, dst, group_dst, "dst", "gather")
    s = _Staged(tensor, be, "gather: tensor")
    is_root = pg.rank() == root
    _check_root_list("gather", "gather_list", gather_list, tensor, pg, is_root, "destination")
    outs = [_Staged(t, be, "gather: gather_list entry") for t in gather_list] if is_root else []
    flat = _empty_flat(s, s.flat.size * pg.size()) if is_root else None

    def body(b):
        b.gather(flat, s.flat, root)
        if is_root:
            _unstack(flat, outs)

    return pg.run("gather", body, backend=be, async_op=async_op, result=list(gather_list or []),
                  signature=_sig(tensor, dst=root))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Rank r gets ``scatter_list[r]`` from rank ``src`` into ``tensor``."""
    pg = _pg.resolve(group, "scatter")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    root = _group_rank(pg, src, group_src, "src", "scatter")
    o = _Staged(tensor, be, "scatter: tensor")
    is_root = pg.rank() == root
    _check_root_list("scatter", "scatter_list", scatter_list, tensor, pg, is_root, "source")
    flat = np.concatenate([_Staged(t, be, "scatter: scatter_list entry").flat for t in scatter_list]) \
        if is_root else None

    def body(b):
        b.scatter(o.flat, flat, root)
        o.written()

    return pg.run("scatter", body, backend=be, async_op=async_op, result=[tensor], signature=_sig(tensor, src=root))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank r gets the reduction of every rank's ``input_list[r]``."""
    pg = _pg.resolve(group, "reduce_scatter")
    if pg is None:
        return None
    be = pg.backend_for(output)
    _check_list("reduce_scatter", "input_list", input_list, output, pg.size())
    o = _Staged(output, be, "reduce_scatter: output")
    op = check_op(op, o.flat.dtype)
    flat = np.concatenate([_Staged(t, be, "reduce_scatter: input").flat for t in input_list])

    def body(b):
        b.reduce_scatter(o.flat, flat, op)
        o.written()

    return pg.run("reduce_scatter", body, backend=be, async_op=async_op, result=[output],
                  signature=_sig(output, op=op.name))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (world_size blocks along dim 0) across ranks; rank r gets block r in ``output``."""
    pg = _pg.resolve(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    be = pg.backend_for(output)
    o = _Staged(output, be, "reduce_scatter_tensor: output")
    s = _Staged(input, be, "reduce_scatter_tensor: input")
    if s.flat.size != o.flat.size * pg.size() or s.flat.dtype != o.flat.dtype:
        raise ValueError(f"reduce_scatter_tensor: input must hold world_size ({pg.size()}) x {o.flat.size} "
                         f"elements of {output.dtype.name}, got shape {tuple(input.shape)} of {input.dtype.name}")
    op = check_op(op, o.flat.dtype)

    def body(b):
        b.reduce_scatter(o.flat, s.flat, op)
        o.written()

    return pg.run("reduce_scatter_tensor", body, backend=be, async_op=async_op, result=[output],
                  signature=_sig(input, op=op.name))


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r sends ``input_tensor_list[j]`` to rank j, which receives it in ``output_tensor_list[r]``."""
    pg = _pg.resolve(group, "all_to_all")
    if pg is None:
        return None
    be = pg.backend_for(input_tensor_list[0] if input_tensor_list else None)
    _check_len("all_to_all", "output_tensor_list", output_tensor_list, pg.size())
    _check_len("all_to_all", "input_tensor_list", input_tensor_list, pg.size())
    outs = [_Staged(t, be, "all_to_all: output entry") for t in output_tensor_list]
    ins = [_Staged(t, be, "all_to_all: input entry") for t in input_tensor_list]
    dtypes = {o.flat.dtype for o in outs + ins}
    if len(dtypes) != 1:
        raise ValueError(f"all_to_all: all tensors must have one dtype, got {sorted(str(d) for d in dtypes)}")
    flat_in = np.concatenate([i.flat for i in ins])
    flat_out = np.empty(sum(o.flat.size for o in outs), dtype=flat_in.dtype)
    in_counts, out_counts = [i.flat.size for i in ins], [o.flat.size for o in outs]

    def body(b):
        b.all_to_all(flat_out, flat_in, out_counts, in_counts)
        _unstack(flat_out, outs)

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
    o = _Staged(output, be, "all_to_all_single: output")
    s = _Staged(input, be, "all_to_all_single: input")

    def counts(t, splits, what):
        rows = t.shape[0] if t.ndim else 1
        per_row = t.numel() // rows if rows else 0
        if splits is None:
            if rows % n:
                raise ValueError(f"all_to_all_single: {what} dim 0 ({rows}) is not divisible by the group size "
                                 f"{n}; pass {what}_split_sizes")
            return [rows // n * per_row] * n
        splits = list(splits)
        if len(splits) != n or sum(splits) != rows:
            raise ValueError(f"all_to_all_single: {what}_split_sizes {splits} must have {n} entries summing "
                             f"to {what}.shape[0] = {rows}")
        return [k * per_row for k in splits]

    in_counts, out_counts = counts(input, input_split_sizes, "input"), counts(output, output_split_sizes, "output")
    if output.dtype != input.dtype:
        raise ValueError(f"all_to_all_single: output is {output.dtype.name} but input is {input.dtype.name}")
    me = pg.rank()
    if out_counts[me] != in_counts[me]:  # the piece a rank sends itself: the one size checkable here
        raise ValueError(f"all_to_all_single: this rank (group rank {me}) sends itself {in_counts[me]} elements "
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


# ---------------------------------------------------------------- point to point
class _P2PWork(Work):
    """A Work over a backend handle that writes staged results back when waited on."""

    def __init__(self, name, inner, staged: _Staged | None, pg) -> None:
        super().__init__(name)
        self._inner, self._staged, self._pg = inner, staged, pg
        self._done_local = False

    def wait(self, timeout=None):
        if not self._done_local:
            self._inner.wait(timeout)
            src = self._inner._result
            self._result = None if src is None else self._pg.ranks[src]
            if self._staged is not None:
                self._staged.written()
            self._done_local = True
            self._complete()
        return True

    def is_completed(self) -> bool:
        return self._done_local or self._inner.is_completed()

    def exception(self):
        return self._inner.exception()

    def source_rank(self) -> int:
        """The global rank a finished irecv received from."""
        self.wait()
        return self._result


def _peer(pg, rank, group_rank, what, op):
    r = _group_rank(pg, rank, group_rank, what, op)
    if r == pg.rank():
        raise ValueError(f"{op}: {what} must be another rank; this is rank {pg.ranks[r]}")
    return r


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to ``dst`` without waiting; returns a Work."""
    pg = _pg.resolve(group, "isend")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    peer = _peer(pg, dst, group_dst, "dst", "isend")
    s = _Staged(tensor, be, "isend: tensor")
    flat = s.flat if s._copy is not None else s.flat.copy() if s.flat.nbytes < (1 << 16) else s.flat
    return _P2PWork("isend", be.isend(flat, peer, int(tag)), None, pg)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from ``src`` (None: any rank) without waiting; returns a Work."""
    pg = _pg.resolve(group, "irecv")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    peer = None if src is None and group_src is None else _peer(pg, src, group_src, "src", "irecv")
    s = _Staged(tensor, be, "irecv: tensor")
    return _P2PWork("irecv", be.irecv(s.flat, peer, int(tag)), s, pg)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst``; returns when the data is handed to the transport."""
    pg = _pg.resolve(group, "send")
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    peer = _peer(pg, dst, group_dst, "dst", "send")
    s = _Staged(tensor, be, "send: tensor")
    be.send(s.flat, peer, int(tag))
    return None


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from ``src`` (None: any rank); returns the sender's global rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._result


class P2POp:
    """One entry of ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None) -> None:
        if op not in (isend, irecv):
            raise ValueError("P2POp: op must be distrib.isend or distrib.irecv")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, \
            group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every send and receive of the list; returns their Works (wait on each)."""
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("batch_isend_irecv: expected a non-empty list of P2POp")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, group_dst=p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, group_src=p.group_peer))
    return works

