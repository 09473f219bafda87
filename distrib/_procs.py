"""The other processes of a job on this machine: whether one still runs, and which machine this is.

Shared by the backends (is a peer rank alive?) and ``distrib.multiprocessing`` (is the sender of a
shared tensor alive?); it imports nothing of ``distrib``.

Note [Zombies are dead]
    A process that has exited but that its parent has not yet waited for is a zombie: its pid
    still exists (``kill(pid, 0)`` succeeds), but it has closed every socket and will never run
    again. Everything here asks "can this process still answer or make progress?", so a zombie
    counts as dead. It matters where the waiting process is the dead one's parent, or shares
    it: a DataLoader's main process receiving a tensor from a worker it has not reaped yet, or
    ranks started by one launcher (or ``mpiexec`` proxy) that is busy elsewhere; with
    ``kill(pid, 0)`` alone they would wait out their whole timeout for it.
"""

from __future__ import annotations

import functools
import os
import socket
import sys

__all__ = ["alive", "host_id"]


def alive(pid: int) -> bool:
    """Whether process ``pid`` is running: it exists and is not a zombie (Note [Zombies are dead]).

    Reads ``/proc/<pid>/stat``; where there is no ``/proc``, falls back to ``kill(pid, 0)``
    (which cannot tell a zombie). Never raises.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def host_id() -> str:
    """This machine, boot and user as one string: processes with equal ids can share memory and
    see each other's pids. Never raises (without a boot id, the host name and user decide).

    ``DISTRIB_HOST_ID``, if set, is the id instead: network namespaces on one machine share the
    boot id and host name, so a job that treats each namespace as a host sets it per namespace
    (``distrib-launch`` sets it per node in multi-node jobs). Under an MPI launcher, once MPI is
    initialised (the mpi backend, or env:// rendezvous through mpi4py), MPI's node is added
    (``_mpi_node``): the first such call is collective over ``MPI_COMM_WORLD``
    (``init_process_group`` makes it on every rank).
    """
    override = os.environ.get("DISTRIB_HOST_ID")
    if override:
        return override
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    machine = f"{socket.gethostname()}/{boot}/{os.getuid()}"
    node = _mpi_node()
    return machine if node is None else f"{machine}/{node}"


def _mpi_node() -> str | None:
    """Under an MPI launcher of several processes whose MPI is initialised: this process's node
    as MPI sees it (``MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)``), named by its lowest
    ``COMM_WORLD`` rank; else None. Collective over ``COMM_WORLD`` the first time it finds MPI
    initialised (then cached). Never imports mpi4py itself (that would initialise MPI) nor raises."""
    from .rendezvous import _MPI_MARKERS  # noqa: PLC0415 - _procs imports nothing of distrib at import

    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not any(name in os.environ for name in _MPI_MARKERS):
        return None
    try:
        if not mpi.Is_initialized() or mpi.Is_finalized() or mpi.COMM_WORLD.Get_size() < 2:
            return None
        return _mpi_shared_node(mpi)
    except Exception:  # noqa: BLE001 - no usable MPI: the machine's id alone
        return None


@functools.cache
def _mpi_shared_node(mpi) -> str:
    """The lowest ``COMM_WORLD`` rank of this process's shared-memory node (collective)."""
    world = mpi.COMM_WORLD
    node = world.Split_type(mpi.COMM_TYPE_SHARED)
    try:
        return f"mpi-node{node.bcast(world.Get_rank(), root=0)}"
    finally:
        node.Free()
