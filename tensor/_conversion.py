"""Moving tensors between devices and dtypes (``Tensor.to``), and pickling support."""

from __future__ import annotations

from . import _backend, _dispatch, _dtype
from . import _memory_format as _formats
from ._autograd_hooks import api, grad_mode
from ._device import device as _device_cls
from .ops.registry import defop
from .ops.strided import to_memory_format


@defop("to_dtype")
def _to_dtype(xp, a, np_dtype, source_dtype):
    return _backend.astype(xp, a, np_dtype)


@_to_dtype.derivative
def _(node, g):
    source = node.params[1]
    if g.is_complex() and not source.is_complex:  # a real tensor made complex: its gradient is the real part
        g = g.real
    return (g.to(source),)


@defop("to_device")
def _to_device(xp, a, target, source_device):
    return _backend.move(a, target.backend, target.index)


@_to_device.derivative
def _(node, g):
    return (g.to(node.params[1]),)


def parse_to(args, kwargs) -> tuple:
    """The ``(device, dtype, copy)`` that ``to(*args, **kwargs)`` asks for, read as PyTorch reads
    ``Tensor.to`` and ``Module.to``: a device, a dtype (or a Python type), or a tensor (its device
    and dtype), then the bools ``non_blocking`` (ignored: every copy here is synchronous) and
    ``copy``; each also by keyword. The dtype comes back as a ``tensor.dtype`` or None.

    Raises:
        TypeError: for an unexpected keyword argument or an unknown dtype.
    """
    kwargs = dict(kwargs)
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    flags = []  # positional non_blocking, then copy
    for arg in args:
        if _dispatch.is_tensor(arg):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, _dtype.dtype) or arg in (float, int, bool, complex):
            dtype = arg
        elif isinstance(arg, bool):
            flags.append(arg)
        elif arg is not None:
            device = arg
    if len(flags) > 1:
        copy = flags[1]
    return device, None if dtype is None else _dtype.as_dtype(dtype), copy


def to(tensor, *args, memory_format=_formats.preserve_format, **kwargs):
    """``Tensor.to``: see there."""
    device, dtype, copy = parse_to(args, kwargs)
    if memory_format is not _formats.preserve_format:
        return to_memory_format(to(tensor, device, dtype, copy=copy), _formats.check(memory_format, "to"))
    out = tensor
    if dtype is not None and dtype.numpy != out._data.dtype:
        if out._requires_grad and not (dtype.is_floating_point or dtype.is_complex):
            out = out.detach()  # integers carry no gradient: the cast ends the graph, as in PyTorch
        out = _dispatch.apply_unary(_to_dtype, out, (dtype.numpy, out.dtype))
        copy = False
    if device is not None:
        target_device = _device_cls(device)
        if target_device.type == "cuda" and target_device.index is None:
            target_device = _device_cls("cuda", target_device.backend.current_index())
        if target_device is not out._device:
            params = (target_device, out._device)
            moved = _dispatch.make(_to_device.kernel(None, out._data, *params), target_device)
            if out._requires_grad and grad_mode.enabled:
                api.record(_to_device, moved, (out,), params)
            if _dispatch.tracer is not None:
                _dispatch.tracer.record(_to_device, "to_device", (out,), params, moved)
            out, copy = moved, False
    if copy:
        out = out.clone()
    return out


def _rebuild(array, device_name, requires_grad):
    from ._creation import from_numpy  # noqa: PLC0415 - called only while unpickling

    t = from_numpy(array).to(device_name)
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(tensor):
    """Pickle support: the data goes by value (``distrib.multiprocessing`` shares it instead)."""
    if tensor._grad_fn is not None and tensor._requires_grad:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries. If you just want to transfer the "
            "data, call detach() on the tensor before serializing."
        )
    host = tensor._device.backend.to_numpy(tensor._data)
    return _rebuild, (host, str(tensor._device), tensor._requires_grad)


def deepcopy_tensor(tensor, memo):
    """``copy.deepcopy`` support for leaves: a copy of the data, ``requires_grad`` and ``grad``."""
    if tensor._grad_fn is not None:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment."
        )
    new = _dispatch.make(tensor._data.copy(), tensor._device)
    new.__class__ = type(tensor)
    new._requires_grad = tensor._requires_grad
    if tensor.grad is not None:
        new.grad = deepcopy_tensor(tensor.grad, memo)
    memo[id(tensor)] = new
    return new
