"""PyTorch's checkpoint format (``torch.save`` since 1.6), read and written without torch.

A file is a zip archive of uncompressed entries under one directory (``archive/``)::

    data.pkl            the object tree, pickled; each storage is a persistent id
                        ("storage", torch.FloatStorage, key, location, numel)
    byteorder           "little" or "big": the byte order of every storage
    data/<key>          one storage's raw bytes, aligned to 64 bytes in the file
    version, .data/version, .format_version, .storage_alignment, .data/serialization_id

Tensors are rebuilt as strided numpy views of their storage, so tensors that shared a
storage in torch share memory here. The pickle goes through the allow-list of
``_torch_pickle`` (Note [Weights-only unpickling]).

The legacy format (``_use_new_zipfile_serialization=False``) is read too: five pickles in a
row (a magic number, the protocol version 1001, system info, the object tree whose storage
ids also carry a view slot, the sorted storage keys), then each storage as a little-endian
int64 element count followed by its little-endian bytes.
"""

from __future__ import annotations

import contextlib
import io
import mmap as _mmap
import os
import pickle
import secrets
import struct
import zipfile
from collections.abc import Generator

import numpy as np

from . import _checkpoint_io, _creation, _dispatch, _dtype
from ._torch_pickle import (
    STORAGE_DTYPES,
    Global,
    PickleWriter,
    RefusedGlobal,
    SafeUnpickler,
    TorchDtype,
    builtin_table,
    storage_types,
)

__all__ = ["load", "load_legacy", "save", "is_torch_zip", "is_pickle"]

ALIGNMENT = 64
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
LEGACY_MAGIC, LEGACY_PROTOCOL = 0x1950A86A20F9469CFC6C, 1001


def is_torch_zip(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a zip archive (a ``torch.save`` file)."""
    return head[:4] == b"PK\x03\x04"


def is_pickle(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a pickle of protocol 2 or above: a legacy
    ``torch.save`` file, or another pickle, which ``load_legacy`` refuses as torch does."""
    return head[:1] == b"\x80"


def _our_dtype(torch_name: str, where: str) -> _dtype.dtype:
    found = _dtype._NAMES.get(torch_name)
    if found is None:
        raise TypeError(
            f"{where}: the checkpoint holds a tensor of dtype torch.{torch_name}, which distrib does not "
            "have; convert it in torch before saving (e.g. t.float() or t.to(torch.int64))")
    return found


@contextlib.contextmanager
def _corruption_named(name: str) -> Generator[None, None, None]:
    """Turns the errors a malformed pickle raises into a RuntimeError naming the file."""
    try:
        yield
    except RefusedGlobal:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, KeyError, IndexError,
            struct.error) as exc:
        raise RuntimeError(f"{name}: checkpoint is corrupt ({type(exc).__name__}: {exc})") from None


