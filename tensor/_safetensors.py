"""``.safetensors`` files, through the safetensors package's numpy API (the reference implementation).

A file is a flat ``{name: tensor}`` dict plus optional ``{str: str}`` metadata; loading one
never runs code. safetensors is imported only when such a file is read or written.
"""

from __future__ import annotations

import importlib
import os
import struct

import numpy as np

from . import _checkpoint_io, _creation, _dispatch

__all__ = ["load", "save", "read_metadata", "looks_like_safetensors"]

_MISSING = "safetensors is not installed: pip install safetensors (or pip install 'distrib[formats]')"


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(_MISSING) from None


def looks_like_safetensors(head: bytes) -> bool:
    """Whether a file starting with ``head`` (16+ bytes) has a safetensors header."""
    return len(head) >= 9 and head[8:9] == b"{" and 2 <= struct.unpack_from("<Q", head)[0] < 100_000_000


def _arrays(obj) -> dict[str, np.ndarray]:
    if not isinstance(obj, dict):
        raise TypeError(f"safetensors stores a flat {{name: tensor}} dict, got {type(obj).__name__}")
    arrays = {}
    for key, value in obj.items():
        if not isinstance(key, str) or not _dispatch.is_tensor(value):
            raise TypeError(f"safetensors stores a flat {{str: tensor}} dict; entry {key!r} is "
                            f"{type(value).__name__} (use format='distrib' for nested objects)")
        array = value._device.backend.to_numpy(value._data)
        arrays[key] = np.array(array, array.dtype.newbyteorder("<"), order="C")  # keeps 0-d arrays 0-d
    return arrays


def save(obj, f, metadata: dict[str, str] | None = None) -> None:
    """Write the flat dict ``obj`` of tensors (and ``metadata``) to a path, atomically, or a file object.

    Raises:
        TypeError: if ``obj`` is not a ``{str: tensor}`` dict or metadata is not ``{str: str}``.
        ImportError: if safetensors is not installed.
    """
    if metadata is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("safetensors metadata must be a {str: str} dict")
    data = _module("safetensors.numpy").save(_arrays(obj), metadata=metadata)
    if hasattr(f, "write"):
        f.write(data)
    else:
        _checkpoint_io.write_atomically(f, lambda out: out.write(data))


def load(f, map_location=None) -> dict:
    """Read a safetensors file into ``{name: tensor}`` (CPU unless ``map_location`` says otherwise).

    Raises:
        ImportError: if safetensors is not installed.
        RuntimeError: if the file is not a valid safetensors file (from safetensors).
    """
    name = getattr(f, "name", "<file object>") if hasattr(f, "read") else os.fspath(f)
    numpy_api = _module("safetensors.numpy")
    arrays = numpy_api.load(f.read()) if hasattr(f, "read") else numpy_api.load_file(name)
    return {key: _checkpoint_io.place(_creation.from_numpy(_writable(a)), "cpu", map_location, name)
            for key, a in arrays.items()}


def _writable(array: np.ndarray) -> np.ndarray:
    return array if array.flags.writeable else array.copy()


def read_metadata(path) -> dict[str, str] | None:
    """The ``{str: str}`` metadata stored in a safetensors file (None if it has none).

    Raises:
        ImportError: if safetensors is not installed.
    """
    with _module("safetensors").safe_open(os.fspath(path), framework="numpy") as handle:
        return handle.metadata()
