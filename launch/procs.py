"""Process plumbing: workers die with the launcher, and stopping a worker stops its whole tree.

Note [Process trees]
    Each worker starts in its own session (``start_new_session``), so its process group
    holds the worker and every grandchild that does not move itself (DataLoader workers,
    shell pipelines). Stopping a worker signals the group, and also every descendant found
    through /proc by parent links, which catches grandchildren that called ``setsid``.
    Terminal signals (Ctrl-C) reach only the launcher, which forwards them.

    ``PR_SET_PDEATHSIG`` (set between fork and exec) makes the kernel SIGKILL a worker
    when the launcher dies, even by SIGKILL. The child compares ``getppid()`` with the
    launcher's pid after setting it, closing the race where the launcher died first.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import time

__all__ = ["child_setup", "process_table", "tree_of", "signal_tree", "wait_gone"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: no parent-death signal
    _prctl = None


def child_setup(parent_pid: int):
    """A ``preexec_fn``: SIGKILL this child when the launcher dies (Linux)."""

    def setup() -> None:
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent_pid:  # the launcher died before prctl took effect
            os._exit(1)

    return setup


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux): a grandchild whose worker died, even one that called
    ``setsid``, becomes our child instead of init's, so it can still be found and stopped."""
    return _prctl is not None and _prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0


def adopted(exclude: set[int], table: dict) -> set[int]:
    """Our children that we did not start: orphans adopted as a subreaper (reaps the dead ones)."""
    me = os.getpid()
    found = {pid for pid, (_, ppid, _, _) in table.items() if ppid == me and pid not in exclude}
    try:
        while True:  # reap adopted zombies; waitid with WNOWAIT leaves our own workers to Popen
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is None or info.si_pid in exclude:
                break
            os.waitpid(info.si_pid, 0)
    except ChildProcessError:
        pass
    return found


def process_table() -> dict[int, tuple[str, int, int, int]]:
    """Every live (non-zombie) process: pid -> (state, ppid, pgrp, session), from /proc."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        state = fields[0].decode()
        if state not in ("Z", "X"):
            table[int(entry)] = (state, int(fields[1]), int(fields[2]), int(fields[3]))
    return table


def tree_of(roots: set[int], table: dict | None = None, orphans: set[int] | None = None) -> set[int]:
    """The live processes in the sessions/groups led by ``roots``, and all their descendants.

    ``orphans``: the pids we must not count as adopted orphans (our workers and helpers); when
    given, orphans adopted by this process (see :func:`become_subreaper`) are included too.
    """
    table = process_table() if table is None else table
    found = {pid for pid, (_, _, pgrp, sid) in table.items() if pgrp in roots or sid in roots or pid in roots}
    if orphans is not None:
        found |= adopted(orphans | roots, table)
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def signal_tree(roots: set[int], sig: int, orphans: set[int] | None = None) -> set[int]:
    """Send ``sig`` to the process groups of ``roots`` and every process in their trees."""
    pids = tree_of(roots, orphans=orphans)
    for root in roots:
        try:
            os.killpg(root, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return pids


def wait_gone(roots: set[int], deadline: float, reap, give_up=lambda: False,
              orphans: set[int] | None = None) -> set[int]:
    """Wait until no process of the trees of ``roots`` is alive, ``deadline`` or ``give_up()``.

    Returns the survivors. ``reap()`` collects exited direct children (zombies do not count
    as alive). Polls /proc every 20 ms: most of these processes are not our children, so
    there is nothing to block on.
    """
    while True:
        reap()
        alive = tree_of(roots, orphans=orphans)
        remaining = deadline - time.monotonic()
        if not alive or remaining <= 0 or give_up():
            return alive
        time.sleep(min(0.02, remaining))


class Watchdog:
    """A forked helper that kills the worker trees if the launcher dies without cleaning up.

    PDEATHSIG takes the workers down with a SIGKILLed launcher, but not their children
    (DataLoader workers), which would live on as orphans. The watchdog, forked before any
    thread starts, learns each worker's process group over a pipe; when the pipe reaches
    EOF without a ``done`` line (the launcher died), it SIGKILLs those groups and trees.
    It ignores terminal signals: the launcher forwards those itself. It also removes the
    job's temporary directory (error files) in that case.
    """

    def __init__(self) -> None:
        read_fd, self.fd = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the watchdog: plain syscalls only, then _exit
            try:
                os.close(self.fd)
                os.setsid()
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    signal.signal(sig, signal.SIG_IGN)
                _watch(read_fd)
            finally:
                os._exit(0)
        os.close(read_fd)

    def watch(self, pgid: int) -> None:
        os.write(self.fd, b"+%d\n" % pgid)

    def remove_on_death(self, directory: str) -> None:
        """Also delete ``directory`` (the job's temporary files) if the launcher dies."""
        os.write(self.fd, b"rm " + os.fsencode(directory) + b"\n")

    def close(self) -> None:
        """The launcher is exiting cleanly: release the watchdog and reap it (bounded)."""
        try:
            os.write(self.fd, b"done\n")
            os.close(self.fd)
        except OSError:
            pass
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    return
            except ChildProcessError:
                return
            time.sleep(0.002)


def _watch(read_fd: int) -> None:
    data = b""
    while True:
        chunk = os.read(read_fd, 4096)
        if not chunk:
            break
        data += chunk
        if b"done\n" in data:
            return
    lines = data.split(b"\n")
    roots = {int(line[1:]) for line in lines if line.startswith(b"+")}
    for _ in range(3):  # a few sweeps: a dying tree may still fork
        if not signal_tree(roots, signal.SIGKILL):
            break
        time.sleep(0.05)
    for line in lines:
        if line.startswith(b"rm "):
            shutil.rmtree(os.fsdecode(line[3:]), ignore_errors=True)