class _Reader:
    """Rebuilds the tensors of one checkpoint over its storages; a subclass says where a storage's
    bytes come from (``_storage_bytes``)."""

    def __init__(self, map_location, name: str) -> None:
        self.map_location, self.name = map_location, name
        self.storages: dict[str, tuple] = {}

    def persistent_load(self, pid):
        """The storage a pickle's persistent id names, read (or mapped) once and placed per map_location.

        Raises:
            RuntimeError: for an unknown persistent id or a missing, truncated or short entry.
            TypeError: for a storage of a dtype distrib does not have (named).
        """
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise RuntimeError(f"{self.name}: checkpoint is corrupt (unknown persistent id {pid!r})")
        _, storage_type, key, location, numel = pid
        if key not in self.storages:
            dtype = _our_dtype(getattr(storage_type, "dtype_name", "?"), self.name)
            array = self._storage_bytes(str(key), dtype.numpy, int(numel))
            placed = _checkpoint_io.place(_creation.from_numpy(array), str(location), self.map_location, self.name)
            moved = str(placed.device) != "cpu"
            self.storages[key] = (array if moved else placed._data, placed.device if moved else None)
        return self.storages[key]

    def _storage_bytes(self, key: str, dtype: np.dtype, numel: int) -> np.ndarray:
        """The ``numel`` elements of ``dtype`` of storage ``key``, as a 1-d array."""
        raise NotImplementedError

    def rebuild(self, storage, offset, size, stride, requires_grad, hooks=None, metadata=None, dtype=None):
        """torch._utils._rebuild_tensor_v2 (and v3 with ``dtype``): a strided view of ``storage``."""
        array, device = storage
        if dtype is not None:
            name = dtype.name if isinstance(dtype, (_dtype.dtype, TorchDtype)) else str(dtype)
            array = array.view(_our_dtype(name, self.name).numpy)
        size, stride, offset = tuple(int(n) for n in size), tuple(int(n) for n in stride), int(offset)
        self._check_bounds(array.size, offset, size, stride)
        view = np.ndarray(size, array.dtype, array, offset * array.itemsize, [s * array.itemsize for s in stride])
        t = _creation.from_numpy(view)
        if metadata:
            t = self._apply_metadata(t, metadata)
        if device is not None:
            t = t.to(device)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def _apply_metadata(self, t, metadata: dict):
        """torch's conjugate and negative bits: the storage holds the values before they apply.
        Applying them makes a copy, which no longer shares memory with the storage's other views."""
        unknown = sorted(key for key, value in metadata.items() if value and key not in ("conj", "neg"))
        if unknown:
            raise NotImplementedError(f"{self.name}: the checkpoint holds a tensor with metadata {unknown}, "
                                      "which distrib cannot apply")
        if metadata.get("neg"):
            t = -t
        return t.conj() if metadata.get("conj") else t

    def _check_bounds(self, numel: int, offset: int, size: tuple, stride: tuple) -> None:
        # A hostile file must not make a view reach outside its storage.
        bad = len(size) != len(stride) or offset < 0 or any(n < 0 for n in size + stride)
        extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
        if bad or offset + extent > numel:
            raise RuntimeError(f"{self.name}: checkpoint is corrupt (a tensor of size {list(size)}, stride "
                               f"{list(stride)} at offset {offset} does not fit its storage of {numel} elements)")

    def table(self) -> dict:
        """The allow-list for this archive: torch's weights-only globals bound to this reader."""
        def v3(storage, offset, size, stride, requires_grad, hooks, dtype, metadata=None):
            return self.rebuild(storage, offset, size, stride, requires_grad, metadata=metadata, dtype=dtype)

        def parameter(data, requires_grad=True, hooks=None, state=None):
            return _checkpoint_io.parameter_type()(data, bool(requires_grad))

        def from_type_v2(func, new_type, args, state):
            if getattr(new_type, "name", None) != "torch.Tensor" and new_type is not parameter:
                raise NotImplementedError(f"{self.name}: tensor subclass {new_type!r} cannot be rebuilt")
            return func(*args)
        return builtin_table({"_rebuild_tensor_v2": self.rebuild, "_rebuild_tensor_v3": v3,
                              "_rebuild_parameter": parameter, "_rebuild_parameter_with_state": parameter,
                              "_rebuild_from_type_v2": from_type_v2,
                              "_rebuild_device_tensor_from_cpu_tensor": lambda t, *_: t})

    def unpickle(self, file, weights_only: bool):
        """Unpickle the object tree in ``file`` with this reader's allow-list.

        Raises:
            RefusedGlobal: for a global that is not allowed (with ``weights_only``).
            RuntimeError: naming the file when the pickle is corrupt or truncated.
        """
        unpickler = SafeUnpickler(file, self.table(), self.persistent_load, trusted=not weights_only)
        with _corruption_named(self.name):
            return unpickler.load()


