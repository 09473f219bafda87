"""Creation ops: ``tensor``, ``zeros``, ``arange``, ``*_like``, ``from_numpy``, ``from_dlpack``."""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import _backend, _dispatch, _dtype
from . import _memory_format as _formats
from ._device import as_device, device_of_array
from ._factory import Size, as_ints, factory, is_int
from ._number_cast import scalar_in_dtype

__all__ = [
    "tensor", "as_tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "eye",
    "zeros_like", "ones_like", "empty_like", "full_like", "from_numpy", "from_dlpack",
]


def _finish(array, device, requires_grad):
    t = _dispatch.make(array, device)
    if _dispatch.tracer is not None:
        _dispatch.tracer.on_create(t)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _place(host_array, dtype, device):
    """Put a host array on ``device`` with ``dtype`` (numpy dtype or None)."""
    device = as_device(device)
    if device.type == "cpu":
        return host_array if dtype is None else host_array.astype(dtype, copy=False), device
    array = device.backend.asarray(host_array, dtype, device.index)
    return array, device_of_array(array)


def _sizes(size) -> tuple:
    """The sizes of a ``*size`` argument (``2, 3`` or one sequence), as a tuple of ints; numpy
    integers and other ``__index__`` objects are read as ints, as PyTorch does.

    Raises:
        TypeError: for a size that is no int (a float, a bool).
        RuntimeError: for a negative size.
    """
    size = as_ints(size[0] if len(size) == 1 and not is_int(size[0]) else size)
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension or bad size: {list(size)}")
    return size


@factory()
def tensor(data, *, dtype=None, device=None, requires_grad: bool = False):
    """Make a tensor that owns a copy of ``data`` (numbers, nested lists, arrays or tensors).

    Python floats give the default float dtype, ints give int64; numpy arrays and scalars and
    tensors keep theirs, also inside lists (a float64 one makes the result float64).

    Raises:
        TypeError: for data of an unsupported type (strings, objects), or Python complex numbers
            with a real ``dtype``.
        ValueError: for ragged nested lists, or Python ints beyond int64 without a ``dtype``.
        RuntimeError: for numbers (not numpy arrays) that an integer ``dtype`` cannot hold.
    """
    if _dispatch.is_tensor(data):
        out = data.detach().to(device or data.device, dtype or data.dtype, copy=True)
        return _finish(out._data, out._device, requires_grad)
    array_like = hasattr(data, "__array_interface__") or hasattr(data, "__cuda_array_interface__")
    if array_like and not isinstance(data, np.ndarray) and not isinstance(data, np.generic):
        backend, _ = _backend.backend_for_array(data)
        data = backend.to_numpy(data)
    try:
        host = np.array(data, copy=True)
    except ValueError as exc:
        raise ValueError(f"could not build a tensor from ragged or malformed data: {exc}") from None
    if host.dtype.kind in "OUSV":
        raise TypeError(f"Could not infer dtype of {type(data).__name__} (numpy parsed it as {host.dtype})")
    if dtype is not None:
        target = _dtype.as_dtype(dtype)
        if not isinstance(data, np.ndarray):
            _check_python_numbers(host, target, isinstance(data, np.generic))
    elif isinstance(data, (np.ndarray, np.generic)) or (host.dtype.char in "dD" and _holds_wide(data)):
        target = _dtype.from_numpy_dtype(host.dtype)
    else:
        _check_int64(host)
        target = _dtype.infer_dtype(host.dtype)
    array, dev = _place(host.astype(target.numpy, copy=False), None, device)
    return _finish(array, dev, requires_grad)


_PYTHON_NUMBERS = frozenset((float, int, bool, complex))


def _holds_wide(data) -> bool:
    """Whether nested sequences ``data`` hold a float64 or complex128 numpy scalar, array or tensor,
    whose dtype PyTorch keeps (Python floats alone take the default dtype)."""
    if isinstance(data, (list, tuple)):
        return not _PYTHON_NUMBERS.issuperset(map(type, data)) and any(map(_holds_wide, data))
    return getattr(getattr(data, "dtype", None), "name", None) in ("float64", "complex128")


def _check_python_numbers(host: np.ndarray, target, numpy_scalar: bool) -> None:
    """PyTorch's checks of numbers (parsed by numpy into ``host``) converted to ``target``.

    Raises:
        TypeError: for complex numbers (not a numpy scalar) and a real (not bool) ``target``.
        RuntimeError: for numbers an integer ``target`` cannot hold, as ``_check_fits``.
    """
    if host.dtype.kind == "c" and not (target.is_complex or target is _dtype.bool_ or numpy_scalar):
        raise TypeError(f"must be real number, not complex (for dtype {target.name})")
    if target.numpy.kind in "iu" and host.dtype != target.numpy:
        _check_fits(host, target)


