"""Point-to-point ops on Tensors: ``send``/``recv``, ``isend``/``irecv`` and
``batch_isend_irecv``. ``dst``/``src`` are global ranks; ``group_dst``/``group_src`` are
ranks within ``group``; ``src=None`` receives from any rank."""

from __future__ import annotations

from . import process_group as _pg
from ._staging import Staged, resolve_rank
from .work import Work

__all__ = ["send", "recv", "isend", "irecv", "batch_isend_irecv", "P2POp"]


class _P2PWork(Work):
    """A Work over a backend handle that writes staged results back when waited on."""

    def __init__(self, name, inner, staged: Staged | None, pg) -> None:
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


def _setup(op: str, tensor, group, rank, group_rank, what: str):
    """``(group, backend, peer group rank or None for any source, staged tensor)`` for a
    point-to-point ``op``, or None when this rank is not in ``group``.

    Raises:
        ValueError: the peer is this rank.
    """
    pg = _pg.resolve(group, op)
    if pg is None:
        return None
    be = pg.backend_for(tensor)
    peer = None
    if rank is not None or group_rank is not None or what == "dst":
        peer = resolve_rank(pg, rank, group_rank, what, op)
        if peer == pg.rank():
            raise ValueError(f"{op}: {what} must be another rank; this is rank {pg.ranks[peer]}")
    return pg, be, peer, Staged(tensor, be, f"{op}: tensor")


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to ``dst`` without waiting; returns a Work."""
    setup = _setup("isend", tensor, group, dst, group_dst, "dst")
    if setup is None:
        return None
    pg, be, peer, s = setup
    flat = s.flat if s._copy is not None else s.flat.copy() if s.flat.nbytes < (1 << 16) else s.flat
    return _P2PWork("isend", be.isend(flat, peer, int(tag)), None, pg)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from ``src`` (None: any rank) without waiting; returns a Work."""
    setup = _setup("irecv", tensor, group, src, group_src, "src")
    if setup is None:
        return None
    pg, be, peer, s = setup
    return _P2PWork("irecv", be.irecv(s.flat, peer, int(tag)), s, pg)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst``; returns when the data is handed to the transport."""
    setup = _setup("send", tensor, group, dst, group_dst, "dst")
    if setup is None:
        return None
    _, be, peer, s = setup
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
