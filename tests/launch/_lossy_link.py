"""A slow, lossy link between two network namespaces, made in user space (tests only).

``tc qdisc ... netem`` would do this in the kernel, but kernels built without ``sch_netem``
(this machine's among them) refuse it. So each namespace gets a TUN device, and a thread
of the test process carries every IP packet from one device to the other after ``delay``
seconds, dropping each with probability ``loss``: TCP sees real latency and real loss.
"""

from __future__ import annotations

import fcntl
import heapq
import os
import random
import select
import struct
import subprocess
import threading
import time

_TUNSETIFF = 0x400454CA
_IFF_TUN, _IFF_NO_PI = 0x0001, 0x1000


def _open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, _TUNSETIFF, struct.pack("16sH", name.encode(), _IFF_TUN | _IFF_NO_PI))
    return fd


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


class LossyLink:
    """Join namespace ``ns[i]`` (address ``addrs[i]``/24 on device ``devs[i]``) to the other one.

    The forwarding thread runs until :meth:`close`; the devices go with their namespaces.
    """

    def __init__(self, ns, devs, addrs, delay: float, loss: float, seed: int = 0) -> None:
        self.fds = [_open_tun(dev) for dev in devs]
        for name, dev, addr in zip(ns, devs, addrs):
            _ip("link", "set", dev, "netns", name)
            _ip("-n", name, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", name, "link", "set", dev, "up")
        self.delay, self.loss, self.random = delay, loss, random.Random(seed)
        self.sent = self.dropped = 0
        self.wake_r, self.wake_w = os.pipe()
        self.thread = threading.Thread(target=self._forward, daemon=True, name="lossy-link")
        self.thread.start()

    def _forward(self) -> None:
        due: list[tuple[float, int, int, bytes]] = []  # (when, sequence, destination fd, packet)
        count = 0
        while True:
            timeout = max(0.0, due[0][0] - time.monotonic()) if due else None
            ready = select.select([*self.fds, self.wake_r], [], [], timeout)[0]
            if self.wake_r in ready:
                return
            for fd in ready:
                packet = os.read(fd, 65536)
                if self.random.random() < self.loss:
                    self.dropped += 1
                    continue
                count += 1
                other = self.fds[1] if fd == self.fds[0] else self.fds[0]
                heapq.heappush(due, (time.monotonic() + self.delay, count, other, packet))
            while due and due[0][0] <= time.monotonic():
                _, _, fd, packet = heapq.heappop(due)
                try:
                    os.write(fd, packet)
                except OSError:  # the device is going away with its namespace
                    continue
                self.sent += 1

    def close(self) -> None:
        """Stop forwarding and close the devices' file descriptors."""
        os.write(self.wake_w, b"x")
        self.thread.join(10)
        for fd in (*self.fds, self.wake_r, self.wake_w):
            os.close(fd)
