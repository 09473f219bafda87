"""Storages: a tensor's memory as bytes (``Tensor.untyped_storage``, ``tensor.UntypedStorage``),
the deprecated typed view of it (``Tensor.storage``) and ``Tensor.set_``.

Note [Storages]
    A tensor here is an array over memory that some array owns (its *root*, found by
    ``_backend.storage_of``); views of one tensor share that root. ``untyped_storage()`` wraps the
    root's memory as a flat array of bytes, so ``x.untyped_storage().data_ptr()`` is the same for
    every view of ``x`` (ported code compares it to find tensors sharing memory, as safetensors'
    ``storage_ptr`` does), writes through it reach every tensor on it, and ``Tensor.set_`` puts a
    tensor on a storage at any offset, size and stride. As in PyTorch, asking twice for one
    storage gives the same object while it lives.

    On CUDA a storage is the whole allocation, which CuPy's pool rounds up to 512 bytes, so it
    may be longer than PyTorch's. The memory belongs to numpy (or CuPy) arrays, so a storage
    cannot be resized: ``resize_`` to another size raises PyTorch's error for memory it did not
    allocate ("Trying to resize storage that is not resizable"), as ``torch.from_numpy``'s
    storages do.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from . import _backend, _dispatch, _dtype, _inplace, _shared, ops
from ._device import as_device
from ._memory_format import dense_strides

__all__ = ["TypedStorage", "UntypedStorage", "set_", "storage", "untyped_storage"]

# (device, address) of a root's memory -> its storage object, which keeps the memory alive (on
# CuPy the root is a new array over the allocation at each call, so an array's id would not do)
_STORAGES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class UntypedStorage:
    """Bytes of memory that tensors are views of (PyTorch's ``torch.UntypedStorage``).

    ``UntypedStorage(n, device=None)`` allocates ``n`` bytes (zeroed), ``UntypedStorage(seq)`` holds
    the byte values of a sequence, and ``tensor.untyped_storage()`` gives the storage a tensor is
    on (Note [Storages]).

    Raises:
        TypeError: for another argument than a size or a sequence of ints.
    """

    def __init__(self, *args, device=None) -> None:
        device = as_device(device if device is not None else "cpu")
        xp = device.backend.xp
        if not args:
            data = xp.zeros(0, np.uint8)
        elif len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool):
            data = xp.zeros(args[0], np.uint8)
        elif len(args) == 1 and isinstance(args[0], (list, tuple)):
            data = xp.asarray(np.asarray(args[0], dtype=np.uint8))
        else:
            raise TypeError(f"UntypedStorage(): expected a size or a sequence of ints, got {args!r}")
        self._bytes, self._device = data, device
        _STORAGES[_key(data, device)] = self  # tensors set_ on it find this object again

    @classmethod
    def _on(cls, root, device) -> UntypedStorage:
        """The storage of the memory the array ``root`` owns (one object per root while it lives)."""
        key = _key(root, device)
        found = _STORAGES.get(key)
        if found is not None and found.nbytes() == root.nbytes:
            return found
        made = cls.__new__(cls)
        made._device = device
        made._bytes = _backend.storage_view(device.backend.xp, root, (root.nbytes,), (1,), 0, np.dtype(np.uint8))
        _STORAGES[key] = made
        return made

    @property
    def device(self):
        """The device the memory is on."""
        return self._device

    def data_ptr(self) -> int:
        """The address of the first byte."""
        return self._device.backend.data_ptr(self._bytes)

    def nbytes(self) -> int:
        """The number of bytes."""
        return int(self._bytes.size)

    def size(self) -> int:
        """The number of bytes (its elements are bytes)."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        """1: the size of a byte."""
        return 1

    def __getitem__(self, index):
        """The byte at ``index`` as an int, or a storage of the bytes in a slice (step 1).

        Raises:
            IndexError: for an index outside the storage.
            RuntimeError: for a slice with a step.
        """
        if isinstance(index, slice):
            start, stop, step = index.indices(self.nbytes())
            if step != 1:
                raise RuntimeError("slices with steps are not supported by storages")
            part = UntypedStorage.__new__(UntypedStorage)
            part._bytes, part._device = self._bytes[start:max(start, stop)], self._device
            return part
        return int(self._host()[_checked(index, self.nbytes())])

    def __setitem__(self, index, value) -> None:
        self._bytes[index if isinstance(index, slice) else _checked(index, self.nbytes())] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list:
        """The bytes as a list of ints."""
        return self._host().tolist()

    def fill_(self, value: int) -> UntypedStorage:
        """Set every byte to ``value``."""
        self._bytes[...] = value
        return self

    def copy_(self, source, non_blocking=None) -> UntypedStorage:
        """Copy the bytes of ``source`` (a storage of the same size) into this one.

        Raises:
            RuntimeError: when the sizes differ.
        """
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch: {source.nbytes()} bytes into a storage of {self.nbytes()}")
        self._bytes[...] = self._device.backend.xp.asarray(source._host() if source.device != self.device
                                                           else source._bytes)
        return self

    def clone(self) -> UntypedStorage:
        """A copy in new memory on the same device."""
        copy = UntypedStorage(self.nbytes(), device=self._device)
        return copy.copy_(self)

    def cpu(self) -> UntypedStorage:
        """This storage if on the CPU, else a copy there."""
        if self._device.type == "cpu":
            return self
        return UntypedStorage(self.nbytes()).copy_(self)

    def resize_(self, size: int) -> UntypedStorage:
        """Only to its own size (Note [Storages]).

        Raises:
            RuntimeError: for any other size.
        """
        if size != self.nbytes():
            raise RuntimeError("Trying to resize storage that is not resizable")
        return self

    def is_shared(self) -> bool:
        """Whether the memory is shared between processes (any CUDA memory is shareable)."""
        return self._device.backend.ipc_supported or _shared.segment_of(self._bytes) is not None

    def is_pinned(self) -> bool:
        """False: host storages here are pageable."""
        return False

    def untyped(self) -> UntypedStorage:
        """This storage."""
        return self

    def _host(self) -> np.ndarray:
        return self._device.backend.to_numpy(self._bytes)

    def __repr__(self) -> str:
        shown = "\n".join(f" {b}" for b in self.tolist())
        return f"{shown}\n[tensor.UntypedStorage(device={self._device}) of size {self.nbytes()}]".lstrip("\n")


class TypedStorage:
    """A storage seen as elements of one dtype (PyTorch's deprecated ``torch.TypedStorage``,
    what ``Tensor.storage()`` returns): ``size()`` counts elements, indexing gives numbers."""

    def __init__(self, untyped: UntypedStorage, dtype) -> None:
        self._untyped, self.dtype = untyped, _dtype.as_dtype(dtype)

    @property
    def device(self):
        """The device the memory is on."""
        return self._untyped.device

    def untyped(self) -> UntypedStorage:
        """The storage as bytes."""
        return self._untyped

    def data_ptr(self) -> int:
        """The address of the first element."""
        return self._untyped.data_ptr()

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def nbytes(self) -> int:
        """The number of bytes."""
        return self._untyped.nbytes()

    def size(self) -> int:
        """The number of elements."""
        return self.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def _elements(self) -> np.ndarray:
        whole = self._untyped._host()[: self.size() * self.element_size()]
        return whole.view(self.dtype.numpy)

    def __getitem__(self, index):
        """The element at ``index`` as a Python number.

        Raises:
            IndexError: for an index outside the storage.
        """
        return self._elements()[_checked(index, self.size())].item()

    def tolist(self) -> list:
        """The elements as Python numbers."""
        return self._elements().tolist()

    def __repr__(self) -> str:
        shown = "\n".join(f" {v}" for v in self.tolist())
        kind = f"tensor.TypedStorage(dtype={self.dtype}, device={self.device})"
        return f"{shown}\n[{kind} of size {self.size()}]".lstrip()


def _key(root, device) -> tuple:
    return str(device), device.backend.data_ptr(root)


def _checked(index: int, size: int) -> int:
    if not -size <= index < size:
        raise IndexError(f"index {index} out of range for storage of size {size}")
    return index % size


def untyped_storage(self) -> UntypedStorage:
    """The storage ``self`` is a view of (Note [Storages])."""
    xp = self._device.backend.xp
    root, _ = _backend.storage_of(xp, self._data)
    return UntypedStorage._on(root, self._device)


def storage(self) -> TypedStorage:
    """``self``'s storage seen as elements of its dtype. Deprecated in PyTorch, so it warns with
    PyTorch's ``UserWarning``; ``untyped_storage()`` is the replacement."""
    warnings.warn(
        "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
        "storage class. This should only matter to you if you are using storages directly.  To access "
        "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
        UserWarning,
        stacklevel=2,
    )
    return TypedStorage(untyped_storage(self), self.dtype)


def set_(self, source=None, storage_offset: int = 0, size=None, stride=None):
    """Make ``self`` a view of ``source``, in place: of another tensor's memory with its geometry,
    of a storage at ``storage_offset`` (in elements of ``self``'s dtype) with ``size`` and
    ``stride`` (default: the rest of the storage, contiguous), or with no source, of nothing.

    Raises:
        RuntimeError: for a leaf that requires grad (while recording), a source on another device
            or of another dtype, or a geometry outside the storage.
    """
    _inplace._check_leaf(self)
    if source is None:
        data = self._device.backend.xp.empty(0, self._data.dtype)
    elif _dispatch.is_tensor(source):
        _same_place(self, source.device, source.dtype)
        data = source._data
    else:
        if isinstance(source, TypedStorage):
            _same_place(self, source.device, source.dtype)
            source = source.untyped()
        _same_place(self, source.device, self.dtype)
        item = self._data.itemsize
        if size is None:
            size = ((source.nbytes() // item) - storage_offset,)
        size = tuple(int(n) for n in size)
        stride = dense_strides(size, tuple(range(len(size)))) if stride is None else tuple(int(s) for s in stride)
        ops.strided.check_geometry(size, stride, storage_offset, item, source.nbytes())
        xp = self._device.backend.xp
        byte_strides = tuple(s * item for s in stride)
        data = _backend.storage_view(xp, source._bytes, size, byte_strides, storage_offset * item, self._data.dtype)
    self._data = data
    self._base = self._view_src = None  # on its own storage now, not a view of its old base
    self._version_box[0] += 1
    return self


def _same_place(self, device, dtype) -> None:
    if device != self.device:
        raise RuntimeError(f"Expected a storage on {self.device}, but got one on {device}")
    if dtype != self.dtype:
        raise RuntimeError(f"Expected a source of dtype {self.dtype}, but got {dtype}")
