"""``save`` and ``load``: our safe, atomic checkpoint format, and the formats we share.

``load`` also reads ``torch.save`` files, zip and legacy (``_torch_format``, through the
allow-listed unpickler of ``_torch_pickle``), and ``.safetensors`` files (``_safetensors``);
``save`` writes them with ``format="torch"`` / ``format="safetensors"``. What follows is our format.

Unlike ``torch.save``, the format is not a pickle. A file is::

    b"DISTRIBT" | u32 version | u64 header length | header (JSON) | storage bytes | u32 crc32 | b"TBIRTSID"

The JSON header describes the object tree (dicts, lists, tuples, sets, sizes, numbers,
strings, bytes, None, dtypes, devices: what ``torch.load(weights_only=True)`` accepts), each
storage's byte range, and for each tensor its storage, storage offset, shape and strides (in
elements), dtype, device, ``requires_grad`` and whether it is an ``nn.Parameter``. Loading it
can never run code. Objects of any other type are stored as pickles; loading a file that
contains one needs ``weights_only=False``, an explicit statement that the caller trusts the
file. Integrity is checked with the length fields and a CRC-32, so a truncated or corrupt
file is an error, not garbage.

Note [Views in checkpoints]
---------------------------
As ``torch.save`` does, version 2 writes each storage (the memory a tensor is a view of,
``_backend.storage_of``) once, whole, however little of it the saved tensors use: a small slice
of a huge array takes the huge array with it (``clone()`` it before saving to write only the
slice). Loading rebuilds one array per storage and each tensor (and numpy array) as a view of
it, so views, transposes, expanded tensors and tied parameters share memory again, with their
saved offsets and strides; a view with a zero stride comes back read-only, as ``expand``'s
does. Tensors moved to another device by ``map_location`` are copied one by one, so they no
longer share memory. The geometry read from the file is checked against its storage's length
before any view is made. A tensor the header cannot place in its storage (a negative stride,
an offset that is not a whole number of elements) is written as its own storage. Version 1
(each tensor's elements on their own, no sharing) is still read.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import pickle
import struct
import zlib

import numpy as np

from . import _backend, _checkpoint_io, _creation, _dispatch, _dtype, _safetensors, _torch_format, ops
from ._device import device as _device_cls
from ._torch_misc import Size
from ._torch_pickle import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals",
           "read_safetensors_metadata"]

read_safetensors_metadata = _safetensors.read_metadata

MAGIC, END_MAGIC = b"DISTRIBT", b"TBIRTSID"
FORMAT_VERSION = 2
_HEAD = struct.Struct("<8sIQ")
_TAIL = struct.Struct("<I8s")


class _Encoder:
    def __init__(self) -> None:
        self.tensors: list = []
        self.storages: list = []
        self.blobs: list[np.ndarray] = []  # each storage's memory, as bytes (uint8), in file order
        self.offset = 0
        self._tensor_ids: dict = {}
        self._storage_ids: dict = {}

    def encode(self, obj):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj if abs(obj) < 2 ** 53 else {"t": "int", "v": str(obj)}
        if isinstance(obj, float):  # (numpy's float64 too, whose repr is "np.float64(...)")
            return {"t": "float", "v": repr(float(obj))}
        if _dispatch.is_tensor(obj):
            return {"t": "tensor", "i": self._add_tensor(obj)}
        if isinstance(obj, np.ndarray):
            return {"t": "ndarray", "i": self._add_array(obj, _backend.cpu_backend, "cpu")}
        if isinstance(obj, np.generic):
            return self.encode(obj.item())
        if type(obj) in (bytes, bytearray):
            return {"t": type(obj).__name__, "v": base64.b64encode(obj).decode()}
        if isinstance(obj, _dtype.dtype):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, _device_cls):
            return {"t": "device", "v": str(obj)}
        if type(obj) in (dict, collections.OrderedDict):
            node = {"t": "dict" if type(obj) is dict else "odict",
                    "k": [self.encode(k) for k in obj], "v": [self.encode(v) for v in obj.values()]}
            if hasattr(obj, "_metadata"):  # a state dict's module versions, which loading reads
                node["m"] = self.encode(obj._metadata)
            return node
        if type(obj) in (list, tuple, set, Size):
            return {"t": type(obj).__name__.lower(), "v": [self.encode(v) for v in obj]}
        if type(obj) is complex:
            return {"t": "complex", "v": [repr(obj.real), repr(obj.imag)]}
        return {"t": "pickle", "type": f"{type(obj).__module__}.{type(obj).__qualname__}",
                "v": base64.b64encode(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)).decode()}

    def _add_array(self, array, backend, device: str) -> int:
        """Record ``array`` (of ``backend``, on ``device``) as a view of its storage (Note [Views in
        checkpoints]); the index of its entry."""
        _dtype.from_numpy_dtype(array.dtype)
        storage, start = _backend.storage_of(backend.xp, array)
        placement = _placement(array, storage, start)
        if placement is None:
            array = np.array(backend.to_numpy(array), order="C")  # keeps 0-d arrays 0-d
            storage_index = self._new_storage(array)
            placement = (0, tuple(s // array.itemsize for s in array.strides))
        else:
            storage_index = self._storage_index(storage, backend, device)
        self.tensors.append({"dtype": _dtype.storage_name(array.dtype), "storage": storage_index,
                             "storage_offset": placement[0], "shape": list(array.shape),
                             "stride": list(placement[1])})
        return len(self.tensors) - 1

    def _storage_index(self, storage, backend, device: str) -> int:
        key = (device, backend.data_ptr(storage), storage.nbytes)
        if key not in self._storage_ids:
            self._storage_ids[key] = self._new_storage(backend.to_numpy(storage))
        return self._storage_ids[key]

    def _new_storage(self, host: np.ndarray) -> int:
        memory = host.reshape(-1, order="A").view(np.uint8)  # its bytes in memory order (C or F)
        self.storages.append({"offset": self.offset, "nbytes": memory.nbytes})
        self.blobs.append(memory)
        self.offset += memory.nbytes
        return len(self.storages) - 1

    def _add_tensor(self, t) -> int:
        found = self._tensor_ids.get(id(t))
        if found is not None:
            return found
        index = self._add_array(t._data, t._device.backend, str(t._device))
        self.tensors[index].update(device=str(t._device), requires_grad=t.requires_grad)
        if _checkpoint_io.is_parameter(t):
            self.tensors[index]["parameter"] = True
        self._tensor_ids[id(t)] = index
        return index


def _placement(array, storage, start: int) -> tuple[int, tuple[int, ...]] | None:
    """``(offset, strides)`` in elements of ``array`` in ``storage``, whose memory it views from
    ``start`` bytes in; None when the header cannot describe it so (Note [Views in checkpoints])."""
    placement = _checkpoint_io.element_placement(array, start)
    if placement is None or not (storage.flags.c_contiguous or storage.flags.f_contiguous):
        return None
    offset, strides = placement
    extent = 0 if array.size == 0 else 1 + sum((n - 1) * s for n, s in zip(array.shape, strides))
    return placement if (offset + extent) * array.itemsize <= storage.nbytes else None


def _serialize(obj) -> list:
    """The file's bytes for ``obj``, as pieces to write in order (the storages are not copied)."""
    encoder = _Encoder()
    tree = encoder.encode(obj)
    header = json.dumps({"tree": tree, "storages": encoder.storages, "tensors": encoder.tensors,
                         "payload_bytes": encoder.offset}).encode()
    body = [header, *map(memoryview, encoder.blobs)]
    crc = 0
    for piece in body:
        crc = zlib.crc32(piece, crc)
    return [_HEAD.pack(MAGIC, FORMAT_VERSION, len(header)), *body, _TAIL.pack(crc, END_MAGIC)]


