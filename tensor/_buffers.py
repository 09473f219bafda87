"""Tensors over memory that Python or a file owns: ``frombuffer`` and ``from_file`` (issue 16).

Both are cpu tensors whose array is a numpy view of that memory (``numpy.frombuffer``,
``numpy.memmap``), so writes through the tensor reach the buffer or the file.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from . import _dispatch, _dtype
from ._device import device as _device_cls

__all__ = ["from_file", "frombuffer"]


def frombuffer(buffer, *, dtype: _dtype.dtype, count: int = -1, offset: int = 0, requires_grad: bool = False):
    """A 1-d cpu tensor sharing memory with ``buffer`` (any object with the buffer protocol):
    ``count`` elements (-1: all) starting ``offset`` bytes in.

    >>> import tensor
    >>> tensor.frombuffer(bytearray(b"\\x01\\x02\\x03"), dtype=tensor.uint8, offset=1)
    tensor([2, 3], dtype=tensor.uint8)

    A read-only buffer (``bytes``) gives a tensor that refuses in-place writes, with a warning.

    Raises:
        ValueError: for an empty buffer or ``count == 0``, an offset outside the buffer, or a
            length that does not fit (PyTorch's messages).
    """
    dtype = _dtype.as_dtype(dtype)
    view = memoryview(buffer)
    length, item = view.nbytes, dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(
            f"offset ({offset} bytes) must be non-negative and no greater than buffer length ({length} bytes) minus 1"
        )
    if count < 0:
        if (length - offset) % item:
            raise ValueError(
                f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                f"multiple of element size ({item})"
            )
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(
            f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must "
            f"not be greater than actual buffer length ({length} bytes)"
        )
    if view.readonly:
        warnings.warn(
            "The given buffer is not writable: the tensor refuses in-place writes.", UserWarning, stacklevel=2
        )
    array = np.frombuffer(view, dtype=dtype.numpy, count=count, offset=offset)
    return _dispatch.make(array, _device_cls("cpu")).requires_grad_(requires_grad)


def from_file(
    filename: str,
    shared: bool | None = None,
    size: int = 0,
    *,
    dtype: _dtype.dtype | None = None,
    layout=None,
    device=None,
    pin_memory: bool = False,
):
    """A 1-d cpu tensor of ``size`` elements mapped from ``filename``. ``shared=True``: writes go to
    the file, which is created or extended (with zeros) to fit; otherwise the mapping is
    copy-on-write and the file must hold ``size`` elements. ``layout``, ``device`` and
    ``pin_memory`` are accepted for PyTorch's signature (the tensor is a strided cpu tensor).

    Raises:
        RuntimeError: if the file cannot be opened or is too small (PyTorch's messages), or for a
            device other than the cpu.
    """
    dtype = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if device is not None and _device_cls(device).type != "cpu":
        raise RuntimeError(f"from_file: only cpu tensors map files here, got device={device}")
    needed = size * dtype.itemsize
    if shared:
        with open(filename, "ab") as f:  # creates the file; grows it to the mapping's size
            if f.tell() < needed:
                f.truncate(needed)
    try:
        have = os.path.getsize(filename)
    except OSError as exc:
        raise RuntimeError(
            f"unable to open file <{filename}> in read-only mode: {exc.strerror} ({exc.errno})"
        ) from None
    if have < needed:
        raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required mapping size <{needed}>")
    if size == 0:
        array = np.empty(0, dtype.numpy)
    else:
        mapped = np.memmap(filename, dtype=dtype.numpy, mode="r+" if shared else "c", shape=(size,))
        array = mapped.view(np.ndarray)  # the memory of the mapping, without the subclass
    return _dispatch.make(array, _device_cls("cpu"))
