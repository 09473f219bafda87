"""Same-host collectives through shared memory: where the zmq backend beats gloo and MPI.

Note [Shared-memory collectives]
    Every rank maps one segment per group: a 4 KiB header (its progress flag and the op
    it is in) and two data slots. A collective walks the tensor in blocks of
    one slot. For all_reduce, each rank copies the parts of the block that its peers
    own into its slot, then (after a barrier) reduces *its* part by reading the peers'
    slots directly, writes the result into its own slot and tensor, and (after a second
    barrier) copies the other parts' results out of the peers' slots. Each byte crosses
    memory about three times, there is no socket in the way, and the reduction order is
    rank order, so every rank gets bitwise the same result. Two ranks instead both copy
    the whole block in and both reduce all of it (in rank order): about the same memory
    traffic, one barrier per block instead of two, and a rank may fill block k+1 while
    its peer still reduces block k, which matters on a loaded machine where every
    barrier a rank blocks in costs a scheduler wake-up.

    Barriers are flags: a rank stores a phase number in its header, pokes its peers'
    wake-up FIFOs, then waits until every peer's flag reaches it (a short spin, then a
    blocking wait on its own FIFO; the deadline and the peers' liveness are checked
    every 50 ms while waiting). Slots alternate block by block, so a
    rank may refill a slot only after a later barrier proved the peers finished reading
    it: no trailing barrier is needed. Stores of the data precede the store of the flag
    and x86 keeps stores in order (TSO); that is the memory model this relies on.

    Segments live in /dev/shm (``DISTRIB_SHM_DIR`` overrides it, as for shared tensors; rank
    0's choice holds for the group) with mode 0600 and are unlinked as soon as every rank has
    mapped them, so a crash cannot leak them.

Note [Slot size]
    Slots are 256 KiB when the ranks on this host (the group's, or the launcher's
    ``LOCAL_WORLD_SIZE`` or MPI's or SLURM's count if larger) fit the CPUs
    (``_usable_cpus``), else 2 MiB.
    A small block is still in the CPU caches when the peer reads it: with 2 ranks on 2
    CPUs, 64 MB all_reduce took 5.8-8.8 ms with 256 KiB slots against 12.3-13.6 ms with
    2 MiB, and 4 MB all_gather and reduce_scatter 25-45% less. But every block costs a
    barrier, and when ranks outnumber CPUs a barrier waits for a descheduled peer: 3 ranks
    on 2 CPUs took twice as long with 256 KiB. Rank 0 decides and tells the others through
    the store (every rank must cut tensors into the same blocks);
    ``DISTRIB_SHM_SLOT_BYTES`` overrides.

Note [Shared buffers]
    ``alloc_buffer`` (the backend's ``alloc_comm_buffer``, which DDP uses for its gradient
    buckets) hands out more such segments, mapped by every rank. An all_reduce of a view of
    one needs no slots: after a barrier, rank r reduces part r of every rank's view (in rank
    order) and writes the result into every rank's part r; after a second barrier each view
    holds the whole result. Each byte is read and written once per rank, half the traffic of
    the slot scheme. A part is reduced and copied out in 256 KiB blocks, so the copies read
    the result from cache (25 MB: 1.25-1.3 ms unblocked, 0.6-0.9 ms blocked). Ranks must
    agree on which scheme they use (all pass views of shared buffers, at the same offsets,
    or none do); every all_reduce's first barrier checks that, through a per-phase record
    of what each rank does there (``_barrier_agreeing``).
"""

from __future__ import annotations

import mmap
import os
import secrets
import select
import time

import numpy as np

from tensor import _shared

from .. import reduce_op
from ..rendezvous import local_world_size
from .base import size_mismatch_reason

__all__ = ["ShmGroup", "setup"]

_HEADER = 4096
_MIN_BCAST_BLOCK = 256 << 10  # bytes; smaller blocks cost more in barriers than they overlap
_SMALL_SLOT, _LARGE_SLOT = 256 << 10, 2 << 20  # bytes per slot (Note [Slot size])
_SHARED_BLOCK = 256 << 10  # bytes reduced, then copied to the peers, while still in cache
_SLOTS, _SHARED = 1, 2  # how an all_reduce moves data (checked at its first barrier)
_SPINS = int(os.environ.get("DISTRIB_SHM_SPINS", 300))  # ~20-40 us of polling before blocking