def _write_pieces(out, pieces: list) -> None:
    for piece in pieces:
        out.write(piece)


FORMATS = ("distrib", "torch", "safetensors")


def save(obj, f, format: str | None = None, *, metadata: dict[str, str] | None = None) -> None:
    """Write ``obj`` (nested dicts/lists/tuples of tensors and plain values) to ``f``.

    ``f`` is a path or a binary file object. A path is written atomically: to a
    temporary file in the same directory, flushed and fsynced, then renamed over
    the target, so a crash never leaves a half-written checkpoint.

    ``format`` is ``"distrib"`` (the default; any object tree, checksummed),
    ``"torch"`` (what ``torch.save`` writes; ``torch.load(weights_only=True)`` reads it)
    or ``"safetensors"`` (a flat ``{name: tensor}`` dict, with optional ``{str: str}``
    ``metadata``); a path ending in ``.safetensors`` defaults to the latter.

    >>> import tensor, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.pt")
    >>> tensor.save({"w": tensor.ones(2)}, path, format="torch")
    >>> tensor.load(path)["w"]
    tensor([1., 1.])

    Raises:
        TypeError: for tensors of an unsupported dtype, or objects the format cannot hold.
        ValueError: for an unknown format, or metadata with a format other than safetensors.
        RuntimeError: if the path's directory does not exist or the path is a directory (nothing
            is written).
        OSError: if the file cannot be written.
    """
    if format is None:
        format = "safetensors" if str(getattr(f, "name", f)).endswith(".safetensors") else "distrib"
    if format not in FORMATS:
        raise ValueError(f"unknown checkpoint format {format!r}; choose one of {', '.join(FORMATS)}")
    if metadata is not None and format != "safetensors":
        raise ValueError("metadata is stored only by format='safetensors'")
    if format == "torch":
        _torch_format.save(obj, f)
    elif format == "safetensors":
        _safetensors.save(obj, f, metadata)
    elif hasattr(f, "write"):
        _write_pieces(f, _serialize(obj))
    else:
        pieces = _serialize(obj)
        _checkpoint_io.write_atomically(f, lambda out: _write_pieces(out, pieces))


