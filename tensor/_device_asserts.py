"""Device-side asserts: checks of device data that do not stop the host (part of the seam).

Note [Device-side asserts]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Checking device data on the host (``int(index.max())``) waits for every queued kernel: a
training step with an index check per loss, gather and embedding would synchronise several
times per step. Instead, as PyTorch's device-side asserts do, a check only queues a tiny
kernel that folds its 0-d flag into one int32 *error word* per device, as the code of its
message (``max``, so a set word stays set). The host reads the word at the next point where it
synchronises anyway (a transfer to the host, ``tensor.cuda.synchronize``, a stream's
``synchronize``), and raises the check's error there, naming the op: the error surfaces later
than the op that failed, as in PyTorch, and the word is cleared. Reading the word is one more
small transfer at that point, made only when checks were queued since the last read. On the
CPU a check raises at once with the offending value (``Backend.device_assert``).
"""

from __future__ import annotations

import threading

import numpy as np


class DeviceAsserts:
    """The error words of one process's devices and the messages their codes stand for."""

    def __init__(self, cupy) -> None:
        self._cupy = cupy
        self._lock = threading.Lock()
        self._words: dict[int, object] = {}
        self._pending: set[int] = set()
        self._codes: dict[tuple[type, str], int] = {}
        self._messages: list[tuple[type, str]] = [(RuntimeError, "")]  # code 0: no error

    def record(self, bad, error: type, message: str) -> None:
        """Queue the check "``bad`` (a 0-d device bool) must be False" on ``bad``'s device."""
        index = bad.device.id
        with self._lock:
            code = self._codes.get((error, message))
            if code is None:
                code = self._codes[(error, message)] = len(self._messages)
                self._messages.append((error, message))
            self._pending.add(index)
        with self._cupy.cuda.Device(index):
            word = self._words.get(index)
            if word is None:
                word = self._words.setdefault(index, self._cupy.zeros((), np.int32))
            self._cupy.maximum(word, bad.astype(np.int32) * np.int32(code), out=word)

    def raise_pending(self, index: int | None = None) -> None:
        """Read the error word of device ``index`` (every device for None) if checks were queued
        there since the last read; clear it.

        Raises:
            the failed check's error type (IndexError, ...): "device-side assert triggered: ..."
        """
        with self._lock:
            indices = sorted(self._pending) if index is None else [index] * (index in self._pending)
            self._pending.difference_update(indices)
        for device in indices:
            word = self._words[device]
            with self._cupy.cuda.Device(device):
                code = int(word.get())
                if code:
                    word.fill(0)
            if code:
                error, message = self._messages[code]
                raise error(f"device-side assert triggered on cuda:{device}: {message} (reported "
                            "at this synchronisation; the op ran earlier)")
