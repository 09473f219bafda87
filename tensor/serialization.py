"""``save`` and ``load``: a safe, atomic checkpoint format.

Unlike ``torch.save``, the format is not a pickle. A file is::

    b"DISTRIBT" | u32 version | u64 header length | header (JSON) | tensor bytes | u32 crc32 | b"TBIRTSID"

The JSON header describes the object tree (dicts, lists, tuples, numbers,
strings, bytes, None, dtypes, devices) and, for each tensor, its dtype, shape
and byte range. Loading it can never run code. Objects of any other type are
stored as pickles; loading a file that contains one needs ``weights_only=False``,
an explicit statement that the caller trusts the file. Integrity is checked
with the length fields and a CRC-32, so a truncated or corrupt file is an
error, not garbage.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import pickle
import struct
import tempfile
import zlib

import numpy as np

from . import _backend, _creation, _dispatch, _dtype
from ._device import device as _device_cls

__all__ = ["save", "load"]

MAGIC, END_MAGIC = b"DISTRIBT", b"TBIRTSID"
FORMAT_VERSION = 1
_HEAD = struct.Struct("<8sIQ")
_TAIL = struct.Struct("<I8s")


class _Encoder:
    def __init__(self) -> None:
        self.tensors: list = []
        self.blobs: list[bytes] = []
        self.offset = 0
        self._tensor_ids: dict = {}

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj if abs(obj) < 2 ** 53 else {"t": "int", "v": str(obj)}
        if isinstance(obj, float):
            return {"t": "float", "v": repr(obj)}
        if _dispatch.is_tensor(obj):
            return {"t": "tensor", "i": self._add_tensor(obj)}
        if isinstance(obj, np.ndarray):
            return {"t": "ndarray", "i": self._add_array(obj)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item())
        if isinstance(obj, (bytes, bytearray)):
            return {"t": "bytes", "v": base64.b64encode(bytes(obj)).decode()}
        if isinstance(obj, _dtype.dtype):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, _device_cls):
            return {"t": "device", "v": str(obj)}
        if type(obj) in (dict, collections.OrderedDict):
            return {"t": "dict" if type(obj) is dict else "odict",
                    "k": [self.encode(k) for k in obj], "v": [self.encode(v) for v in obj.values()]}
        if type(obj) in (list, tuple):
            return {"t": type(obj).__name__, "v": [self.encode(v) for v in obj]}
        return {"t": "pickle", "type": f"{type(obj).__module__}.{type(obj).__qualname__}",
                "v": base64.b64encode(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)).decode()}

    def _add_array(self, array: np.ndarray) -> int:
        _dtype.from_numpy_dtype(array.dtype)
        data = np.ascontiguousarray(array).tobytes()
        self.tensors.append({"dtype": array.dtype.str, "shape": list(array.shape),
                             "offset": self.offset, "nbytes": len(data)})
        self.blobs.append(data)
        self.offset += len(data)
        return len(self.tensors) - 1

    def _add_tensor(self, t) -> int:
        found = self._tensor_ids.get(id(t))
        if found is not None:
            return found
        index = self._add_array(t._device.backend.to_numpy(t._data))
        self.tensors[index].update(device=str(t._device), requires_grad=t.requires_grad)
        self._tensor_ids[id(t)] = index
        return index


def _serialize(obj) -> bytes:
    encoder = _Encoder()
    tree = encoder.encode(obj)
    header = json.dumps({"tree": tree, "tensors": encoder.tensors,
                         "payload_bytes": encoder.offset}).encode()
    body = header + b"".join(encoder.blobs)
    return _HEAD.pack(MAGIC, FORMAT_VERSION, len(header)) + body + _TAIL.pack(zlib.crc32(body), END_MAGIC)


def save(obj, f) -> None:
    """Write ``obj`` (nested dicts/lists/tuples of tensors and plain values) to ``f``.

    ``f`` is a path or a binary file object. A path is written atomically: to a
    temporary file in the same directory, flushed and fsynced, then renamed over
    the target, so a crash never leaves a half-written checkpoint.

    Raises:
        TypeError: for tensors of an unsupported dtype.
        OSError: if the file cannot be written.
    """
    data = _serialize(obj)
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        # mkstemp makes the file 0600; give it the permissions open() would (0666 minus umask).
        os.fchmod(fd, 0o666 & ~_current_umask())
        with os.fdopen(fd, "wb") as out:
            out.write(data)
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


def _read_all(f) -> tuple[bytes, str]:
    if hasattr(f, "read"):
        return f.read(), getattr(f, "name", "<file object>")
    path = os.fspath(f)
    with open(path, "rb") as handle:
        return handle.read(), path


def _parse(data: bytes, name: str):
    if len(data) < _HEAD.size or data[:8] != MAGIC:
        hint = ""
        if data[:2] == b"PK" or data[:1] == b"\x80":
            hint = " (it looks like a PyTorch file: load it with torch and re-save the tensors)"
        raise RuntimeError(f"{name}: not a distrib checkpoint (bad magic bytes){hint}")
    _, version, header_len = _HEAD.unpack_from(data)
    if version != FORMAT_VERSION:
        raise RuntimeError(f"{name}: unsupported checkpoint format version {version}")
    body_start = _HEAD.size
    try:
        header = json.loads(data[body_start:body_start + header_len])
        payload_bytes = int(header["payload_bytes"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RuntimeError(f"{name}: checkpoint is corrupt or truncated (unreadable header: {exc})") from None
    expected = _HEAD.size + header_len + payload_bytes + _TAIL.size
    if len(data) != expected:
        raise RuntimeError(
            f"{name}: checkpoint is truncated or corrupt: expected {expected} bytes, found {len(data)}"
        )
    body_end = body_start + header_len + payload_bytes
    crc, end_magic = _TAIL.unpack_from(data, body_end)
    if end_magic != END_MAGIC or crc != zlib.crc32(data[body_start:body_end]):
        raise RuntimeError(f"{name}: checkpoint is corrupt (checksum mismatch)")
    return header, memoryview(data)[body_start + header_len:body_end]


class _Decoder:
    def __init__(self, header, payload, map_location, weights_only, name) -> None:
        self.entries = header["tensors"]
        self.payload = payload
        self.map_location = map_location
        self.weights_only = weights_only
        self.name = name
        self.cache: dict = {}

    def decode(self, node):
        if not isinstance(node, dict):
            if isinstance(node, list):
                raise RuntimeError(f"{self.name}: checkpoint is corrupt (bare list in header)")
            return node
        kind = node.get("t")
        if kind == "int":
            return int(node["v"])
        if kind == "float":
            return float(node["v"])
        if kind in ("list", "tuple"):
            items = [self.decode(v) for v in node["v"]]
            return items if kind == "list" else tuple(items)
        if kind in ("dict", "odict"):
            pairs = zip((self.decode(k) for k in node["k"]), (self.decode(v) for v in node["v"]))
            return dict(pairs) if kind == "dict" else collections.OrderedDict(pairs)
        if kind == "tensor":
            return self._tensor(node["i"])
        if kind == "ndarray":
            return self._array(node["i"])
        if kind == "bytes":
            return base64.b64decode(node["v"])
        if kind == "dtype":
            return _dtype.as_dtype(node["v"])
        if kind == "device":
            return _device_cls(node["v"])
        if kind == "pickle":
            return self._unpickle(node)
        raise RuntimeError(f"{self.name}: checkpoint is corrupt (unknown node type {kind!r})")

    def _array(self, i) -> np.ndarray:
        entry = self.entries[i]
        dtype = np.dtype(entry["dtype"])
        _dtype.from_numpy_dtype(dtype)
        chunk = self.payload[entry["offset"]:entry["offset"] + entry["nbytes"]]
        return np.frombuffer(chunk, dtype=dtype).reshape(entry["shape"]).copy()

    def _tensor(self, i):
        if i in self.cache:
            return self.cache[i]
        entry = self.entries[i]
        t = _creation.from_numpy(self._array(i))
        target = _resolve_location(entry.get("device", "cpu"), self.map_location)
        if callable(target):
            t = target(t, entry.get("device", "cpu"))
        elif target != "cpu":
            if target.startswith("cuda") and not _backend.cuda_available():
                raise RuntimeError(
                    f"{self.name}: attempting to deserialize a tensor saved on {entry.get('device')} "
                    "but CUDA is not available. On a CPU-only machine, load it with "
                    "map_location='cpu'."
                )
            t = t.to(target)
        if entry.get("requires_grad"):
            t.requires_grad_(True)
        self.cache[i] = t
        return t

    def _unpickle(self, node):
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed: {self.name} contains a pickled object of type "
                f"{node.get('type')!r}, and unpickling it could execute arbitrary code. "
                "Re-run load with weights_only=False only if you trust the source of the file."
            )
        return pickle.loads(base64.b64decode(node["v"]))


def _resolve_location(saved: str, map_location):
    if map_location is None:
        return saved
    if isinstance(map_location, dict):
        return map_location.get(saved, saved)
    if callable(map_location) and not isinstance(map_location, (str, _device_cls)):
        return map_location
    return str(_device_cls(map_location))


def load(f, map_location=None, weights_only: bool = True):
    """Read an object written by ``save``.

    ``map_location`` moves tensors: a device or string, a dict mapping saved to
    new locations, or ``fn(tensor, saved_location) -> tensor``.

    Raises:
        RuntimeError: naming the file when it is not a checkpoint, or is truncated or corrupt.
        pickle.UnpicklingError: when the file holds arbitrary Python objects and
            ``weights_only`` is True (the default); loading those may execute code.
        FileNotFoundError: if the path does not exist.
    """
    data, name = _read_all(f)
    header, payload = _parse(data, name)
    decoder = _Decoder(header, payload, map_location, weights_only, name)
    try:
        return decoder.decode(header["tree"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RuntimeError(f"{name}: checkpoint is corrupt ({type(exc).__name__}: {exc})") from None
