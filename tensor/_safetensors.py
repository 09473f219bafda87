"""``.safetensors`` files, through the safetensors package's numpy API (the reference implementation).

A file is a flat ``{name: tensor}`` dict plus optional ``{str: str}`` metadata; loading one
never runs code. safetensors is imported only when such a file is read or written.
"""

from __future__ import annotations

import importlib
import os
import struct
from pathlib import Path

import numpy as np

from . import _checkpoint_io, _creation, _dispatch, _dtype

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
    data = f.read() if hasattr(f, "read") else None
    try:
        arrays = numpy_api.load(data) if data is not None else numpy_api.load_file(name)
    except (KeyError, AttributeError):  # a BF16/F8 entry, which safetensors' numpy API cannot type
        arrays = _load_low_precision(data if data is not None else Path(name).read_bytes())
    return {key: _checkpoint_io.place(_creation.from_numpy(_writable(a)), "cpu", map_location, name)
            for key, a in arrays.items()}


# The format's dtype names (its specification), for the files numpy's API cannot read: those with
# bfloat16 or float8 entries, whose numpy types come from ml_dtypes (Note [Low-precision floats]).
_FORMAT_DTYPES = {
    "F64": _dtype.float64, "F32": _dtype.float32, "F16": _dtype.float16, "BF16": _dtype.bfloat16,
    "F8_E4M3": _dtype.float8_e4m3fn, "F8_E5M2": _dtype.float8_e5m2, "I64": _dtype.int64,
    "I32": _dtype.int32, "I16": _dtype.int16, "I8": _dtype.int8, "U8": _dtype.uint8,
    "BOOL": _dtype.bool_, "C64": _dtype.complex64, "C128": _dtype.complex128,
}


def _load_low_precision(data: bytes) -> dict[str, np.ndarray]:
    arrays = {}
    for key, entry in _module("safetensors").deserialize(data):
        found = _FORMAT_DTYPES.get(entry["dtype"])
        if found is None:
            raise TypeError(f"safetensors entry {key!r} has dtype {entry['dtype']}, which distrib does not have")
        arrays[key] = np.frombuffer(entry["data"], found.numpy).reshape(entry["shape"])
    return arrays


def _writable(array: np.ndarray) -> np.ndarray:
    return array if array.flags.writeable else array.copy()


def read_metadata(path) -> dict[str, str] | None:
    """The ``{str: str}`` metadata stored in a safetensors file (None if it has none).

    Raises:
        ImportError: if safetensors is not installed.
    """
    with _module("safetensors").safe_open(os.fspath(path), framework="numpy") as handle:
        return handle.metadata()
