"""DLPack for device arrays: real ``dltensor`` capsules whose device is ``kDLCUDA``.

A consumer that only understands host memory (numpy) refuses them, as it refuses CuPy's; the
stand-in's ``from_dlpack`` takes them (and refuses host producers, as CuPy does).
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _memory, _ndarray, _state

kDLCPU, kDLCUDA, kDLCUDAManaged = 1, 2, 13
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}
_NAME, _USED = b"dltensor", b"used_dltensor"


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]

_py = ctypes.pythonapi
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _py))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", _py))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _py))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", _py))

# DLManagedTensor address -> what keeps it and its array alive, until a consumer calls the deleter.
# A capsule nobody consumes keeps its entry: a capsule destructor would have to call the C API
# while a consumer's error (numpy refusing a CUDA tensor) may be pending, which ctypes cannot.
_exported: dict[int, tuple] = {}


@_DELETER
def _deleter(managed) -> None:
    _exported.pop(ctypes.addressof(managed.contents), None)


def export(array: _ndarray.ndarray, stream, dl_device, copy):
    """``array.__dlpack__``: a CUDA capsule, or a host copy's capsule when ``dl_device`` is the CPU."""
    if dl_device is not None and tuple(dl_device) == (kDLCPU, 0):
        if copy is False:
            raise ValueError("GPU memory cannot be exported to CPU without copy.")
        return array.get().__dlpack__()
    if dl_device is not None and tuple(dl_device) != (kDLCUDA, array._dev):
        raise BufferError("unsupported device requested.")
    if array.dtype.kind not in _CODES:
        raise BufferError("dtype is not supported for dlpack export")
    managed = _Managed()
    shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
    strides = (ctypes.c_int64 * max(array.ndim, 1))(*(s // array.itemsize for s in array.strides))
    t = managed.dl_tensor
    t.data, t.ndim, t.byte_offset = array.data.ptr if array.size else 0, array.ndim, 0
    t.device = _Device(kDLCUDA, array._dev)
    t.dtype = _DataType(_CODES[array.dtype.kind], array.itemsize * 8, 1)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    managed.deleter = _deleter
    _exported[ctypes.addressof(managed)] = (managed, shape, strides, array)
    return _capsule_new(ctypes.addressof(managed), _NAME, None)


class _DLPackMemory(_memory.BaseMemory):
    """Device memory owned by a DLPack producer; its deleter runs when this is collected."""

    def __init__(self, managed_address: int) -> None:
        self._address = managed_address
        managed = _Managed.from_address(managed_address)
        t = managed.dl_tensor
        if t.device.device_type not in (kDLCUDA, kDLCUDAManaged):
            raise RuntimeError("CuPy is built against CUDA, different from the backend that backs the incoming "
                               "DLPack tensor")
        self.ptr, self.device_id = t.data or 0, t.device.device_id

    def __del__(self) -> None:
        managed = _Managed.from_address(self._address)
        if managed.deleter:
            managed.deleter(ctypes.pointer(managed))


def import_capsule(capsule) -> _ndarray.ndarray:
    """A device array over a ``dltensor`` capsule's memory (consuming the capsule)."""
    if not _is_valid(capsule, _NAME):
        raise ValueError("A DLPack tensor object cannot be consumed multiple times (or object was not a DLPack "
                         f"capsule). Got: {capsule!r}")
    address = _get_pointer(capsule, _NAME)
    _set_name(capsule, _USED)
    mem = _DLPackMemory(address)
    t = _Managed.from_address(address).dl_tensor
    if t.dtype.lanes != 1 or t.dtype.code not in _KINDS:
        raise TypeError(f"Unsupported dtype. dtype code: {t.dtype.code}")
    dtype = np.dtype(f"{_KINDS[t.dtype.code]}{t.dtype.bits // 8}") if t.dtype.code != 6 else np.dtype(bool)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None if not t.strides else tuple(t.strides[i] * dtype.itemsize for i in range(t.ndim))
    mem.size = int(np.prod(shape)) * dtype.itemsize
    return _ndarray.ndarray(shape, dtype, _memory.MemoryPointer(mem, t.byte_offset), strides)


def import_(obj, device, copy) -> _ndarray.ndarray:
    """``cupy.from_dlpack``: CUDA producers only; host ones are CuPy's TypeError."""
    if not hasattr(obj, "__dlpack_device__"):
        return import_capsule(obj)
    if device is not None:
        raise NotImplementedError("from_dlpack() does not support device yet.")
    dev_type, dev_id = obj.__dlpack_device__()
    if dev_type == kDLCPU:
        raise TypeError("CPU arrays cannot be directly imported to CuPy. Use `cupy.array(numpy.from_dlpack(input))` "
                        "instead.")
    if dev_type not in (kDLCUDA, kDLCUDAManaged):
        raise TypeError(f"Unsupported array type: {dev_type}")
    _state.check_usable()
    return import_capsule(obj.__dlpack__(stream=1))