def _read_all(f) -> tuple[bytes, str]:
    if hasattr(f, "read"):
        return f.read(), getattr(f, "name", "<file object>")
    path = os.fspath(f)
    with open(path, "rb") as handle:
        return handle.read(), path


def _parse(data: bytes, name: str):
    if 0 < len(data) < _HEAD.size and MAGIC.startswith(bytes(data[: len(MAGIC)])):  # a write cut short
        raise RuntimeError(f"{name}: checkpoint is truncated: {len(data)} bytes, shorter than its header")
    if len(data) < _HEAD.size or data[:8] != MAGIC:
        raise RuntimeError(f"{name}: not a distrib checkpoint (bad magic bytes)")
    _, version, header_len = _HEAD.unpack_from(data)
    if version not in (1, FORMAT_VERSION):
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
    view = memoryview(data)  # slices of it are not copies (a bytes slice of the payload was)
    if end_magic != END_MAGIC or crc != zlib.crc32(view[body_start:body_end]):
        raise RuntimeError(f"{name}: checkpoint is corrupt (checksum mismatch)")
    return header, version, view[body_start + header_len:body_end]


_SEQUENCES = {"list": list, "tuple": tuple, "set": set, "size": Size}


class _Decoder:
    def __init__(self, header, version, payload, map_location, weights_only, name) -> None:
        self.entries = header["tensors"]
        self.storage_entries = header.get("storages", [])
        self.version = version
        self.payload = payload
        self.map_location = map_location
        self.weights_only = weights_only
        self.name = name
        self.cache: dict = {}
        self.storages: dict[int, np.ndarray] = {}

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
        if kind in _SEQUENCES:
            return _SEQUENCES[kind](self.decode(v) for v in node["v"])
        if kind in ("dict", "odict"):
            pairs = zip((self.decode(k) for k in node["k"]), (self.decode(v) for v in node["v"]))
            if kind == "dict":
                return dict(pairs)
            mapping = collections.OrderedDict(pairs)
            if "m" in node:
                mapping._metadata = self.decode(node["m"])
            return mapping
        if kind == "tensor":
            return self._tensor(node["i"])
        if kind == "ndarray":
            return self._array(node["i"])
        if kind in ("bytes", "bytearray"):
            data = base64.b64decode(node["v"])
            return data if kind == "bytes" else bytearray(data)
        if kind == "complex":
            return complex(float(node["v"][0]), float(node["v"][1]))
        if kind == "dtype":
            return _dtype.as_dtype(node["v"])
        if kind == "device":
            return _device_cls(node["v"])
        if kind == "pickle":
            return self._unpickle(node)
        raise RuntimeError(f"{self.name}: checkpoint is corrupt (unknown node type {kind!r})")

    def _array(self, i) -> np.ndarray:
        entry = self.entries[i]
        dtype = _dtype.from_storage_name(entry["dtype"])
        _dtype.from_numpy_dtype(dtype)
        if self.version == 1:  # each array's own elements
            chunk = self.payload[entry["offset"]:entry["offset"] + entry["nbytes"]]
            return np.frombuffer(chunk, dtype=dtype).reshape(entry["shape"]).copy()
        return self._view(entry, dtype)

    def _view(self, entry: dict, dtype: np.dtype) -> np.ndarray:
        """The array ``entry`` describes, as a view of its storage (Note [Views in checkpoints]).

        Raises:
            RuntimeError: naming the file when the geometry is malformed or reaches outside the storage.
        """
        storage = self._storage(entry["storage"])
        shape, stride = self._ints(entry["shape"], "shape"), self._ints(entry["stride"], "stride")
        (offset,) = self._ints([entry["storage_offset"]], "storage offset")
        item = dtype.itemsize
        try:
            ops.strided.check_geometry(shape, stride, offset, item, storage.nbytes)
        except RuntimeError as exc:
            raise RuntimeError(f"{self.name}: checkpoint is corrupt ({exc})") from None
        if offset * item > storage.nbytes:  # (an empty tensor, which check_geometry lets through)
            raise RuntimeError(f"{self.name}: checkpoint is corrupt (storage offset {offset} is past the end "
                               f"of a storage of {storage.nbytes} bytes)")
        view = _backend.storage_view(np, storage, shape, tuple(s * item for s in stride), offset * item, dtype)
        if any(s == 0 and n > 1 for n, s in zip(shape, stride)):
            view.flags.writeable = False  # an expanded tensor: in-place writes raise, as after expand
        return view

    def _storage(self, index) -> np.ndarray:
        """Storage ``index``: its bytes, copied out of the file once.

        Raises:
            RuntimeError: naming the file for an unknown storage or a byte range outside the payload.
        """
        (index,) = self._ints([index], "storage index")
        if index not in self.storages:
            if not 0 <= index < len(self.storage_entries):
                raise RuntimeError(f"{self.name}: checkpoint is corrupt (no storage {index})")
            start, nbytes = self._ints([self.storage_entries[index][key] for key in ("offset", "nbytes")],
                                       "storage byte range")
            if start < 0 or nbytes < 0 or start + nbytes > len(self.payload):
                raise RuntimeError(f"{self.name}: checkpoint is corrupt (storage {index}: {nbytes} bytes at "
                                   f"{start} do not fit in the {len(self.payload)} bytes of storages)")
            self.storages[index] = np.frombuffer(self.payload[start:start + nbytes], np.uint8).copy()
        return self.storages[index]

    def _ints(self, values, what: str) -> tuple[int, ...]:
        if not isinstance(values, list) or any(type(v) is not int for v in values):
            raise RuntimeError(f"{self.name}: checkpoint is corrupt ({what} {values!r} is not a list of integers)")
        return tuple(values)

    def _tensor(self, i):
        if i in self.cache:
            return self.cache[i]
        entry = self.entries[i]
        t = _checkpoint_io.place(_creation.from_numpy(self._array(i)), entry.get("device", "cpu"),
                                 self.map_location, self.name)
        if entry.get("parameter"):
            t = _checkpoint_io.parameter_type()(t, bool(entry.get("requires_grad")))
        elif entry.get("requires_grad"):
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