class _ZipReader(_Reader):
    """Reads the storages of one zip archive (from its entries, or from a mapping of the file)."""

    def __init__(self, zf: zipfile.ZipFile, handle, prefix: str, mapped, map_location, name: str) -> None:
        super().__init__(map_location, name)
        self.zf, self.handle, self.prefix, self.mapped = zf, handle, prefix, mapped
        order = zf.read(prefix + "byteorder").decode() if prefix + "byteorder" in zf.NameToInfo else "little"
        self.swap = order != ("little" if np.little_endian else "big")

    def _storage_bytes(self, key: str, dtype: np.dtype, numel: int) -> np.ndarray:
        try:
            info = self.zf.getinfo(f"{self.prefix}data/{key}")
        except KeyError:
            raise RuntimeError(f"{self.name}: checkpoint is corrupt (no entry for storage {key})") from None
        if info.file_size != numel * dtype.itemsize:
            raise RuntimeError(f"{self.name}: checkpoint is corrupt (storage {key} has {info.file_size} bytes, "
                               f"expected {numel} x {dtype.itemsize})")
        wire = dtype.newbyteorder() if self.swap else dtype
        if info.compress_type != zipfile.ZIP_STORED:
            return np.frombuffer(self.zf.read(info), wire).astype(dtype)
        offset = self._data_offset(info)
        if self.mapped is not None:
            array = np.frombuffer(self.mapped, wire, count=numel, offset=offset)
            return array.astype(dtype) if self.swap else array
        array = np.empty(numel, wire)
        self.handle.seek(offset)
        # through a uint8 view: memoryview refuses the ml_dtypes types (bfloat16, float8)
        if self.handle.readinto(memoryview(array.reshape(-1).view(np.uint8))) != info.file_size:
            raise RuntimeError(f"{self.name}: checkpoint is truncated (storage {key})")
        return array.astype(dtype) if self.swap else array

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        self.handle.seek(info.header_offset)
        header = _LOCAL_HEADER.unpack(self.handle.read(_LOCAL_HEADER.size))
        if header[0] != b"PK\x03\x04":
            raise RuntimeError(f"{self.name}: checkpoint is corrupt (bad zip entry header for {info.filename})")
        return info.header_offset + _LOCAL_HEADER.size + header[-2] + header[-1]


def _prefix(zf: zipfile.ZipFile, name: str) -> str:
    for entry in zf.namelist():
        if entry.endswith("data.pkl") and entry.count("/") == 1:
            return entry[:-len("data.pkl")]
    if any(entry.endswith("constants.pkl") for entry in zf.namelist()):
        raise RuntimeError(f"{name}: this is a TorchScript archive (torch.jit.save); save a state dict instead")
    raise RuntimeError(f"{name}: a zip file, but not a PyTorch checkpoint (no data.pkl)")


def load(f, map_location=None, weights_only: bool = True, mmap: bool = False):
    """Read a ``torch.save`` zip file; see ``tensor.serialization.load``."""
    if hasattr(f, "read"):
        if mmap:
            raise ValueError("mmap=True needs a path, not a file object")
        name, handle = getattr(f, "name", "<file object>"), io.BytesIO(f.read())
    else:
        name = os.fspath(f)
        handle = open(name, "rb")  # noqa: SIM115 - closed below; mmap keeps its own reference
    with handle:
        mapped = _mmap.mmap(handle.fileno(), 0, access=_mmap.ACCESS_COPY) if mmap else None
        try:
            zf = zipfile.ZipFile(handle)
        except zipfile.BadZipFile as exc:
            raise RuntimeError(f"{name}: not a PyTorch checkpoint (a corrupt or truncated zip file: {exc})") from None
        with zf:
            prefix = _prefix(zf, name)
            reader = _ZipReader(zf, handle, prefix, mapped, map_location, name)
            return reader.unpickle(io.BytesIO(zf.read(prefix + "data.pkl")), weights_only)


# ------------------------------------------------------------------ the legacy format
class _LegacyReader(_Reader):
    """Serves the storages that ``load_legacy`` read from after the object tree."""

    def __init__(self, arrays: dict[str, np.ndarray], map_location, name: str) -> None:
        super().__init__(map_location, name)
        self.arrays = arrays

    def persistent_load(self, pid):
        """A legacy storage id: the zip format's, plus a view slot torch has written as None since 0.4.

        Raises:
            RuntimeError: for another persistent id, or a storage view.
        """
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[5] is None):
            raise RuntimeError(f"{self.name}: checkpoint is corrupt or too old (persistent id {pid!r}; "
                               "storage views of PyTorch < 0.4 are not supported)")
        return super().persistent_load(pid[:5])

    def _storage_bytes(self, key: str, dtype: np.dtype, numel: int) -> np.ndarray:
        array = self.arrays.get(key)
        if array is None or array.dtype != dtype or array.size != numel:
            raise RuntimeError(f"{self.name}: checkpoint is corrupt (storage {key} is missing or does not "
                               f"hold {numel} elements of {dtype})")
        return array


