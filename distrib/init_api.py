"""``init_process_group`` and the queries about the world and its groups."""

from __future__ import annotations

import atexit
import os
from datetime import timedelta

from . import _timeline
from . import process_group as _pg
from .errors import ProcessGroupStateError
from .process_group import GroupMember, ProcessGroup, world
from .rendezvous import rendezvous
from .store import PrefixStore
from .work import _seconds

__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available", "get_rank",
    "get_world_size", "get_backend", "get_group_rank", "get_global_rank", "get_process_group_ranks",
    "default_pg_timeout",
]

default_pg_timeout = timedelta(minutes=30)


def is_available() -> bool:
    """Always True: the zmq backend needs only pyzmq."""
    return True


def is_initialized() -> bool:
    """True between ``init_process_group`` and ``destroy_process_group``."""
    return world.default_pg is not None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the job's default process group.

    Args:
        backend: ``"zmq"`` (CPU), ``"mpi"`` or ``"nccl"``; None means nccl for CUDA tensors and zmq
            for the rest. PyTorch's ``"gloo"`` is served by zmq (``get_backend`` says "gloo").
        init_method: ``env://`` (default), ``tcp://host:port`` or ``file:///path``.
        timeout: how long any collective may wait for the others (default 30 minutes).
        world_size, rank: override the launcher's environment (RANK, WORLD_SIZE, MPI, SLURM).
        store: a Store to rendezvous through instead of ``init_method`` (needs rank and world_size).

    >>> import distrib as dist
    >>> dist.init_process_group("zmq", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    >>> dist.get_rank(), dist.get_world_size()
    (0, 1)
    >>> dist.destroy_process_group()
    """
    if world.default_pg is not None:
        raise ProcessGroupStateError("trying to initialize the default process group twice! "
                                     "help: call destroy_process_group() first")
    if timeout is None:
        env = os.environ.get("DISTRIB_TIMEOUT")
        timeout = float(env) if env else default_pg_timeout
    seconds = _seconds(timeout)
    host = "127.0.0.1"
    if store is not None:
        if init_method is not None:
            raise ValueError("init_process_group: pass init_method or store, not both")
        if rank < 0 or world_size <= 0:
            raise ValueError("init_process_group: with store=, rank and world_size are required")
        owned = None
        host = os.environ.get("DISTRIB_ZMQ_HOST", host)
    else:
        store, rank, world_size, host = rendezvous(init_method, rank, world_size, seconds)
        owned = store
    world.store, world.rank, world.size, world.owned_store = store, rank, world_size, owned
    world.options = {"host": host}
    try:
        world.default_pg = ProcessGroup(backend, list(range(world_size)), rank, PrefixStore("default_pg", store),
                                        seconds, "default_pg", world.options)
        world.hot_all_reduce = world.default_pg.hot_all_reduce
    except BaseException:
        if owned is not None:
            owned.close()
        world.clear()
        raise
    _timeline.start_if_requested(store, rank, world_size)  # DISTRIB_TIMELINE: profile this rank


def destroy_process_group(group=None) -> None:
    """Leave ``group`` (default: every group, and the world)."""
    if group is None or group is world.default_pg:
        for pg in [*world.groups, world.default_pg]:
            if pg is not None:
                pg.shutdown()
        store = world.owned_store
        world.clear()
        if store is not None and hasattr(store, "close"):
            store.close()
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    group.shutdown()
    if group in world.groups:
        world.groups.remove(group)


def _group(group, what):
    """The group a query is about: the world for None, NON_GROUP_MEMBER as is, else a live group."""
    if world.default_pg is None:
        raise ProcessGroupStateError(
            f"{what}: the default process group is not initialized; call init_process_group first")
    if group is None:
        return world.default_pg
    if group is GroupMember.NON_GROUP_MEMBER:
        return group
    return _pg.check_group(group, what)


def _ranks(group, what) -> list[int]:
    """The global ranks of ``group``; for NON_GROUP_MEMBER, those of the latest group this rank
    is not in (what PyTorch answers: the sentinel carries no more)."""
    pg = _group(group, what)
    if pg is not GroupMember.NON_GROUP_MEMBER:
        return pg.ranks
    if world.non_member_ranks is None:
        raise ValueError(f"{what}: this rank is in every group; GroupMember.NON_GROUP_MEMBER names none")
    return world.non_member_ranks


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the world by default); -1 if it is not a member."""
    pg = _group(group, "get_rank")
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.rank()


def get_world_size(group=None) -> int:
    """The number of ranks in ``group`` (the world by default); -1 if this rank is not a member."""
    pg = _group(group, "get_world_size")
    return -1 if pg is GroupMember.NON_GROUP_MEMBER else pg.size()


def get_backend(group=None) -> str:
    """The backend name of ``group``, e.g. ``"zmq"``."""
    pg = _group(group, "get_backend")
    if pg is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("get_backend: this rank is not in the group")
    return pg.name()


def get_process_group_ranks(group) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order.

    Raises:
        ValueError: ``group`` is not a live group.
    """
    return list(_ranks(group, "get_process_group_ranks"))


def get_group_rank(group, global_rank: int) -> int:
    """The rank within ``group`` of the process with ``global_rank``.

    Raises:
        ValueError: ``global_rank`` is not in ``group``, or ``group`` is not a live group.
    """
    ranks = _ranks(group, "get_group_rank")
    if global_rank not in ranks:
        raise ValueError(f"get_group_rank: global rank {global_rank} is not part of group {ranks}")
    return ranks.index(global_rank)


def get_global_rank(group, group_rank: int) -> int:
    """The global rank of the process with ``group_rank`` in ``group``.

    Raises:
        ValueError: ``group_rank`` is out of range, or ``group`` is not a live group.
    """
    ranks = _ranks(group, "get_global_rank")
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"get_global_rank: group rank {group_rank} is out of range for a group of size "
                         f"{len(ranks)}")
    return ranks[group_rank]


@atexit.register
def _cleanup_at_exit() -> None:
    if world.default_pg is not None:
        try:
            destroy_process_group()
        except Exception:  # noqa: BLE001 - the interpreter is going away; never hang or raise here
            pass


new_group = _pg.new_group