def load(f, map_location=None, weights_only: bool = True, mmap: bool = False):
    """Read a checkpoint: our own format, a ``torch.save`` file (zip or legacy) or a ``.safetensors`` file.

    The format is recognised from the file's first bytes. ``map_location`` moves tensors: a
    device or string, a dict mapping saved to new locations, or ``fn(tensor, saved_location)
    -> tensor`` (for PyTorch files the tensor is the whole storage, as torch passes storages).

    Loading never runs code from the file unless ``weights_only=False``. A PyTorch file's
    pickle may use only the globals ``torch.load(weights_only=True)`` allows, plus those
    added with ``add_safe_globals``/``safe_globals``. ``mmap=True`` (PyTorch zip files, from a
    path) maps the storages copy-on-write instead of reading them.

    Raises:
        RuntimeError: naming the file when it is not a checkpoint, or is truncated or corrupt;
            for ``mmap=True`` with a legacy (non-zip) PyTorch file.
        pickle.UnpicklingError: when the file needs a global that is not allowed (named in
            the message, with how to allow it) and ``weights_only`` is True.
        TypeError: when a PyTorch file holds a dtype distrib does not have (named).
        ValueError: for ``mmap=True`` with a file object, or a file object that cannot seek.
        FileNotFoundError: if the path does not exist.
    """
    head = _peek(f)
    if _torch_format.is_torch_zip(head):
        return _torch_format.load(f, map_location, weights_only, mmap)
    if head[:8] != MAGIC and _safetensors.looks_like_safetensors(head):
        return _safetensors.load(f, map_location)
    data, name = _read_all(f)
    if _torch_format.is_pickle(head):
        return _torch_format.load_legacy(data, name, map_location, weights_only, mmap)
    header, version, payload = _parse(data, name)
    decoder = _Decoder(header, version, payload, map_location, weights_only, name)
    try:
        return decoder.decode(header["tree"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RuntimeError(f"{name}: checkpoint is corrupt ({type(exc).__name__}: {exc})") from None


def _peek(f) -> bytes:
    if hasattr(f, "read"):
        if not (hasattr(f, "seekable") and f.seekable()):
            raise ValueError("load needs a seekable file object (or a path); wrap a stream in io.BytesIO(f.read())")
        position = f.tell()
        head = f.read(16)
        f.seek(position)
        return head
    with open(os.fspath(f), "rb") as handle:
        return handle.read(16)
