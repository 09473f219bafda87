"""Helpers for the DataLoader worker tests: live children, /dev/shm and mapped batch buffers."""

from __future__ import annotations

import gc
import os
import time

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


def children() -> set[int]:
    """Live child processes of this process (the forkserver, a long-lived helper, is left out)."""
    from multiprocessing import forkserver

    skip = {getattr(forkserver._forkserver, "_forkserver_pid", None)}
    found = set()
    for task in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{task}/children") as f:
                found.update(int(p) for p in f.read().split())
        except FileNotFoundError:
            continue
    return {p for p in found if alive(p) and p not in skip}


def shm_names() -> set[str]:
    """The names in /dev/shm."""
    return set(os.listdir("/dev/shm"))


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


def wait_until(condition, timeout: float = 20.0) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
