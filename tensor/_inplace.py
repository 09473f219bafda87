"""In-place ops (``add_``, ``x[i] = v``, ...): an out-of-place op written back into storage.

Every in-place op computes its result out of place, writes it into the tensor's
storage (so views and the base see it), and bumps the shared version counter,
which makes autograd refuse a stale saved tensor instead of returning a wrong
gradient. When autograd is recording, the result's graph node becomes the
tensor's history (see ``autograd.graph.rebase_history``).
"""

from __future__ import annotations

from . import _backend, _dispatch, ops
from ._autograd_hooks import api, grad_mode
from ._number_cast import scalar_in_dtype


def _recording(tensor, args) -> bool:
    """Whether writing into ``tensor`` from ``args`` is recorded.

    Raises:
        RuntimeError: for a view made in no_grad mode of a tensor that requires grad, written with
            grad mode enabled, as PyTorch.
    """
    if not grad_mode.enabled:
        return False
    if tensor._requires_grad:
        return True
    base = tensor._base
    if base is not None and base._requires_grad:  # made while not recording: in no_grad mode
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given "
            "that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
            "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
            "inplace to be tracked) or both outside (if you want the inplace to be tracked)."
        )
    return any(_dispatch.is_tensor(a) and a._requires_grad for a in args)


def _check_leaf(tensor) -> None:
    if tensor._requires_grad and tensor._grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    # every tensor the view was taken from, up to its base: a view made a leaf (``x.t().requires_grad_()``)
    # is one of them
    source = tensor._view_src
    while source is not None:
        parent = source[0]
        if parent._requires_grad and parent._grad_fn is None:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place operation."
            )
        source = parent._view_src


def _write(tensor, result) -> None:
    if result.shape != tensor.shape:
        raise RuntimeError(
            f"output with shape {list(tensor.shape)} doesn't match the broadcast shape "
            f"{list(result.shape)}"
        )
    check_cast(result.dtype, tensor.dtype)
    _store(tensor, Ellipsis, result._data)


def check_cast(result_dtype, target_dtype) -> None:
    """Raise PyTorch's RuntimeError when a result of ``result_dtype`` cannot be written into a
    tensor of ``target_dtype`` (down a kind: complex to real, float to integer, to bool)."""
    if result_dtype._category > target_dtype._category:
        raise RuntimeError(
            f"result type {result_dtype.name} can't be cast to the desired output type {target_dtype.name}"
        )


def _store(tensor, index, value) -> None:
    if tensor._is_inference and not grad_mode.inference:  # Note [Inference tensors] in _grad_state.py
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed. You can make "
            "a clone to get a normal tensor before doing inplace update."
        )
    if _dispatch.tracer is not None:
        _dispatch.tracer.on_store(tensor, index, value)
    device = tensor._device
    try:
        backend = device._backend or device.backend
        backend.launch(device.index, _set, backend.xp, tensor._data, index, value)
    except ValueError as exc:
        if "read-only" in str(exc):
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers "
                "to a single memory location. Please clone() the tensor before performing the "
                "operation."
            ) from None
        raise
    tensor._version_box[0] += 1


def _set(xp, array, index, value) -> None:
    if type(index) is tuple:
        _backend.check_index_bounds(xp, array.shape, index)
    array[index] = value


def commit(tensor, compute, args, kwargs):
    """Run ``compute(tensor, *args, **kwargs)`` and write the result into ``tensor``."""
    if _recording(tensor, args):
        _check_leaf(tensor)
        # The op may save its input for backward; give it the old values, not the new ones.
        result = compute(ops.clone(tensor), *args, **kwargs)
        _write(tensor, result)
        api.rebase_history(tensor, result)
    else:
        _write(tensor, compute(tensor, *args, **kwargs))
    return tensor


def inplace(fn):
    """The in-place method form of the out-of-place op ``fn``."""
    def method(self, *args, **kwargs):
        return commit(self, fn, args, kwargs)

    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = f"In-place version of ``{fn.__name__}``; returns ``self``."
    return method


def setitem(tensor, index, value) -> None:
    """``tensor[index] = value``, recorded by autograd when needed."""
    if _recording(tensor, (value,)):
        commit(tensor, ops.index_put, (index, value), {})
        return
    normalized, _ = ops.normalize_index(tensor, index)
    if type(value) in (int, float) and tensor._data.dtype.kind in "iu":  # -1 is 255 for uint8, as torch
        value = scalar_in_dtype(value, tensor.dtype)
    elif _dispatch.is_tensor(value):
        if value._device is not tensor._device:
            _dispatch.check_same_device("setitem", (tensor, value))
        if value._data.dtype != tensor._data.dtype:  # index tensors refuse it, as the recorded path
            ops.indexing.check_put_dtype(tensor, normalized, value, False)
        value = value._data
    try:
        _store(tensor, normalized, value)
    except IndexError as exc:
        raise IndexError(str(exc).replace("axis", "dimension")) from None


def _filled(tensor, value):
    mask = _dispatch.scalar_tensor(True, None, tensor._device)
    return ops.masked_fill(tensor, mask, value).expand(tensor.shape)


def fill_(tensor, value):
    """Fill with ``value`` (a number or a 0-d tensor); returns ``tensor``.

    Raises:
        RuntimeError: for a tensor ``value`` with dimensions, as PyTorch.
    """
    if _dispatch.is_tensor(value) and value.ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
    if not _recording(tensor, (value,)):
        if _dispatch.is_tensor(value):
            value = value._data
        elif type(value) in (int, float):
            value = scalar_in_dtype(value, tensor.dtype)
        _store(tensor, Ellipsis, value)
        return tensor
    return commit(tensor, _filled, (value,), {})


def zero_(tensor):
    """Fill with zeros; returns ``tensor``."""
    return fill_(tensor, 0)


def _copied(tensor, src):
    src = src.to(tensor.device, tensor.dtype)
    mask = _dispatch.scalar_tensor(True, None, tensor._device)
    return ops.where(mask, src, tensor).expand(tensor.shape)


def copy_(tensor, src, non_blocking: bool = False):
    """Copy ``src`` (broadcast, cast and moved as needed) into ``tensor``; returns ``tensor``.

    Raises:
        RuntimeError: if ``src`` does not broadcast to ``tensor``'s shape (PyTorch's words).
    """
    try:
        if not _recording(tensor, (src,)):
            moved = src.to(tensor.device)
            _store(tensor, Ellipsis, moved._data)
            return tensor
        return commit(tensor, _copied, (src,), {})
    except ValueError:  # numpy's broadcast error, checked only once it has failed
        raise _copy_shape_error(tensor, src) from None


def _copy_shape_error(tensor, src) -> RuntimeError:
    shape = ops.broadcast_shapes(tensor.shape, src.shape)  # raises PyTorch's error for mismatched sizes
    return RuntimeError(f"output with shape {list(tensor.shape)} doesn't match the broadcast shape {list(shape)}")
