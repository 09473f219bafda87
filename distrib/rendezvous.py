"""Rendezvous: from an ``init_method`` and the environment to (store, rank, world size).

``env://`` reads MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE. Rank and size also come
from MPI launchers (``OMPI_COMM_WORLD_*``, ``PMI_*``, ``MV2_*``) and SLURM (``SLURM_PROCID``,
``SLURM_NTASKS``), so ``mpirun -n 4 python train.py`` needs no extra flags: without a
MASTER_ADDR, rank 0 starts a store on a free port and mpi4py broadcasts its address.
With ``DISTRIB_USE_AGENT_STORE=1`` the launcher already serves the store at
MASTER_ADDR:MASTER_PORT and no rank binds one.
"""

from __future__ import annotations

import importlib
import os
import re
import socket
import urllib.parse

from .store import FileStore, TCPStore

__all__ = ["rendezvous", "env_rank_and_size", "local_address"]

_RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")
_SIZE_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS")
_LOCAL_SIZE_VARS = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                    "SLURM_NTASKS_PER_NODE")
_MPI_MARKERS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE")


def _first(names) -> tuple[str, str] | None:
    for name in names:
        value = os.environ.get(name)
        if value not in (None, ""):
            return name, value
    return None


def env_rank_and_size(rank: int = -1, world_size: int = -1) -> tuple[int, int]:
    """Fill in ``rank``/``world_size`` (-1 = unknown) from the launcher's environment.

    Raises:
        ValueError: naming the variable that is missing.
    """
    if rank < 0:
        found = _first(_RANK_VARS)
        if found is None:
            raise ValueError("Error initializing distrib using env:// rendezvous: environment variable RANK "
                             "expected, but not set (nor an MPI or SLURM rank variable); pass rank=")
        rank = int(found[1])
    if world_size < 0:
        found = _first(_SIZE_VARS)
        if found is None:
            raise ValueError("Error initializing distrib using env:// rendezvous: environment variable "
                             "WORLD_SIZE expected, but not set (nor an MPI or SLURM size variable); "
                             "pass world_size=")
        world_size = int(found[1])
    if not 0 <= rank < world_size:
        raise ValueError(f"invalid rank {rank} for world size {world_size}: need 0 <= rank < world_size")
    return rank, world_size


def local_address(peer_host: str) -> str:
    """The address of the interface this host uses to reach ``peer_host`` (bind only to it)."""
    override = os.environ.get("DISTRIB_ZMQ_HOST")
    if override:
        return override
    try:
        peer_ip = socket.gethostbyname(peer_host)
    except OSError:
        return "127.0.0.1"
    if peer_ip.startswith("127."):
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((peer_ip, 9))  # UDP: no packet is sent, the kernel just picks a route
            return probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def _slurm_first_host() -> str | None:
    nodelist = os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
    if not nodelist:
        return None
    first = nodelist.split(",")[0] if "[" not in nodelist.split(",")[0] else nodelist
    match = re.match(r"([^\[,]+)(?:\[(\d+)[^\]]*\])?", first)
    return None if match is None else match.group(1) + (match.group(2) or "")


def local_world_size() -> int | None:
    """The number of ranks on this host, as the launcher, MPI or SLURM tells it; None if unknown."""
    found = _first(_LOCAL_SIZE_VARS)
    if found is None:
        return None
    try:
        return int(found[1].split("(")[0])  # SLURM_NTASKS_PER_NODE may read "2(x3)"
    except ValueError:
        return None


def _all_local(world_size: int) -> bool:
    return local_world_size() == world_size


def _mpi_store(rank: int, world_size: int, timeout: float):
    """Under mpirun without MASTER_ADDR: rank 0 serves a store, MPI broadcasts its address."""
    try:
        mpi = importlib.import_module("mpi4py.MPI")
    except ImportError:
        return None
    host = "127.0.0.1" if _all_local(world_size) else socket.gethostbyname(socket.gethostname())
    store = None
    if rank == 0:
        store = TCPStore(host, 0, world_size, True, timeout, wait_for_workers=False)
        address = (host, store.port)
    else:
        address = None
    host, port = mpi.COMM_WORLD.bcast(address, root=0)
    if store is None:
        store = TCPStore(host, port, world_size, False, timeout)
    return store, host


def rendezvous(init_method: str | None, rank: int, world_size: int, timeout: float):
    """Returns ``(store, rank, world_size, bind_host)``; the caller owns the store.

    Raises:
        RuntimeError: ``init_method``'s scheme is not env, tcp or file.
        ValueError: a malformed URL, or rank and world size that cannot be found or do not fit.
    """
    url = urllib.parse.urlparse(init_method or "env://")
    query = dict(urllib.parse.parse_qsl(url.query))
    rank = int(query.get("rank", rank))
    world_size = int(query.get("world_size", world_size))
    if url.scheme == "file":
        rank, world_size = env_rank_and_size(rank, world_size)
        path = urllib.parse.unquote(url.path)
        return FileStore(path, world_size, timeout), rank, world_size, local_address("127.0.0.1")
    if url.scheme == "tcp":
        if not url.hostname or url.port is None:
            raise ValueError(f"init_method {init_method!r}: expected tcp://host:port")
        rank, world_size = env_rank_and_size(rank, world_size)
        host, port = url.hostname, url.port
    elif url.scheme == "env":
        rank, world_size = env_rank_and_size(rank, world_size)
        host = os.environ.get("MASTER_ADDR") or _slurm_first_host()
        port = os.environ.get("MASTER_PORT")
        if host is None or port is None:
            if any(v in os.environ for v in _MPI_MARKERS):
                found = _mpi_store(rank, world_size, timeout)
                if found is not None:
                    return found[0], rank, world_size, local_address(found[1])
            missing = "MASTER_ADDR" if host is None else "MASTER_PORT"
            raise ValueError(f"Error initializing distrib using env:// rendezvous: environment variable "
                             f"{missing} expected, but not set")
        port = int(port)
    else:
        # PyTorch: RuntimeError "No rendezvous handler for foo://"
        raise RuntimeError(f"no rendezvous handler for init_method {init_method!r}: "
                           "use env://, tcp://host:port or file:///path")
    is_master = rank == 0 and os.environ.get("DISTRIB_USE_AGENT_STORE", "0") != "1"
    store = TCPStore(host, port, world_size, is_master, timeout, wait_for_workers=is_master)
    return store, rank, world_size, local_address(host)
