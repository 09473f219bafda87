"""Live tensors by device while memory is recorded (see ``tensor/_memory_snapshot.py``)."""

from __future__ import annotations

import itertools
import os
import traceback
import weakref

__all__ = ["LiveTensors", "live", "user_stack"]


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tensor/


def user_stack(limit: int = 16) -> list[str]:
    """The caller's Python stack outside the ``tensor`` package, innermost last."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_PACKAGE)]
    return [f"{f.filename}:{f.lineno} {f.name}" for f in frames[-limit:]]


class LiveTensors:
    """Bytes of the tracked tensors alive now and at most since ``reset_peak``, per device."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict] = {}
        self.used: dict[str, int] = {}
        self.peak = 0
        self.with_stacks = False
        self._ids = itertools.count()

    def add(self, t) -> None:
        """Count ``t``'s storage until ``t`` is collected."""
        nbytes, device = t._data.nbytes, str(t._device)
        key = next(self._ids)
        block = {"device": device, "size": nbytes, "shape": list(t.shape), "dtype": str(t.dtype)}
        if self.with_stacks:
            block["frames"] = user_stack()
        self.blocks[key] = block
        used = self.used[device] = self.used.get(device, 0) + nbytes
        self.peak = max(self.peak, used)
        weakref.finalize(t, self._free, key)

    def _free(self, key: int) -> None:
        block = self.blocks.pop(key, None)
        if block is not None:
            self.used[block["device"]] -= block["size"]

    def reset_peak(self) -> None:
        """Start a new peak from the bytes in use now."""
        self.peak = max(self.used.values(), default=0)


live = LiveTensors()