class _Inert:
    """What ``_StorageScanner`` makes of every global and object: it accepts any call or state and
    does nothing, so walking a hostile pickle runs none of its code."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __call__(self, *args, **kwargs) -> _Inert:
        return _Inert()

    def __setstate__(self, state) -> None:
        pass

    def __setitem__(self, key, value) -> None:
        pass

    def append(self, item) -> None:
        pass

    def extend(self, items) -> None:
        pass


class _StorageScanner(pickle.Unpickler):
    """Walks a legacy object tree only to learn each storage's dtype: the storage bytes follow the
    tree, so they must be read before it can be rebuilt. Nothing is imported or called."""

    def __init__(self, file, name: str) -> None:
        super().__init__(file)
        self.dtypes: dict[str, np.dtype] = {}
        self.name, self._types = name, storage_types()

    def find_class(self, module: str, name: str):
        return self._types.get(f"{module}.{name}", _Inert)

    def persistent_load(self, pid):
        if isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage":
            dtype = _our_dtype(getattr(pid[1], "dtype_name", "?"), self.name).numpy
            self.dtypes.setdefault(str(pid[2]), dtype)
        return _Inert()


class _HeaderReader(_Reader):
    """Reads a legacy file's plain-value pickles (magic number, protocol, system info, storage keys):
    no global is allowed in them, whatever ``weights_only`` says, and no storage."""

    def table(self) -> dict:
        return {}

    def persistent_load(self, pid):
        raise RuntimeError(f"{self.name}: checkpoint is corrupt (a storage id outside the object tree)")


def load_legacy(data: bytes, name: str, map_location=None, weights_only: bool = True, mmap: bool = False):
    """Read a legacy (non-zip) ``torch.save`` file held in ``data``; see ``tensor.serialization.load``.

    Raises:
        RuntimeError: for ``mmap=True`` (as torch), a pickle that is not a PyTorch checkpoint
            (as torch: "magic number"), or a corrupt or truncated file.
        RefusedGlobal: for a global that is not allowed, in any of the file's pickles.
    """
    if mmap:
        raise RuntimeError(f"{name}: mmap=True needs a file saved in torch.save's default zip format "
                           "(this one was saved with _use_new_zipfile_serialization=False); re-save it")
    stream, header = io.BytesIO(data), _HeaderReader(None, name)
    if header.unpickle(stream, weights_only=True) != LEGACY_MAGIC:
        raise RuntimeError(f"{name}: invalid magic number: a pickle, but not a PyTorch checkpoint")
    protocol = header.unpickle(stream, weights_only=True)
    if protocol != LEGACY_PROTOCOL:
        raise RuntimeError(f"{name}: legacy PyTorch checkpoint of unsupported protocol version {protocol!r}")
    header.unpickle(stream, weights_only=True)  # system info; storages are little-endian whatever it says
    tree_start = stream.tell()
    scanner = _StorageScanner(stream, name)
    with _corruption_named(name):
        scanner.load()
    keys = header.unpickle(stream, weights_only=True)
    arrays = _read_legacy_storages(data, stream.tell(), keys, scanner.dtypes, name)
    stream.seek(tree_start)
    return _LegacyReader(arrays, map_location, name).unpickle(stream, weights_only)


def _read_legacy_storages(data: bytes, offset: int, keys, dtypes: dict[str, np.dtype], name: str):
    """The storages that follow the key list at ``offset``: ``{key: array}``."""
    if not isinstance(keys, list):
        raise RuntimeError(f"{name}: checkpoint is corrupt (no list of storage keys after the object tree)")
    arrays = {}
    for key in map(str, keys):
        if key not in dtypes:
            raise RuntimeError(f"{name}: checkpoint is corrupt (storage {key} is not used by the object tree)")
        count = struct.unpack_from("<q", data, offset)[0] if offset + 8 <= len(data) else -1
        offset += 8
        end = offset + count * dtypes[key].itemsize
        if count < 0 or end > len(data):
            raise RuntimeError(f"{name}: checkpoint is truncated (storage {key})")
        array = np.frombuffer(data, dtypes[key], count, offset).copy()
        arrays[key] = array if np.little_endian else array.byteswap()
        offset = end
    return arrays


class _Storages:
    """Assigns storages to tensors while pickling: views of one numpy array share one storage."""

    def __init__(self) -> None:
        self.roots: dict[int, tuple[str, np.ndarray]] = {}

    def tensor_args(self, t):
        """``(persistent id, offset, size, stride)`` of ``t`` for the pickle writer."""
        array = t._device.backend.to_numpy(t._data)
        root, base = array, array.base
        while base is not None:  # through as_strided's wrapper objects too
            root = base if isinstance(base, np.ndarray) else root
            base = getattr(base, "base", None)
        placement = _view_of(root, array)
        if placement is None:
            root = np.array(array, order="C")  # keeps 0-d arrays 0-d
            placement = (0, tuple(int(np.prod(array.shape[i + 1:])) for i in range(array.ndim)))
        key, root = self.roots.setdefault(id(root), (str(len(self.roots)), root))
        name = _dtype.from_numpy_dtype(array.dtype).name
        kind = {v: k for k, v in STORAGE_DTYPES.items()}.get(name)
        if kind is None:  # torch writes float8 tensors through untyped storages (_rebuild_tensor_v3)
            raise TypeError(f"the torch format writer has no typed storage for dtype {name}; save "
                            "float8 tensors with format='distrib' or 'safetensors'")
        pid = ("storage", Global("torch", kind), key, str(t._device), root.size)
        return pid, placement[0], array.shape, placement[1]


def _view_of(root: np.ndarray, array: np.ndarray):
    """(element offset, element strides) of ``array`` inside the contiguous ``root``, or None."""
    if root.dtype != array.dtype or not root.flags.c_contiguous or array.size == 0:
        return None
    start = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return _checkpoint_io.element_placement(array, start)


def _aligned_info(zf: zipfile.ZipFile, name: str, size: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type, info.file_size = zipfile.ZIP_STORED, size
    start = zf.fp.tell() + _LOCAL_HEADER.size + len(name.encode()) + 4
    pad = -start % ALIGNMENT
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # torch's own padding field id, "FB"
    return info


def _write_entry(zf: zipfile.ZipFile, name: str, data) -> None:
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    with zf.open(_aligned_info(zf, name, view.nbytes), "w") as out:
        out.write(view)


def write(obj, out, byteorder: str = "little", prefix: str = "archive") -> None:
    """Write ``obj`` as a ``torch.save`` zip to the binary file ``out`` (storages in ``byteorder``).

    Raises:
        TypeError: for objects torch.load(weights_only=True) could not read back.
    """
    storages = _Storages()
    pickled = PickleWriter(_dispatch.is_tensor, storages.tensor_args, _dtype.dtype).dump(obj)
    wire = "<" if byteorder == "little" else ">"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        _write_entry(zf, f"{prefix}/data.pkl", pickled)
        _write_entry(zf, f"{prefix}/.format_version", b"1")
        _write_entry(zf, f"{prefix}/.storage_alignment", str(ALIGNMENT).encode())
        _write_entry(zf, f"{prefix}/byteorder", byteorder.encode())
        for key, root in storages.roots.values():
            data = np.ascontiguousarray(root.reshape(-1), root.dtype.newbyteorder(wire))
            _write_entry(zf, f"{prefix}/data/{key}", data.view(np.uint8))
        _write_entry(zf, f"{prefix}/version", b"3\n")
        _write_entry(zf, f"{prefix}/.data/serialization_id", str(secrets.randbits(128)).encode())


def save(obj, f, byteorder: str = "little") -> None:
    """Write ``obj`` in PyTorch's format to a path (atomically) or a binary file object."""
    if byteorder not in ("little", "big"):
        raise ValueError(f"byteorder must be 'little' or 'big', got {byteorder!r}")
    if hasattr(f, "write"):
        buffer = io.BytesIO()
        write(obj, buffer, byteorder)
        f.write(buffer.getvalue())
        return
    _checkpoint_io.write_atomically(f, lambda out: write(obj, out, byteorder))
