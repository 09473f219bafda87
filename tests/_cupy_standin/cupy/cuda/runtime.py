"""``cupy.cuda.runtime``: the CUDA runtime calls our code makes, and those next to them."""

from __future__ import annotations

from .. import _address, _state
from . import stream as _stream

CUDARuntimeError = _state.CUDARuntimeError
cudaIpcMemLazyEnablePeerAccess = 1
eventDisableTiming, eventInterprocess, streamNonBlocking = 2, 4, 1
streamLegacy, streamPerThread = _stream.streamLegacy, _stream.streamPerThread
is_hip = _is_hip_environment = False


def getDeviceCount() -> int:
    """The number of emulated devices (``DISTRIB_CUPY_STANDIN_DEVICES``, default 2)."""
    _state.check_usable()
    if not _state.DEVICE_COUNT:
        raise CUDARuntimeError(100, "cudaErrorNoDevice", "no CUDA-capable device is detected")
    return _state.DEVICE_COUNT


def getDevice() -> int:
    """This thread's current device."""
    return _state.get_device()


def setDevice(device: int) -> None:
    """Make ``device`` this thread's current device (cudaErrorInvalidDevice if there is none)."""
    _state.set_device(device)


def deviceSynchronize() -> None:
    """Wait for all work on the current device (a synchronisation)."""
    _state.declare_synchronize()
    _stream.wait_device(_state.get_device())


def deviceCanAccessPeer(device: int, peer: int) -> int:
    """0: the emulated devices have no peer access, so mixing them in a kernel raises."""
    _state.check_device_id(device)
    _state.check_device_id(peer)
    return 0


def getDeviceProperties(device: int) -> dict:
    """A few of cudaDeviceProp's fields for ``device``."""
    _state.check_usable()
    _state.check_device_id(device)
    return {"name": f"CuPy stand-in device {device}".encode(), "totalGlobalMem": _address.ARENA_BYTES,
            "major": 8, "minor": 0, "multiProcessorCount": 1, "pciBusID": device, "pciDeviceID": 0,
            "pciDomainID": 0}


def memGetInfo() -> tuple[int, int]:
    """``(free, total)`` bytes of the current device."""
    arena = _address.arena(_state.get_device())
    return _address.ARENA_BYTES - arena.used, _address.ARENA_BYTES


def runtimeGetVersion() -> int:
    """The CUDA runtime version the stand-in claims (12.8)."""
    return 12080


def driverGetVersion() -> int:
    """The CUDA driver version the stand-in claims (12.8)."""
    return 12080


def malloc(size: int) -> int:
    """``cudaMalloc`` on the current device."""
    _state.check_usable()
    return _address.arena(_state.get_device()).malloc(size)


def free(ptr: int) -> None:
    """``cudaFree`` of a ``malloc``ed pointer."""
    region = _address.region_of(ptr)
    arena = _address.arena(region.device_id)
    arena.free(ptr, arena.sizes[ptr - region.start])


def ipcGetMemHandle(devPtr: int) -> bytes:
    """A handle for the allocation that contains ``devPtr`` (its base, not ``devPtr``)."""
    return _address.ipc_get_handle(devPtr)


def ipcOpenMemHandle(handle: bytes, flags: int = cudaIpcMemLazyEnablePeerAccess) -> int:
    """Map another process's allocation; returns its *base* pointer in this process."""
    return _address.ipc_open_handle(handle)


def ipcCloseMemHandle(devPtr: int) -> None:
    """Close a mapping opened by ``ipcOpenMemHandle``."""
    _address.ipc_close_handle(devPtr)


def streamSynchronize(stream: int) -> None:
    """Wait for the work queued on ``stream`` (a synchronisation)."""
    _state.declare_synchronize()
    _stream.wait_for(stream)


def streamQuery(stream: int) -> int:
    """0 (cudaSuccess) when the stream's work is done, 600 (cudaErrorNotReady) otherwise."""
    return 0 if not _stream.dependencies(stream) else 600
