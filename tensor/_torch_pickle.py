"""The pickle inside a PyTorch checkpoint: a reader that runs only allow-listed globals, a writer.

Note [Weights-only unpickling]: a ``.pt`` file's ``data.pkl`` names the functions that rebuild
its objects (``torch._utils._rebuild_tensor_v2``, ``collections.OrderedDict``...). A plain
unpickler imports and calls whatever the file names, so a file can run ``os.system``. Here
``find_class`` is the only way a global enters the stream, and it looks names up in a table:
the names ``torch.load(weights_only=True)`` allows, mapped to our own implementations, plus
what the user added with ``add_safe_globals``. Any other name is refused before anything is
imported. The writer emits the pickle opcodes itself, so it needs no ``torch`` to name
torch's globals.
"""

from __future__ import annotations

import _compat_pickle
import collections
import contextlib
import dataclasses
import io
import pickle
import struct
from collections.abc import Callable, Generator, Iterable
from typing import BinaryIO

from . import _dtype
from ._checkpoint_io import is_parameter
from ._device import device as _device_cls
from ._torch_misc import Size

__all__ = ["add_safe_globals", "safe_globals", "get_safe_globals", "clear_safe_globals"]

# torch storage class -> torch dtype name (the element type of the storage's bytes).
STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
    "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
}
TORCH_DTYPES = (
    "float32", "float64", "float16", "bfloat16", "complex32", "complex64", "complex128",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
    "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "float8_e4m3fn", "float8_e5m2",
    "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    *(f"uint{n}" for n in range(1, 8)), *(f"int{n}" for n in range(1, 8)),
)
# torch's legacy tensor type names (torch.FloatTensor, torch.cuda.sparse.LongTensor, ...)
_TENSOR_KINDS = ("BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short")
LEGACY_TENSOR_CLASSES = tuple(
    f"torch.{space}{kind}Tensor" for space in ("", "cuda.", "sparse.", "cuda.sparse.") for kind in _TENSOR_KINDS
    if not (space.endswith("sparse.") and kind == "Bool"))
# Allowed by torch, but they rebuild tensors we have no equivalent for.
UNSUPPORTED_REBUILDS = (
    "_rebuild_tensor", "_rebuild_sparse_tensor", "_rebuild_device_tensor_from_numpy",
    "_rebuild_meta_tensor_no_storage", "_rebuild_wrapper_subclass", "_rebuild_nested_tensor",
    "_rebuild_qtensor",
)
_user_globals: dict[str, object] = {}


@dataclasses.dataclass(frozen=True)
class StorageType:
    """A torch storage class named in a pickle (``torch.FloatStorage``): its element dtype."""

    name: str
    dtype_name: str


@dataclasses.dataclass(frozen=True)
class TorchDtype:
    """A torch dtype named in a pickle that distrib lacks (``torch.bfloat16``)."""

    name: str


class Unsupported:
    """A global torch allows but we cannot rebuild: calling it raises, naming the global."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"the checkpoint uses {self.name}, which torch.load(weights_only=True) allows but distrib "
            "cannot rebuild (sparse, quantized, nested, meta or subclass tensors); convert them to "
            "plain dense tensors in torch before saving")


def _codecs_encode(text, encoding="latin1"):
    # How protocol 2 pickles bytes: _codecs.encode(str, "latin1"). Nothing else is let through.
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is allowed only as pickle protocol 2 uses it for bytes")
    return text.encode("latin1")


def _torch_device(kind, index=None):
    return _device_cls(kind if index is None else f"{kind}:{index}")


def storage_types() -> dict[str, StorageType]:
    """torch's storage classes by the name a pickle gives them (``torch.cuda.FloatStorage``)."""
    types = {"torch.storage.UntypedStorage": StorageType("UntypedStorage", "uint8")}
    for space in ("torch.", "torch.cuda."):
        types.update({f"{space}{name}": StorageType(name, dt) for name, dt in STORAGE_DTYPES.items()
                      if space == "torch." or not name.startswith(("Q", "ComplexHalf"))})
    return types


def builtin_table(rebuilds: dict[str, Callable]) -> dict[str, object]:
    """The default allow-list: torch's weights-only globals mapped to ours. ``rebuilds`` maps a
    ``torch._utils`` function name to our implementation."""
    table: dict[str, object] = {
        "collections.OrderedDict": collections.OrderedDict, "collections.Counter": collections.Counter,
        "torch.Size": Size, "torch.device": _torch_device, "_codecs.encode": _codecs_encode,
        "builtins.bytearray": bytearray, "builtins.set": set, "builtins.complex": complex,
        "torch.serialization._get_layout": Unsupported("torch.serialization._get_layout"),
        "torch.Tensor": Unsupported("torch.Tensor"),
        "torch.nn.parameter.Parameter": rebuilds["_rebuild_parameter"],
        "torch._tensor._rebuild_from_type_v2": rebuilds["_rebuild_from_type_v2"],
        "torch.storage.TypedStorage": Unsupported("torch.storage.TypedStorage"),
        **storage_types(),
    }
    table.update({name: Unsupported(name) for name in LEGACY_TENSOR_CLASSES})
    table.update({f"torch.{name}": _dtype._NAMES.get(name) or TorchDtype(name) for name in TORCH_DTYPES})
    for scheme in ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
                   "per_channel_symmetric", "per_channel_affine_float_qparams"):
        table[f"torch.{scheme}"] = Unsupported(f"torch.{scheme}")
    for name in UNSUPPORTED_REBUILDS:
        table[f"torch._utils.{name}"] = Unsupported(f"torch._utils.{name}")
    table.update({f"torch._utils.{name}": fn for name, fn in rebuilds.items() if name != "_rebuild_from_type_v2"})
    return table


