"""What every checkpoint format shares: atomic writes to a path, ``map_location``, ``nn.Parameter``."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from collections.abc import Callable

from . import _backend
from ._device import device as _device_cls

__all__ = ["write_atomically", "resolve_location", "place", "is_parameter", "parameter_type", "element_placement"]


def element_placement(array, start: int) -> tuple[int, tuple[int, ...]] | None:
    """``(offset, strides)`` in elements of ``array``, whose first element is ``start`` bytes into
    its storage: what a checkpoint records of a view. None where they are not whole, non-negative
    numbers of elements (a reversed view, a misaligned ``view(dtype)``), which no format records."""
    item = array.itemsize
    if start < 0 or start % item or any(s < 0 or s % item for s in array.strides):
        return None
    return start // item, tuple(s // item for s in array.strides)


def write_atomically(path, write: Callable) -> None:
    """Call ``write(file)`` on a temporary file next to ``path``, fsync it, rename it over ``path``.

    A crash never leaves a half-written checkpoint: readers see the old file or the new one.

    Raises:
        RuntimeError: if the parent directory does not exist or ``path`` is a directory (as
            ``torch.save``); nothing is written.
        OSError: if the file cannot be written; the temporary file is removed.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise RuntimeError(f"Parent directory {directory} does not exist.")
    if os.path.isdir(path):
        raise RuntimeError(f"cannot save to {path}: it is a directory")
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        # mkstemp makes the file 0600; give it the permissions open() would (0666 minus umask).
        os.fchmod(fd, 0o666 & ~_current_umask())
        with os.fdopen(fd, "w+b") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _current_umask() -> int:
    # Read it without os.umask(), which would briefly change it for every thread.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def resolve_location(saved: str, map_location):
    """Where a tensor saved on ``saved`` goes: a device string, or the user's callable."""
    if map_location is None:
        return saved
    if isinstance(map_location, dict):
        return map_location.get(saved, saved)
    if callable(map_location) and not isinstance(map_location, (str, _device_cls)):
        return map_location
    return str(_device_cls(map_location))


def place(t, saved: str, map_location, name: str):
    """Move the CPU tensor ``t`` (saved on ``saved``) as ``map_location`` says.

    Raises:
        RuntimeError: naming ``name`` when the target is a CUDA device and CUDA is not available.
    """
    target = resolve_location(saved, map_location)
    if callable(target):
        return target(t, saved)
    if str(target) == "cpu":
        return t
    if str(target).startswith("cuda") and not _backend.cuda_available():
        raise RuntimeError(
            f"{name}: attempting to deserialize a tensor saved on {saved} but CUDA is not "
            "available. On a CPU-only machine, load it with map_location='cpu'."
        )
    return t.to(target)


# Note [Parameters in checkpoints]: ``nn`` sits above ``tensor`` (tests/test_layering.py), so the
# formats reach ``nn.Parameter`` at run time only: saving tests for it only if ``nn.parameter`` is
# already loaded (a Parameter cannot exist otherwise), and loading imports it only for a file that
# holds one, as ``_autograd_hooks`` reaches ``autograd``.
def is_parameter(obj) -> bool:
    """Whether ``obj`` is an ``nn.Parameter``, without importing ``nn``."""
    module = sys.modules.get("nn.parameter")
    return module is not None and isinstance(obj, module.Parameter)


def parameter_type() -> type:
    """``nn.Parameter``, for rebuilding a saved one (Note [Parameters in checkpoints])."""
    return importlib.import_module("nn.parameter").Parameter
