"""``tensor.utils.dlpack``: PyTorch's ``torch.utils.dlpack``, DLPack capsules in and out.

``to_dlpack(t)`` gives the ``PyCapsule`` of ``t``'s memory that ``t.__dlpack__()`` gives;
``from_dlpack`` takes such a capsule, from any producer (``torch.utils.dlpack.to_dlpack``, a
``__dlpack__()`` call), or an object with the protocol, and returns a tensor sharing its memory.
A capsule can be consumed once, as in PyTorch. The device of a bare capsule is read from the
``DLTensor`` it holds (DLPack's C structs, both the legacy ``dltensor`` capsule and the versioned
``dltensor_versioned`` one).
"""

from __future__ import annotations

import ctypes
import datetime
import enum

from . import _creation
from ._tensor import Tensor

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (``DLDeviceType`` in dlpack.h), as ``torch.utils.dlpack`` has them."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


# Byte offset of the DLTensor's ``device`` in the struct each capsule name points to: after
# ``void *data`` in ``DLManagedTensor``; after the version (two uint32), ``manager_ctx``, the
# deleter and the ``uint64`` flags, then ``data``, in ``DLManagedTensorVersioned``.
_POINTER = ctypes.sizeof(ctypes.c_void_p)
_DEVICE_OFFSET = {b"dltensor": _POINTER, b"dltensor_versioned": 8 + 2 * _POINTER + 8 + _POINTER}

_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype, _is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_CAPSULE = type(datetime.datetime_CAPI)  # the PyCapsule type (types.CapsuleType from Python 3.13)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule of ``tensor``'s memory (PyTorch's ``torch.utils.dlpack.to_dlpack``).

    Raises:
        RuntimeError: for a tensor that requires grad (``detach()`` it first).
    """
    return tensor.__dlpack__()


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing the memory of a DLPack capsule, or of an object with ``__dlpack__``.

    Raises:
        RuntimeError: for a capsule already consumed, or not a DLPack capsule.
        TypeError: for an object that is neither.
    """
    if type(ext_tensor) is _CAPSULE:
        ext_tensor = _Capsule(ext_tensor)
    elif not hasattr(ext_tensor, "__dlpack__"):
        got = type(ext_tensor).__name__
        raise TypeError(f"from_dlpack expects a DLPack capsule or an object with __dlpack__, got {got}")
    return _creation.from_dlpack(ext_tensor)


class _Capsule:
    """A bare capsule dressed as a DLPack producer, for ``numpy``/``cupy``'s ``from_dlpack``."""

    def __init__(self, capsule) -> None:
        name = next((n for n in _DEVICE_OFFSET if _is_valid(capsule, n)), None)
        if name is None:
            raise RuntimeError(
                "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only "
                "once, so you might have already constructed a tensor from it once."
            )
        device = _DLDevice.from_address(_get_pointer(capsule, name) + _DEVICE_OFFSET[name])
        self._capsule, self._device = capsule, (device.device_type, device.device_id)

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self) -> tuple:
        return self._device