def _check_fits(host: np.ndarray, target) -> None:
    """PyTorch's check of Python numbers converted to an integer dtype: floats must lie within
    its range (before truncation: -0.7 does not fit uint8); ints may also be negative down to
    minus an unsigned dtype's maximum, and wrap around.

    Raises:
        RuntimeError: for NaN, infinities or values outside the dtype's range.
    """
    if host.dtype.kind not in "iuf" or not host.size:
        return
    info = np.iinfo(target.numpy)
    if host.dtype.kind == "f":
        outside = (host < info.min) | (host > info.max) | (host != host)
    else:
        low = -info.max if info.min == 0 else info.min
        outside = (host < low) | (host > info.max)
    if outside.any():
        raise RuntimeError(f"value cannot be converted to type {target.name} without overflow")


def _check_int64(host: np.ndarray) -> None:
    """Python ints beyond int64, which numpy parses as uint64, are refused as in PyTorch.

    Raises:
        ValueError: for such a number.
    """
    if host.dtype == np.uint64 and host.size and host.max() > np.iinfo(np.int64).max:
        raise ValueError("Overflow when unpacking long long")


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a numpy array or tensor when it can (no other
    ``dtype`` or device is asked for)."""
    if _dispatch.is_tensor(data):
        return data.to(device or data.device, dtype or data.dtype)
    if isinstance(data, np.ndarray) and as_device(device).type == "cpu" and (
            dtype is None or _dtype.as_dtype(dtype).numpy == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def _filled(size, fill, dtype, device, requires_grad, strides=None):
    """A new tensor; ``strides`` (in elements, dense) lay it out other than row-major
    (``memory_format=``)."""
    d = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    device = as_device(device)
    xp = device.backend.xp
    device.backend.check_dtype(d.numpy)
    if fill is not None and type(fill) not in _PYTHON_NUMBERS:
        fill = _fill_number(fill)
    if type(fill) in (int, float) and d is not _dtype.float32 and d is not _dtype.float64:
        fill = scalar_in_dtype(fill, d)  # full(..., -1, dtype=uint8) is 255, as PyTorch
    stored = size if strides is None else math.prod(size)
    with device.backend.device_guard(device.index):
        if fill is None:
            array = xp.empty(stored, dtype=d.numpy)
        else:
            array = xp.full(stored, fill, dtype=d.numpy)
    if strides is not None:  # dense: the strides span exactly the elements stored
        byte_strides = tuple(s * array.itemsize for s in strides)
        array = _backend.storage_view(xp, array, size, byte_strides, 0, d.numpy)
    return _finish(array, device_of_array(array) if device.type != "cpu" else device, requires_grad)


def _fill_number(value):
    """A fill value as PyTorch reads it, a Python number: a 0-d tensor or numpy scalar gives its
    ``item()`` (``full((2,), tensor(1.5, dtype=float16))`` is float32, as a Python float's)."""
    return value.item() if hasattr(value, "item") and type(value) not in _PYTHON_NUMBERS else value


@factory(sizes_from=0)
def zeros(*size, dtype=None, device=None, requires_grad: bool = False):
    """A tensor of zeros (default float dtype unless ``dtype``)."""
    return _filled(_sizes(size), 0, dtype, device, requires_grad)


@factory(sizes_from=0)
def ones(*size, dtype=None, device=None, requires_grad: bool = False):
    """A tensor of ones."""
    return _filled(_sizes(size), 1, dtype, device, requires_grad)


@factory(sizes_from=0)
def empty(*size, dtype=None, device=None, requires_grad: bool = False, memory_format=_formats.contiguous_format):
    """An uninitialised tensor, laid out as ``memory_format`` asks.

    Raises:
        RuntimeError: for ``preserve_format`` (nothing to preserve), or channels_last and another rank.
    """
    size = _sizes(size)
    if _formats.check(memory_format, "empty") is _formats.preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    return _filled(size, None, dtype, device, requires_grad, _strides(memory_format, size, "empty"))


@factory()
def full(size, fill_value, *, dtype=None, device=None, requires_grad: bool = False):
    """A tensor filled with ``fill_value``; the dtype follows the value, as in PyTorch."""
    fill_value = _fill_number(fill_value)
    if dtype is None:
        dtype = _dtype.infer_dtype(np.asarray(fill_value).dtype)
    return _filled(_sizes((size,)), fill_value,
                   dtype, device, requires_grad)


def _like(input, dtype, device):
    return (input.dtype if dtype is None else dtype), (input.device if device is None else device)


def _strides(memory_format, shape: tuple, fn: str):
    """The strides ``_filled`` takes for ``memory_format`` (not ``preserve_format``), or None for
    row-major; raises as ``_formats.check`` and ``_formats.dim_order``."""
    order = _formats.dim_order(_formats.check(memory_format, fn), len(shape))
    return None if order == tuple(range(len(shape))) else _formats.dense_strides(shape, order)


def like_strides(input, memory_format, fn: str):
    """The strides ``_filled`` takes for a tensor like ``input`` laid out as ``memory_format``
    asks (``preserve_format``: Note [Preserved strides]), or None for row-major."""
    if memory_format is not _formats.preserve_format:
        return _strides(memory_format, input.shape, fn)
    if input._data.flags.c_contiguous and min(input._data.shape, default=2) > 1:
        return None  # the common case, kept cheap: numpy fixes no stride of a size-0 or size-1 dim
    return _formats.preserved_strides(input.shape, input.stride())


@factory()
def zeros_like(input, *, dtype=None, device=None, requires_grad: bool = False,
               memory_format=_formats.preserve_format):
    """Zeros with ``input``'s shape, dtype, device and (by default) layout."""
    dtype, device = _like(input, dtype, device)
    strides = like_strides(input, memory_format, "zeros_like")
    return _filled(input.shape, 0, dtype, device, requires_grad, strides)


@factory()
def ones_like(input, *, dtype=None, device=None, requires_grad: bool = False,
              memory_format=_formats.preserve_format):
    """Ones with ``input``'s shape, dtype, device and (by default) layout."""
    dtype, device = _like(input, dtype, device)
    strides = like_strides(input, memory_format, "ones_like")
    return _filled(input.shape, 1, dtype, device, requires_grad, strides)


@factory()
def empty_like(input, *, dtype=None, device=None, requires_grad: bool = False,
               memory_format=_formats.preserve_format):
    """An uninitialised tensor like ``input`` (shape, dtype, device and, by default, layout)."""
    dtype, device = _like(input, dtype, device)
    strides = like_strides(input, memory_format, "empty_like")
    return _filled(input.shape, None, dtype, device, requires_grad, strides)


@factory()
def full_like(input, fill_value, *, dtype=None, device=None, requires_grad: bool = False,
              memory_format=_formats.preserve_format):
    """``fill_value`` with ``input``'s shape, dtype, device and (by default) layout."""
    dtype, device = _like(input, dtype, device)
    strides = like_strides(input, memory_format, "full_like")
    return _filled(input.shape, fill_value, dtype, device, requires_grad, strides)


@factory(sizes_from=1)
def new_zeros(self, *size, dtype=None, device=None, requires_grad: bool = False):
    """Zeros of ``size`` with this tensor's dtype and device."""
    dtype, device = _like(self, dtype, device)
    return _filled(_sizes(size), 0, dtype, device, requires_grad)


@factory(sizes_from=1)
def new_ones(self, *size, dtype=None, device=None, requires_grad: bool = False):
    """Ones of ``size`` with this tensor's dtype and device."""
    dtype, device = _like(self, dtype, device)
    return _filled(_sizes(size), 1, dtype, device, requires_grad)


@factory(sizes_from=1)
def new_empty(self, *size, dtype=None, device=None, requires_grad: bool = False):
    """An uninitialised tensor of ``size`` with this tensor's dtype and device."""
    dtype, device = _like(self, dtype, device)
    return _filled(_sizes(size), None, dtype, device, requires_grad)


@factory()
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False):
    """``fill_value`` of ``size`` with this tensor's dtype and device."""
    dtype, device = _like(self, dtype, device)
    return _filled(_sizes((size,)), fill_value,
                   dtype, device, requires_grad)


