"""Helpers for the launcher tests: run ``python -m launch`` as a subprocess with deadlines.

Worker scripts are tiny Python files written into ``tmp_path``; they print environment
variables, fail in controlled ways, or report their pids and then block, so tests wait
on conditions (a line on the launcher's output), never on sleeps. :class:`NetnsPair`
makes two network namespaces (two "hosts" on one machine) and removes them.
"""

from __future__ import annotations

import itertools
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 30.0


def write_script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(body))
    return path


def launch_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "launch", *map(str, args)]


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DISTRIB_AUTH_KEY", "OMP_NUM_THREADS")}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_launch(*args, env=None, timeout=DEADLINE) -> subprocess.CompletedProcess:
    """Run the launcher to completion (bounded) and capture its text output."""
    return subprocess.run(launch_cmd(*args), cwd=ROOT, env=env or clean_env(), capture_output=True, text=True,
                          timeout=timeout)


class Launcher:
    """A running launcher whose stdout we read line by line, with deadlines."""

    def __init__(self, *args, env=None, cwd=ROOT, prefix=()) -> None:
        self.proc = subprocess.Popen([*prefix, *launch_cmd(*args)], cwd=cwd, env=env or clean_env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = b""
        self.err = b""

    def wait_for(self, predicate, timeout=DEADLINE, stream="stdout") -> str:
        """Read ``stream`` until ``predicate(text)`` holds; returns its text so far."""
        pipe = getattr(self.proc, stream)
        deadline = time.monotonic() + timeout
        while not predicate(getattr(self, stream[3:]).decode()):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([pipe], [], [], remaining)[0]:
                raise AssertionError(f"timed out waiting; {stream} so far:\n{getattr(self, stream[3:]).decode()}")
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"launcher {stream} ended early:\n{getattr(self, stream[3:]).decode()}")
            setattr(self, stream[3:], getattr(self, stream[3:]) + chunk)
        return getattr(self, stream[3:]).decode()

    def finish(self, timeout=DEADLINE) -> tuple[int, str, str]:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"launcher did not exit in time; stderr:\n{err.decode()}") from None
        return self.proc.returncode, (self.out + out).decode(), (self.err + err).decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=DEADLINE)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (zombies count as dead)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] not in (b"Z", b"X")


def wait_all_dead(pids, timeout=10.0) -> list[int]:
    """Poll /proc until every pid is gone (they are not our children); returns survivors."""
    deadline = time.monotonic() + timeout
    while True:
        survivors = [p for p in pids if alive(p)]
        if not survivors or time.monotonic() > deadline:
            return survivors
        select.select([], [], [], 0.02)


def kill_leftovers(pids) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def free_port_pair() -> int:
    """A port P with P and P+1 both free on 127.0.0.1 (MASTER_PORT and the rendezvous)."""
    for _ in range(50):
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port >= 65535:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port pair")


@pytest.fixture
def port() -> int:
    return free_port_pair()


def netns_skip_reason() -> str | None:
    """Why network-namespace tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    return None


def ip(*args: str) -> None:
    """Run ``ip ARGS``; raises CalledProcessError with its output on failure."""
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


_pairs = itertools.count()


class NetnsPair:
    """Two network namespaces, ``ns[0]`` at ``ADDRS[0]`` and ``ns[1]`` at ``ADDRS[1]``, joined by a veth
    pair (``devs``), or left unjoined (``joined=False``) for the caller to join another way.

    Names carry this process's pid, so concurrent runs do not meet. :meth:`close` kills
    whatever still runs inside (and returns its pids) and deletes the namespaces.
    """

    ADDRS = ("10.231.7.1", "10.231.7.2")

    def __init__(self, joined: bool = True) -> None:
        tag = f"{os.getpid() % 100000}{next(_pairs)}"
        self.ns = [f"dl{tag}a", f"dl{tag}b"]
        self.devs = [f"dl{tag}x", f"dl{tag}y"]
        try:
            for name in self.ns:
                ip("netns", "add", name)
                ip("-n", name, "link", "set", "lo", "up")
            if joined:
                ip("link", "add", self.devs[0], "type", "veth", "peer", "name", self.devs[1])
                for name, dev, addr in zip(self.ns, self.devs, self.ADDRS):
                    ip("link", "set", dev, "netns", name)
                    ip("-n", name, "addr", "add", f"{addr}/24", "dev", dev)
                    ip("-n", name, "link", "set", dev, "up")
        except BaseException:
            self.close()
            raise

    def prefix(self, i: int) -> tuple[str, ...]:
        """The command prefix that runs a program in namespace ``i``."""
        return ("ip", "netns", "exec", self.ns[i])

    def set_link(self, i: int, state: str) -> None:
        """``state`` "down" cuts namespace ``i`` off the link, "up" reconnects it."""
        ip("-n", self.ns[i], "link", "set", self.devs[i], state)

    def pids(self) -> list[int]:
        """The processes running in either namespace."""
        found = []
        for name in self.ns:
            out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=30).stdout
            found += [int(p) for p in out.split()]
        return found

    def close(self) -> list[int]:
        """Kill what still runs inside, delete the namespaces; returns the pids that had to be killed."""
        leftovers = [p for p in self.pids() if alive(p)]
        kill_leftovers(leftovers)
        wait_all_dead(leftovers)
        for name in self.ns:
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=30)
        return leftovers