def _qualname(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(globals_: Iterable) -> None:
    """Allow ``load`` to use these globals when it reads a PyTorch checkpoint.

    Each item is a class or function, or a ``(obj, "module.name")`` pair when the name in
    the file differs from ``obj.__module__ + "." + obj.__qualname__``. Only add globals you
    trust: unpickling calls them with arguments taken from the file.

    Raises:
        TypeError: if an item is neither a named object nor an ``(obj, str)`` pair.
    """
    for item in globals_:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], str):
            _user_globals[item[1]] = item[0]
        elif hasattr(item, "__module__") and hasattr(item, "__qualname__"):
            _user_globals[_qualname(item)] = item
        else:
            raise TypeError(f"add_safe_globals expects classes, functions or (obj, name) pairs, got {item!r}")


def get_safe_globals() -> list:
    """The globals added with ``add_safe_globals`` (as ``(obj, name)`` pairs)."""
    return [(obj, name) for name, obj in _user_globals.items()]


def clear_safe_globals() -> None:
    """Forget every global added with ``add_safe_globals``."""
    _user_globals.clear()


@contextlib.contextmanager
def safe_globals(globals_: Iterable) -> Generator[None, None, None]:
    """Allow these globals (as ``add_safe_globals``) only inside the ``with`` block."""
    saved = dict(_user_globals)
    add_safe_globals(globals_)
    try:
        yield
    finally:
        _user_globals.clear()
        _user_globals.update(saved)


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global that is not allowed (the message names it and says how to allow it)."""


class SafeUnpickler(pickle.Unpickler):
    """Unpickles with ``table`` (plus the user's safe globals); see Note [Weights-only unpickling].

    With ``trusted`` (``weights_only=False``) a name outside the table is imported as pickle does.
    """

    def __init__(self, file: BinaryIO, table: dict, persistent_load: Callable, trusted: bool) -> None:
        super().__init__(file)
        self._table, self._persistent, self._trusted = table, persistent_load, trusted

    def find_class(self, module: str, name: str):
        """The allowed object for ``module.name``; nothing is imported unless the load is trusted.

        Raises:
            RefusedGlobal: naming the global and how to allow it.
        """
        full = ".".join(python3_name(module, name))
        if full in self._table:
            return self._table[full]
        if full in _user_globals:
            return _user_globals[full]
        if self._trusted:
            return super().find_class(module, name)
        raise RefusedGlobal(
            f"Weights only load failed: unsupported global {full} is not allowed by default, and "
            "loading it could run arbitrary code. If you trust this file, allow it with "
            f"tensor.serialization.add_safe_globals([{name}]) or the "
            f"tensor.serialization.safe_globals([{name}]) context manager, or load with "
            "weights_only=False.")

    def persistent_load(self, pid):
        """Resolve a storage reference through the archive's reader."""
        return self._persistent(pid)


def python3_name(module: str, name: str) -> tuple[str, str]:
    """The Python 3 spelling of a global: protocol 2 (torch.save's) writes builtins as
    ``__builtin__.set``. torch's weights-only unpickler renames the same way."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class PickleWriter:
    """Writes plain containers, numbers, strings, bytes, sets, sizes, dtypes, devices, tensors and
    parameters as a protocol-2 pickle naming torch's globals, spelled as ``torch.save`` spells them.
    ``tensor_args(t)`` gives a tensor's rebuild arguments: ``(storage pid tuple, offset, size, stride)``.
    A tensor met twice is written once and then fetched from pickle's memo, so it loads as one object."""

    def __init__(self, is_tensor: Callable, tensor_args: Callable, dtype_type: type) -> None:
        self.out = io.BytesIO()
        self._is_tensor, self._tensor_args, self._dtype_type = is_tensor, tensor_args, dtype_type
        self._memo: dict[int, tuple[int, object]] = {}  # id -> (memo index, the object: alive, so ids stay unique)

    def dump(self, obj) -> bytes:
        """The pickle of ``obj``.

        Raises:
            TypeError: naming the type of an object torch's weights-only loader could not read.
        """
        self.out.write(b"\x80\x02")
        self._write(obj)
        self.out.write(b".")
        return self.out.getvalue()

    def _global(self, module: str, name: str) -> None:
        self.out.write(b"c" + module.encode() + b"\n" + name.encode() + b"\n")

    def _reduce(self, module: str, name: str, args: tuple) -> None:
        """``module.name(*args)``."""
        self._global(module, name)
        self._write(args)
        self.out.write(b"R")

    def _write(self, obj) -> None:
        w = self.out.write
        if obj is None or isinstance(obj, bool):
            w({None: b"N", True: b"\x88", False: b"\x89"}[obj])
        elif isinstance(obj, int):
            self._int(obj)
        elif isinstance(obj, float):
            w(b"G" + struct.pack(">d", obj))
        elif isinstance(obj, str):
            data = obj.encode("utf-8", "surrogatepass")
            w(b"X" + struct.pack("<I", len(data)) + data)
        elif self._is_tensor(obj):
            self._tensor(obj)
        elif isinstance(obj, Size):
            self._reduce("torch", "Size", (tuple(obj),))
        elif isinstance(obj, (tuple, list, dict)):
            self._container(obj)
        elif isinstance(obj, self._dtype_type):
            self._global("torch", obj.name)
        elif isinstance(obj, Global):
            self._global(obj.module, obj.name)
        elif isinstance(obj, _device_cls):
            self._reduce("torch", "device", (str(obj),))
        elif type(obj) in (bytes, bytearray, set, complex):
            self._builtin(obj)
        elif hasattr(obj, "item") and hasattr(obj, "dtype") and getattr(obj, "shape", None) == ():
            self._write(obj.item())  # numpy scalars
        else:
            raise TypeError(f"cannot save an object of type {type(obj).__name__} in the PyTorch format: "
                            "torch.load(weights_only=True) would refuse it (save it with format='distrib')")

    def _builtin(self, obj) -> None:
        # As protocol 2 writes them, except b"": that is builtins.bytes(), which torch's loader refuses.
        if type(obj) is bytes:
            self._reduce("_codecs", "encode", (obj.decode("latin1"), "latin1"))
        elif type(obj) is bytearray:
            self._reduce("__builtin__", "bytearray", (bytes(obj),))
        elif type(obj) is set:
            self._reduce("__builtin__", "set", (list(obj),))
        else:
            self._reduce("__builtin__", "complex", (obj.real, obj.imag))

    def _int(self, value: int) -> None:
        if 0 <= value < 256:
            self.out.write(b"K" + bytes([value]))
        elif -2 ** 31 <= value < 2 ** 31:
            self.out.write(b"J" + struct.pack("<i", value))
        else:
            data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
            self.out.write(b"\x8a" + bytes([len(data)]) + data)

    def _empty_ordered_dict(self) -> None:
        self._global("collections", "OrderedDict")
        self.out.write(b")R")

    def _container(self, obj) -> None:
        w = self.out.write
        if isinstance(obj, tuple):
            w(b"(")
            for item in obj:
                self._write(item)
            w(b"t")
            return
        if isinstance(obj, list):
            w(b"](")
            for item in obj:
                self._write(item)
            w(b"e")
            return
        if type(obj) is collections.OrderedDict:
            self._empty_ordered_dict()
        elif type(obj) is dict:
            w(b"}")
        else:
            raise TypeError(f"cannot save a {type(obj).__name__} in the PyTorch format (only dict and OrderedDict)")
        w(b"(")
        for key, value in obj.items():
            self._write(key)
            self._write(value)
        w(b"u")
        if hasattr(obj, "_metadata"):  # a state dict's module versions: BUILD sets the attribute, as torch writes
            self._write({"_metadata": obj._metadata})
            w(b"b")

    def _tensor(self, t) -> None:
        found = self._memo.get(id(t))
        if found is not None:
            index = found[0]
            self.out.write(b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index))
            return
        if is_parameter(t):  # torch._utils._rebuild_parameter(data, requires_grad, hooks)
            self._global("torch._utils", "_rebuild_parameter")
            self.out.write(b"(")
            self._plain_tensor(t, requires_grad=False)
            self._write(bool(t.requires_grad))
            self._empty_ordered_dict()
            self.out.write(b"tR")
        else:
            self._plain_tensor(t, bool(t.requires_grad))
        index = len(self._memo)
        self._memo[id(t)] = (index, t)
        self.out.write(b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index))

    def _plain_tensor(self, t, requires_grad: bool) -> None:
        pid, offset, size, stride = self._tensor_args(t)
        self._global("torch._utils", "_rebuild_tensor_v2")
        self.out.write(b"((")
        for item in pid:
            self._write(item)
        self.out.write(b"tQ")
        for item in (offset, tuple(size), tuple(stride), requires_grad):
            self._write(item)
        self._empty_ordered_dict()  # backward hooks
        self.out.write(b"tR")


@dataclasses.dataclass(frozen=True)
class Global:
    """A global to name in the written pickle (``torch.FloatStorage``)."""

    module: str
    name: str
