"""Collectives on picklable Python objects: ``broadcast_object_list``, ``all_gather_object``, ...

Objects are pickled by the sender and unpickled by the receivers. The transports admit
only authenticated peers when ``DISTRIB_AUTH_KEY`` is set (see Note [Auth key]), so
nothing from an unknown peer is ever unpickled. Only use these with ranks you trust.
"""

from __future__ import annotations

from . import process_group as _pg
from ._staging import resolve_rank

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
           "send_object_list", "recv_object_list"]


def _run(pg, name, fn):
    box = []
    pg.run(name, lambda b: box.append(fn(b)), async_op=False)
    return box[0]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None) -> None:
    """Replace ``object_list``'s items on every rank with those of rank ``src``."""
    pg = _pg.resolve(group, "broadcast_object_list")
    if pg is None:
        return
    root = resolve_rank(pg, src, group_src, "src", "broadcast_object_list")
    items = _run(pg, "broadcast_object_list",
                 lambda b: b.broadcast_object(list(object_list) if pg.rank() == root else None, root))
    if len(items) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {pg.ranks[root]} sent {len(items)} objects but this "
                         f"rank's object_list has {len(object_list)} slots")
    object_list[:] = items


def all_gather_object(object_list, obj, group=None) -> None:
    """``object_list[r]`` gets rank r's ``obj``."""
    pg = _pg.resolve(group, "all_gather_object")
    if pg is None:
        return
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must have {pg.size()} slots, got {len(object_list)}")
    object_list[:] = _run(pg, "all_gather_object", lambda b: b.all_gather_object(obj))


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """Rank ``dst`` gets every rank's ``obj`` in ``object_gather_list``."""
    pg = _pg.resolve(group, "gather_object")
    if pg is None:
        return
    root = resolve_rank(pg, dst, group_dst, "dst", "gather_object")
    if pg.rank() == root and (object_gather_list is None or len(object_gather_list) != pg.size()):
        raise ValueError(f"gather_object: object_gather_list must have {pg.size()} slots on the destination rank")
    result = _run(pg, "gather_object", lambda b: b.gather_object(obj, root))
    if pg.rank() == root:
        object_gather_list[:] = result


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None) -> None:
    """Rank r gets ``scatter_object_input_list[r]`` (given on ``src``) in ``scatter_object_output_list[0]``."""
    pg = _pg.resolve(group, "scatter_object_list")
    if pg is None:
        return
    root = resolve_rank(pg, src, group_src, "src", "scatter_object_list")
    if pg.rank() == root and (scatter_object_input_list is None or len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"scatter_object_list: scatter_object_input_list must have {pg.size()} items on the "
                         "source rank")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("scatter_object_list: scatter_object_output_list must be a non-empty list")
    items = list(scatter_object_input_list) if pg.rank() == root else None
    scatter_object_output_list[0] = _run(pg, "scatter_object_list", lambda b: b.scatter_object(items, root))


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None) -> None:
    """Send the items of ``object_list`` to rank ``dst``."""
    pg = _pg.resolve(group, "send_object_list")
    if pg is None:
        return
    peer = resolve_rank(pg, dst, group_dst, "dst", "send_object_list")
    pg.backend.send_object(list(object_list), peer, 0)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None) -> int:
    """Fill ``object_list`` with the items sent by ``src`` (None: any rank); returns the sender's rank."""
    pg = _pg.resolve(group, "recv_object_list")
    if pg is None:
        return -1
    peer = None if src is None and group_src is None else resolve_rank(pg, src, group_src, "src",
                                                                      "recv_object_list")
    items, source = pg.backend.recv_object(peer, 0)
    if len(items) != len(object_list):
        raise ValueError(f"recv_object_list: rank {pg.ranks[source]} sent {len(items)} objects but object_list "
                         f"has {len(object_list)} slots")
    object_list[:] = items
    return pg.ranks[source]