def legacy_new(args: tuple, dtype, device):
    """What PyTorch's legacy constructors (``torch.Tensor(...)``, ``FloatTensor(...)``,
    ``x.new(...)``) make of arguments other than one tensor: nothing gives an empty tensor; ints
    (numpy ones too) or one ``Size`` an uninitialised tensor of those sizes; one sequence or array
    a copy in ``dtype`` (a plain tuple is data, as in PyTorch).

    Raises:
        TypeError: for one number that is no size (a float, a bool: data must be a sequence), or
            several arguments that are not all ints.
        RuntimeError: for a negative size.
    """
    if not args:
        return empty(0, dtype=dtype, device=device)
    if len(args) > 1 or isinstance(args[0], Size):
        return empty(*args, dtype=dtype, device=device)
    (data,) = args
    if type(data) is int or (is_int(data) and np.ndim(data) == 0 and not isinstance(data, (bool, np.bool_))):
        return empty(data, dtype=dtype, device=device)
    if isinstance(data, (numbers.Number, np.bool_)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    return tensor(data, dtype=dtype, device=device)


@factory()
def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False):
    """``tensor(data)`` with this tensor's dtype and device by default."""
    dtype, device = _like(self, dtype, device)
    return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


@factory()
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad: bool = False):
    """Values ``start, start+step, ...`` below ``end``; int64 unless an argument is a float. The
    arguments may be 0-d tensors; for an integer ``dtype`` they are truncated first, as in PyTorch.

    Raises:
        RuntimeError: for a zero step or one whose sign cannot reach ``end``.
        ValueError: for a step that truncates to zero.
        TypeError: for a tensor argument that is not 0-d.
    """
    if end is None:
        start, end = 0, start
    if not (type(start) in _PYTHON_NUMBERS and type(end) in _PYTHON_NUMBERS and type(step) in _PYTHON_NUMBERS):
        start, end, step = (scalar_argument("arange", v) for v in (start, end, step))
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    d = _dtype.as_dtype(dtype)
    start, end, step = checked_bounds("arange", start, end, step, d)
    count = max(math.ceil((end - start) / step), 0)
    host = (start + step * np.arange(count, dtype=np.float64)).astype(d.numpy) if d.is_floating_point \
        else np.arange(start, end, step, dtype=d.numpy)
    array, dev = _place(host, None, device)
    return _finish(array, dev, requires_grad)