def _usable_cpus() -> int:
    """The CPUs this process may run on: its affinity, capped by a cgroup (v2) CPU quota."""
    cpus = len(os.sched_getaffinity(0))
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return cpus


def setup(store, rank: int, size: int, slot_bytes: int | None = None):
    """Create and map the segments of a group (collective over ``store``); None if unusable
    anywhere. ``slot_bytes`` None: chosen by rank 0 (Note [Slot size])."""
    if slot_bytes is None:
        if rank == 0:
            # The launcher's (or MPI's, SLURM's) count includes the ranks of other groups.
            ranks_here = max(size, local_world_size() or 0)
            store.set("shm/slot", str(_SMALL_SLOT if ranks_here <= _usable_cpus() else _LARGE_SLOT))
        slot_bytes = int(store.get("shm/slot"))
    slot_bytes = max(4096, slot_bytes // 4096 * 4096)
    mapped = _exchange_segments(store, "shm", rank, size, _HEADER + 2 * slot_bytes, wake_fifo=True)
    if mapped is None:
        return None
    maps, wake_r, wake_w = mapped
    return ShmGroup(maps, rank, size, slot_bytes, wake_r, wake_w)


def _exchange_segments(store, key: str, rank: int, size: int, total: int, wake_fifo: bool):
    """Create this rank's segment of ``total`` bytes (and its wake-up FIFO) and map every
    peer's, collectively over ``store`` under ``key``: ``(maps, wake_r, wake_w)``, the maps
    indexed by rank, or None (on every rank) if any rank could not."""
    if rank == 0:
        store.set(f"{key}/dir", _shared.SHM_DIR)
        store.set(f"{key}/token", secrets.token_hex(8))
    shm_dir = store.get(f"{key}/dir").decode()
    token = store.get(f"{key}/token").decode()
    path = os.path.join(shm_dir, f"distrib-{token}-{rank}")
    fifo = path + ".wake" if wake_fifo else None
    mm, wake_r, reason = None, None, ""
    try:
        stat = os.statvfs(shm_dir)
        if stat.f_bavail * stat.f_frsize < 2 * total:
            raise OSError(f"only {stat.f_bavail * stat.f_frsize} bytes free in {shm_dir}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, total)
            mm = mmap.mmap(fd, total)
        finally:
            os.close(fd)
        np.frombuffer(mm, np.uint8)[:] = 0  # fault the pages in now, not in the first collective
        if fifo:
            os.mkfifo(fifo, 0o600)
            wake_r = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # RDWR: opening never blocks
    except OSError as exc:
        reason = str(exc)
        mm = _discard(mm, path, wake_r, fifo)
    store.set(f"{key}/ok/{rank}", "1" if mm is not None else "0:" + reason)
    answers = [store.get(f"{key}/ok/{p}") for p in range(size)]
    if not all(a == b"1" for a in answers):
        _discard(mm, path, wake_r, fifo)
        return None
    maps, wake_w = [mm], []
    try:
        for p in range(size):
            if p == rank:
                continue
            peer_path = os.path.join(shm_dir, f"distrib-{token}-{p}")
            fd = os.open(peer_path, os.O_RDWR)
            try:
                maps.insert(p, mmap.mmap(fd, total))
            finally:
                os.close(fd)
            if fifo:
                wake_w.append(os.open(peer_path + ".wake", os.O_WRONLY | os.O_NONBLOCK))
        store.set(f"{key}/mapped/{rank}", "1")
        store.wait([f"{key}/mapped/{p}" for p in range(size)])
        _leave_together(store, key, rank, size)
    except BaseException:
        for fd in wake_w:
            os.close(fd)
        for m in maps:
            if m is not mm:
                m.close()
        _discard(mm, path, wake_r, fifo)
        raise
    _discard(None, path, None, fifo)  # every rank mapped it: a crash from now on cannot leak it
    return maps, wake_r, wake_w


def _leave_together(store, key: str, rank: int, size: int) -> None:
    """Hold rank 0 until every peer is done with the store. Rank 0 usually owns it (the
    ``tcp://``/``env://`` rendezvous server): if it returned from ``init_process_group`` and
    destroyed the group as soon as it saw every ``mapped`` key, a peer still waiting for the
    reply to its own ``wait`` would never get one and would fail after the whole timeout."""
    if rank != 0:
        store.set(f"{key}/left/{rank}", "1")
    else:
        store.wait([f"{key}/left/{p}" for p in range(1, size)])


def _discard(mm, path, wake_r, fifo):
    for name in (path, fifo):
        if name is None:
            continue
        try:
            os.unlink(name)
        except OSError:
            pass
    if wake_r is not None:
        os.close(wake_r)
    if mm is not None:
        mm.close()
    return None


class ShmGroup:
    """The shared-memory collectives of one group. ``owner`` (the backend) gives deadlines, errors
    and the liveness of the peers."""

    def __init__(self, maps, rank: int, size: int, slot_bytes: int, wake_r: int, wake_w: list[int]) -> None:
        self.maps, self.rank, self.size, self.slot_bytes = maps, rank, size, slot_bytes
        self.wake_r, self.wake_w = wake_r, wake_w
        self.raw = [np.frombuffer(m, np.uint8) for m in maps]
        self.hdr = [r[:64].view(np.int64) for r in self.raw]
        # What each rank does at each barrier phase (phase % 8), and the element count of its
        # tensor there: see _barrier_agreeing.
        self.modes = [r[64:128].view(np.int64) for r in self.raw]
        self.counts = [r[128:192].view(np.int64) for r in self.raw]
        self.peers = [p for p in range(size) if p != rank]
        self.phase = 0
        self.slot = 0
        self.owner = None
        self.buffers: list[list[np.ndarray]] = []  # per alloc_buffer: every rank's buffer, by rank
        self.buffer_maps: list[mmap.mmap] = []

    # ------------------------------------------------------------ synchronisation
    def mark_op(self, seq: int) -> None:
        self.hdr[self.rank][1] = seq

    def barrier(self, count: int = 0) -> None:
        """Wait for every peer; raise if one passed a tensor of another ``count`` of elements."""
        self.arrive(0, count)
        self.wait_peers()
        self._check_counts(count)

    def arrive(self, mode: int = 0, count: int = 0) -> None:
        """The first half of a barrier: publish that this rank reached the next phase (and
        ``mode``, what it does there, and ``count``, the elements of its tensor)."""
        self.phase += 1
        self.modes[self.rank][self.phase % 8] = mode
        self.counts[self.rank][self.phase % 8] = count
        self.hdr[self.rank][0] = self.phase
        for fd in self.wake_w:
            try:
                os.write(fd, b"w")
            except BlockingIOError:
                pass  # the FIFO is full of wake-ups already
            except BrokenPipeError:
                pass  # the peer exited: waiting for it checks its liveness and names it

    def wait_peers(self) -> None:
        """The second half: wait until every peer reached this rank's phase."""
        for p in self.peers:
            if self.hdr[p][0] < self.phase:
                self._wait(p, self.phase)

    def _wait(self, peer: int, target: int) -> None:
        # Spin briefly (a peer that is running is usually microseconds behind), then block
        # on our wake-up FIFO: on a loaded machine spinning would steal the core the late
        # peer needs. Every rank writes a byte to its peers' FIFOs after raising its flag,
        # so a blocked waiter wakes at once; stale bytes only cause a harmless re-check.
        flag = self.hdr[peer]
        for _ in range(_SPINS):
            if flag[0] >= target:
                return
        while flag[0] < target:
            ready, _, _ = select.select([self.wake_r], [], [], 0.05)
            if ready:
                try:
                    os.read(self.wake_r, 4096)
                except BlockingIOError:
                    pass
            else:
                self._check(target)

    def _check(self, target: int) -> None:
        owner = self.owner
        missing = [p for p in self.peers if self.hdr[p][0] < target]
        owner.check_peers(missing)
        if time.monotonic() > owner.deadline():
            where = ", ".join(f"rank {p} is at op seq {int(self.hdr[p][1])}" for p in missing)
            raise owner.op_error(f"timed out after {owner.timeout:g} s waiting for peers ({where})", missing)

    def _slot(self, rank: int, slot: int, dtype, count: int) -> np.ndarray:
        start = _HEADER + slot * self.slot_bytes
        return self.raw[rank][start: start + count * dtype.itemsize].view(dtype)

    def _next_slot(self) -> int:
        s = self.slot
        self.slot ^= 1
        return s

    # ------------------------------------------------------------ shared buffers
    def alloc_buffer(self, store, nbytes: int) -> np.ndarray | None:
        """``nbytes`` of shared memory that every peer maps too (collective: each rank asks for
        the same size, in the same order), or None if it cannot be had. An all_reduce of a
        contiguous view of it reduces in place, without the copies through the slots (Note
        [Shared buffers])."""
        mapped = _exchange_segments(store, f"shm/buffer{len(self.buffers)}", self.rank, self.size,
                                    max(nbytes, 1), wake_fifo=False)
        if mapped is None:
            return None
        maps = mapped[0]
        self.buffer_maps += maps
        self.buffers.append([np.frombuffer(m, np.uint8)[:nbytes] for m in maps])
        return self.buffers[-1][self.rank]

    def _peer_views(self, x: np.ndarray) -> list[np.ndarray] | None:
        """Every rank's view of the region ``x`` covers, if ``x`` lies in a shared buffer."""
        if not self.buffers or not x.flags.c_contiguous:
            return None
        start = x.__array_interface__["data"][0]
        for arrays in self.buffers:
            base = arrays[self.rank]
            offset = start - base.__array_interface__["data"][0]
            if 0 <= offset and offset + x.nbytes <= base.size and offset % x.itemsize == 0:
                return [x if p == self.rank else arrays[p][offset: offset + x.nbytes].view(x.dtype)
                        for p in range(self.size)]
        return None

    def _all_reduce_shared(self, x: np.ndarray, views: list[np.ndarray], op) -> None:
        # Note [Shared buffers].
        n, me = self.size, self.rank
        self._barrier_agreeing(_SHARED, x.size)
        lo, hi = x.size * me // n, x.size * (me + 1) // n
        block = max(1, _SHARED_BLOCK // x.itemsize)
        for start in range(lo, hi, block):
            parts = [v[start: min(start + block, hi)] for v in views]
            # With two ranks the result may overwrite our part as it is read; with more, our
            # part is read after the first step, so the sum builds up in a temporary.
            out = reduce_op.reduce_in_rank_order(op, parts, out=parts[me] if n == 2 else None)
            for p in range(n):
                if parts[p] is not out:
                    np.copyto(parts[p], out)
        self.barrier()

    def _barrier_agreeing(self, mode: int, count: int) -> None:
        """A barrier that also checks every peer reduces the same way (all through shared
        buffers, or all through the slots; a mix would read the wrong memory) and a tensor of
        ``count`` elements, as ours. Each rank publishes its mode and count for this phase in
        rings of 8 phases; a peer cannot get two phases ahead of this rank, so the entries it
        wrote for this phase are still there."""
        self.arrive(mode, count)
        self.wait_peers()
        phase = self.phase % 8
        odd = [p for p in self.peers if self.modes[p][phase] != mode]
        if odd:
            raise self.owner.op_error(
                f"all_reduce: rank(s) {odd} reduce a different kind of tensor at this step (a buffer from "
                "alloc_comm_buffer on one side, a plain tensor on the other) or are in another collective; "
                "every rank must call the same collectives with the same kind of tensor", odd)
        self._check_counts(count)

    def _check_counts(self, count: int) -> None:
        """Raise if a peer published another element count than ``count`` at this phase: its
        blocks would not line up with ours (the TCP path finds this from the message sizes)."""
        phase = self.phase % 8
        for p in self.peers:
            if self.counts[p][phase] != count:
                raise self.owner.op_error(size_mismatch_reason(int(self.counts[p][phase]), count), [p])

    # ------------------------------------------------------------ collectives
    def all_reduce(self, x: np.ndarray, op) -> None:
        n, me = self.size, self.rank
        views = self._peer_views(x)
        if views is not None:
            return self._all_reduce_shared(x, views, op)
        cap = self.slot_bytes // x.itemsize
        if n == 2:
            return self._all_reduce_pair(x, op, reduce_op.ufunc(op, x.dtype), cap)
        for start in range(0, x.size, cap):
            blk = x[start: start + cap]
            m = blk.size
            b = [m * j // n for j in range(n + 1)]
            s = self._next_slot()
            mine = self._slot(me, s, x.dtype, m)
            for j in self.peers:
                np.copyto(mine[b[j]: b[j + 1]], blk[b[j]: b[j + 1]])
            self._barrier_agreeing(_SLOTS, x.size)
            lo, hi = b[me], b[me + 1]
            srcs = [blk[lo:hi] if p == me else self._slot(p, s, x.dtype, m)[lo:hi] for p in range(n)]
            out = reduce_op.reduce_in_rank_order(op, srcs, out=mine[lo:hi])
            np.copyto(blk[lo:hi], out)
            self.barrier()
            for j in self.peers:
                np.copyto(blk[b[j]: b[j + 1]], self._slot(j, s, x.dtype, m)[b[j]: b[j + 1]])

    def _all_reduce_pair(self, x: np.ndarray, op, f, cap: int) -> None:
        # Two ranks: both publish the whole block and both reduce all of it, in rank order, so
        # the results are bitwise equal. Memory traffic is about that of the reduce-scatter
        # scheme above, but there is one barrier per block instead of two, and a rank may copy
        # in block k+1 while its peer still reduces block k: far less lockstep under load.
        other = self.peers[0]
        for start in range(0, x.size, cap):
            blk = x[start: start + cap]
            m = blk.size
            s = self._next_slot()
            mine = self._slot(self.rank, s, x.dtype, m)
            np.copyto(mine, blk)
            self._barrier_agreeing(_SLOTS, x.size)
            theirs = self._slot(other, s, x.dtype, m)
            # In rank order, as reduce_op.reduce_in_rank_order does, written out: that call costs
            # 0.5-0.8 us more, a tenth of a 4 KB all_reduce (one block).
            if self.rank == 0:
                f(blk, theirs, out=blk)
            else:
                f(theirs, blk, out=blk)
            reduce_op.finish(op, blk, 2)

    def broadcast(self, x: np.ndarray, root: int) -> None:
        # The root's copy of block k+1 overlaps the receivers' copy of block k, so the
        # op takes (blocks + 1) block copies: cut large tensors into 8 blocks or more
        # (no block is larger than a slot).
        cap = min(self.slot_bytes, max(_MIN_BCAST_BLOCK, -(-x.nbytes // 8))) // x.itemsize
        for start in range(0, x.size, cap):
            blk = x[start: start + cap]
            s = self._next_slot()
            if self.rank == root:
                np.copyto(self._slot(root, s, x.dtype, blk.size), blk)
            self.barrier(x.size)
            if self.rank != root:
                np.copyto(blk, self._slot(root, s, x.dtype, blk.size))

    def all_gather(self, output: np.ndarray, x: np.ndarray) -> None:
        m, cap = x.size, self.slot_bytes // x.itemsize
        out = output.reshape(self.size, m)
        for start in range(0, m, cap):
            chunk = x[start: start + cap]
            s = self._next_slot()
            np.copyto(self._slot(self.rank, s, x.dtype, chunk.size), chunk)
            self.arrive(0, m)
            np.copyto(out[self.rank, start: start + chunk.size], chunk)  # while the peers catch up
            self.wait_peers()
            self._check_counts(m)
            for p in self.peers:
                np.copyto(out[p, start: start + chunk.size], self._slot(p, s, x.dtype, chunk.size))

    def reduce_scatter(self, output: np.ndarray, x: np.ndarray, op) -> None:
        n, me = self.size, self.rank
        m = output.size
        inp = x.reshape(n, m)
        cap = max(1, self.slot_bytes // x.itemsize // n)
        for start in range(0, m, cap):
            c = min(cap, m - start)
            s = self._next_slot()
            mine = self._slot(me, s, x.dtype, cap * n)
            for j in self.peers:
                np.copyto(mine[j * cap: j * cap + c], inp[j, start: start + c])
            self.barrier(m)
            srcs = [inp[me, start: start + c] if p == me else
                    self._slot(p, s, x.dtype, cap * n)[me * cap: me * cap + c] for p in range(n)]
            reduce_op.reduce_in_rank_order(op, srcs, out=output[start: start + c])

    def close(self) -> None:
        for fd in [self.wake_r, *self.wake_w]:
            os.close(fd)
        self.wake_w = []
        self.raw = self.hdr = None
        self.buffers = []
        for m in self.maps + self.buffer_maps:
            try:
                m.close()
            except BufferError:
                pass  # a view is still alive somewhere; the mapping goes with the process
        self.maps = self.buffer_maps = []
