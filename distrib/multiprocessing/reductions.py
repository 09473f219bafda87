"""Pickling tensors by handle: reducers registered with ``multiprocessing.reduction.ForkingPickler``.

Everything multiprocessing sends (``Queue``, ``SimpleQueue``, ``Pipe``, ``Pool`` tasks, the
arguments of a spawned ``Process``) goes through ``ForkingPickler``, so registering a reducer for
``Tensor`` and ``Parameter`` there makes the stock API share tensors instead of copying them,
as ``torch.multiprocessing`` does. Plain ``pickle`` still copies (``Tensor.__reduce_ex__``).

A reduced CPU tensor is ``(class, handle, byte offset, shape, byte strides, dtype, requires_grad,
grad, attributes)``: views keep their offset and strides, a Parameter comes back a Parameter,
and ``.grad`` is shared when it exists. See Note [handles] in ``_handles.py`` for the handle.
"""

from __future__ import annotations

import weakref
from multiprocessing.reduction import ForkingPickler

import numpy as np

import tensor
from nn.parameter import Buffer, Parameter
from tensor import Tensor, _dispatch, _shared

from . import _handles

__all__ = ["init_reductions", "rebuild_cuda_tensor", "rebuild_tensor", "reduce_tensor"]

_NON_LEAF_MESSAGE = (
    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not "
    "support crossing process boundaries.  If you just want to transfer the data, call detach() "
    "on the tensor before serializing (e.g., putting it on the queue).")
_cpu = tensor.device("cpu")
# handle bytes -> the opened CUDA IPC mapping: each handle is opened once per process.
_opened_ipc: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _public_attributes(t: Tensor) -> dict:
    return {k: v for k, v in vars(t).items() if not k.startswith("_") and k != "grad"}


def reduce_tensor(t: Tensor):
    """The ForkingPickler reducer: move the storage into shared memory (once) and send a handle.

    Raises:
        RuntimeError: for a non-leaf tensor that requires grad (the message says to ``detach()``).
    """
    if t._requires_grad and t._grad_fn is not None:
        raise RuntimeError(_NON_LEAF_MESSAGE)
    backend = t._device.backend
    if backend.ipc_supported:
        return _reduce_cuda(t, backend)
    _shared.share_memory_(t)
    array = t._data
    segment = _shared.segment_of(array)
    address, key, pid = _handles.keep_alive(segment)
    handle = (segment.strategy, segment.ident, segment.nbytes, segment.name, segment.fd, address, key, pid)
    offset = array.__array_interface__["data"][0] - segment.address
    return rebuild_tensor, (type(t), handle, offset, array.shape, array.strides, array.dtype.str,
                            t._requires_grad, t.grad, _public_attributes(t))


def _open_segment(handle) -> _shared.Segment:
    strategy, ident, nbytes, name, fd_number, address, key, pid = handle
    segment = _shared.cached_segment(ident)
    try:
        if segment is None:
            if strategy == "file_system":
                segment = _shared.attach_name(name, nbytes)
            else:
                fd = _handles.open_fd(address, key, pid, fd_number, ident)
                segment = _shared.attach_fd(fd, nbytes)
    finally:
        _handles.release(address, key, pid)
    return segment


def _finish(t: Tensor, cls, requires_grad: bool, grad, attributes: dict) -> Tensor:
    if cls is not Tensor:
        t.__class__ = cls
    if attributes:
        t.__dict__.update(attributes)
    if requires_grad:
        t.requires_grad_(True)
    if grad is not None:
        t.grad = grad
    return t


def rebuild_tensor(cls, handle, offset, shape, strides, dtype, requires_grad, grad, attributes):
    """Unpickle a CPU tensor: map its segment (once per process) and view it."""
    segment = _open_segment(handle)
    array = np.ndarray(shape, np.dtype(dtype), buffer=segment.data(), offset=offset, strides=strides)
    return _finish(_dispatch.make(array, _cpu), cls, requires_grad, grad, attributes)


def _reduce_cuda(t: Tensor, backend):
    array = t._data
    try:
        handle, offset, device_index, size = backend.ipc_export(array)
    except Exception as exc:
        raise RuntimeError(
            f"could not export {t.device} memory by CUDA IPC handle ({exc}). A CUDA tensor received "
            "from another process cannot be sent again: clone() it first.") from exc
    # The producer keeps the allocation alive until every consumer's mapping of it is closed.
    address, key, pid = _handles.keep_alive(array)
    strides = array.strides
    return rebuild_cuda_tensor, (type(t), handle, offset, device_index, size, array.shape, strides,
                                 array.dtype.str, (address, key, pid), t._requires_grad, t.grad,
                                 _public_attributes(t))


def rebuild_cuda_tensor(cls, handle, offset, device_index, size, shape, strides, dtype, owner,
                        requires_grad, grad, attributes):
    """Unpickle a CUDA tensor: open its IPC handle (once per process) and view it."""
    device = tensor.device("cuda", device_index)
    backend = device.backend
    opened = _opened_ipc.get(handle)
    if opened is None:
        opened = _opened_ipc[handle] = backend.ipc_open(handle, device_index, size)
    weakref.finalize(opened, _handles.release, *owner)  # the producer may free it once we are done
    array = backend.ipc_array(opened, offset, shape, np.dtype(dtype), strides)
    return _finish(_dispatch.make(array, device), cls, requires_grad, grad, attributes)


def init_reductions() -> None:
    """Register the reducers (done on import of ``distrib.multiprocessing``)."""
    for cls in (Tensor, Parameter, Buffer):
        ForkingPickler.register(cls, reduce_tensor)