def scalar_argument(op: str, value):
    """A bound or step of ``arange``/``range`` as a Python number (0-d tensors and numpy scalars
    are read).

    Raises:
        TypeError: for a tensor with elements other than one.
    """
    if _dispatch.is_tensor(value) and value.ndim:
        raise TypeError(f"{op}(): argument must be Number, not Tensor of shape {list(value.shape)}")
    return value.item() if hasattr(value, "item") else value


def checked_bounds(op: str, start, end, step, d) -> tuple:
    """``arange``/``range``'s bounds and step, as an integer ``d`` takes them, truncated (as
    PyTorch casts them first).

    Raises:
        RuntimeError: for a zero step or one whose sign cannot reach ``end``.
        ValueError: for a step that truncates to zero.
    """
    if step == 0:
        raise RuntimeError(f"{op}(): step must be nonzero")
    if not (d.is_floating_point or d.is_complex):
        start, end, step = int(start), int(end), int(step)
        if step == 0:
            raise ValueError(f"{op}(): step must be nonzero (it truncates to 0 for {d.name})")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"{op}(): upper bound and larger bound inconsistent with step sign "
            f"(start={start}, end={end}, step={step})"
        )
    return start, end, step


@factory()
def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    Raises:
        RuntimeError: for a negative ``steps``.
    """
    if steps < 0:
        raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
    d = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    array, dev = _place(np.linspace(start, end, steps).astype(d.numpy), None, device)
    return _finish(array, dev, requires_grad)


@factory()
def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False):
    """An ``n`` x ``m`` identity matrix.

    Raises:
        RuntimeError: for a negative ``n`` or ``m``.
    """
    for name, size in (("n", n), ("m", m)):
        if size is not None and size < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {size}")
    d = _dtype.as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    array, dev = _place(np.eye(n, m, dtype=d.numpy), None, device)
    return _finish(array, dev, requires_grad)


def from_numpy(array: np.ndarray):
    """A CPU tensor sharing memory with ``array``: changes to one show in the other.

    Raises:
        TypeError: for non-arrays or unsupported dtypes.
    """
    if not isinstance(array, np.ndarray):
        if _dispatch.tracer is not None and hasattr(array, "_tensor_"):  # tensor.compile's traced array
            return array._tensor_
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtype.from_numpy_dtype(array.dtype)
    return _finish(array, as_device("cpu"), False)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any DLPack producer (numpy, cupy, torch, ...)."""
    if _dispatch.is_tensor(ext_tensor):
        return ext_tensor
    kind, _ = ext_tensor.__dlpack_device__()
    device = as_device("cpu" if kind == 1 else "cuda")
    array = device.backend.from_dlpack(ext_tensor)
    _dtype.from_numpy_dtype(array.dtype)
    return _finish(array, device_of_array(array), False)
