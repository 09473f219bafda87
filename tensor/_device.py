"""``tensor.device`` and the process-wide default device."""

from __future__ import annotations

import re
import threading

from . import _backend

__all__ = ["device", "get_default_device", "set_default_device"]

_DEVICE_RE = re.compile(r"^(cpu|cuda)(?::(\d+))?$")


class device:
    """A device such as ``device("cpu")``, ``device("cuda")`` or ``device("cuda", 1)``.

    Devices are interned, so two equal devices are the same object. Used as a
    context manager, a device becomes the default for creation ops in this thread.

    Raises:
        RuntimeError: for an unknown device string, naming it and listing the valid forms.
    """

    __slots__ = ("type", "index", "_backend", "_previous")
    _interned: dict = {}

    def __new__(cls, type_or_spec, index: int | None = None):
        if isinstance(type_or_spec, device):
            return type_or_spec
        key = (type_or_spec, index)
        found = cls._interned.get(key)
        if found is not None:
            return found
        kind, parsed_index = _parse(type_or_spec, index)
        canonical = cls._interned.get((kind, parsed_index))
        if canonical is None:
            canonical = object.__new__(cls)
            canonical.type = kind
            canonical.index = parsed_index
            canonical._backend = None
            canonical._previous = []
            cls._interned[(kind, parsed_index)] = canonical
        cls._interned[key] = canonical
        return canonical

    @property
    def backend(self) -> _backend.Backend:
        """The array backend of this device (loads CuPy for CUDA devices)."""
        if self._backend is None:
            self._backend = _backend.cpu_backend if self.type == "cpu" else _backend.cuda_backend()
        return self._backend

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __reduce__(self):
        return (device, (str(self),))

    def __enter__(self) -> device:
        # The stack of previous defaults is per thread, like the default itself: devices
        # are interned, so a stack on the device object would be shared between threads.
        _defaults.previous.append(_defaults.device)
        _defaults.device = self
        return self

    def __exit__(self, *exc) -> None:
        _defaults.device = _defaults.previous.pop()


def _parse(spec, index):
    if isinstance(spec, int) and not isinstance(spec, bool):
        return "cuda", spec
    if not isinstance(spec, str):
        raise TypeError(f"device() expects a string like 'cpu' or 'cuda:0', got {spec!r}")
    match = _DEVICE_RE.match(spec)
    if match is None:
        raise RuntimeError(
            f"Expected one of cpu, cuda device type at start of device string: {spec!r} "
            "(valid forms: 'cpu', 'cuda', 'cuda:N')"
        )
    kind, text_index = match.groups()
    if text_index is not None:
        if index is not None:
            raise RuntimeError(f"device string {spec!r} already has an index; got index={index} too")
        index = int(text_index)
    if index is not None and (not isinstance(index, int) or index < 0):
        raise RuntimeError(f"device index must be a non-negative int, got {index!r}")
    if kind == "cpu":
        index = None
    return kind, index


class _Defaults(threading.local):
    device = None  # None means the process-wide default

    def __init__(self) -> None:
        self.previous = []  # saved defaults of the enclosing ``with device(...)`` blocks


_defaults = _Defaults()
_process_default = [device("cpu")]


def get_default_device() -> device:
    """The device creation ops use when none is given."""
    return _defaults.device or _process_default[0]


def set_default_device(dev) -> None:
    """Set the default device for creation ops in the whole process (None resets to CPU)."""
    _process_default[0] = device("cpu") if dev is None else device(dev)


def as_device(dev) -> device:
    """Resolve ``None`` to the default device, and strings or ints to devices."""
    if dev is None:
        return get_default_device()
    return device(dev)


CPU = device("cpu")


def device_of_array(array) -> device:
    """The device a numpy or cupy array lives on."""
    backend, index = _backend.backend_for_array(array)
    if backend is _backend.cpu_backend:
        return CPU
    return device("cuda", index)
