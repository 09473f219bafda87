"""Helpers for the DataLoader worker tests: live children, /dev/shm and mapped batch buffers."""

from __future__ import annotations

import gc
import os

BUFFER_NAME = "distrib-dataloader-batch"


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    return _state(pid) not in (None, "Z", "X")


def _helper(pid: int) -> bool:
    """multiprocessing's own long-lived helpers: the forkserver and the resource tracker."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    return b"resource_tracker" in cmdline or b"forkserver" in cmdline


def children() -> set[int]:
    """Live child processes of this process (multiprocessing's long-lived helpers left out)."""
    found = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                found.update(int(p) for p in f.read().split())
        except FileNotFoundError:
            continue
    return {p for p in found if alive(p) and not _helper(p)}


def shm_names() -> set[str]:
    """The names in /dev/shm this process could have made (ours, or Python's shared_memory and
    semaphores); other programs running at the same time have their own."""
    return {name for name in os.listdir("/dev/shm") if name.startswith(("distrib", "psm_", "sem."))}


def mapped_buffers() -> int:
    """How many DataLoader batch buffers this process still maps (or holds a descriptor of)."""
    gc.collect()
    count = 0
    with open("/proc/self/maps") as f:
        count += sum(BUFFER_NAME in line for line in f)
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += BUFFER_NAME in os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
    return count
