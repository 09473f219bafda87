"""``default_collate`` and ``default_convert``: samples to batches, as in ``torch.utils.data``.

Collation is recursive over tensors, numpy arrays, numbers, strings, mappings, namedtuples and
sequences; every leaf becomes one tensor per batch (strings and bytes stay a list). Tensors and
arrays are stacked with one ``np.stack`` into memory from ``alloc``: plain ``np.empty`` here, and
in a DataLoader worker a slice of the worker's shared-memory batch buffer, so that the batch is
written exactly once and crosses to the main process without another copy (see ``_worker.py``).
"""

from __future__ import annotations

import collections.abc
import copy
import functools
import operator
import re

import numpy as np

import tensor
from tensor import Tensor, _dispatch, _dtype

__all__ = ["default_collate", "default_convert"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")
default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")
_cpu = tensor.device("cpu")


def _empty(shape, dtype) -> np.ndarray:
    return np.empty(shape, dtype)


def _like_mapping(like, items: dict):
    """``items`` as a mapping of ``like``'s type (a copy of ``like`` updated, when it is mutable); the
    plain dict when that type cannot be built that way."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(items)
            return clone
        return type(like)(items)
    except TypeError:
        return items


def _like_sequence(like, items: list):
    """``items`` as a sequence of ``like``'s type (a copy of ``like`` with its entries replaced, when it
    is mutable); the plain list when that type cannot be built that way."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(like)(items)
    except TypeError:
        return items


def _stack_error(shapes) -> RuntimeError:
    first = list(shapes[0])
    for i, shape in enumerate(shapes):
        if tuple(shape) != tuple(first):
            return RuntimeError(f"stack expects each tensor to be equal size, but got {first} at entry 0 "
                                f"and {list(shape)} at entry {i}")
    return RuntimeError("stack: inputs could not be stacked")


def _tensor_dtype(np_dtype: np.dtype) -> tensor.dtype:
    """The tensor dtype of numpy data of ``np_dtype``.

    Raises:
        ValueError: for a non-native byte order (as PyTorch).
        TypeError: for a dtype no tensor has (strings, objects, dates, uint16 and wider unsigned).
    """
    if not np_dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    return _dtype.from_numpy_dtype(np_dtype)


def _stacked_dtype(np_dtypes: set) -> np.dtype:
    """The dtype a stack of arrays of ``np_dtypes`` has: PyTorch's promotion of them, not numpy's
    (``int32`` with ``float32`` gives ``float32``; ``bfloat16`` with ``float16`` gives ``float32``)."""
    if len(np_dtypes) == 1:
        (only,) = np_dtypes
        _tensor_dtype(only)
        return only
    return functools.reduce(tensor.promote_types, map(_tensor_dtype, np_dtypes)).numpy


def _stack(arrays: list, alloc) -> np.ndarray:
    """``np.stack(arrays)`` into memory from ``alloc``, with PyTorch's dtype promotion and its
    message for unequal shapes.

    Stacking is one ``np.concatenate`` along the first axis into the (C-contiguous) output seen
    as ``(n * d0, d1, ...)``: the same bytes as a stack, at half the cost of ``np.stack``.

    Raises:
        RuntimeError: for unequal shapes.
        TypeError, ValueError: for a dtype no tensor has (see ``_tensor_dtype``).
    """
    shapes = set(map(_shape_of, arrays))
    if len(shapes) != 1:
        raise _stack_error([a.shape for a in arrays])
    shape = arrays[0].shape
    dtypes = set(map(_dtype_of, arrays))
    dtype = _stacked_dtype(dtypes)
    if len(dtypes) > 1:
        arrays = [a.astype(dtype, copy=False) for a in arrays]
    out = alloc((len(arrays), *shape), dtype)
    if shape:
        np.concatenate(arrays, axis=0, out=out.reshape(len(arrays) * shape[0], *shape[1:]))
    else:
        out[...] = arrays
    return out


_shape_of = operator.attrgetter("shape")
_dtype_of = operator.attrgetter("dtype")
_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def _from_values(values, dtype, alloc) -> Tensor:
    host = np.asarray(values, dtype=dtype)
    out = alloc(host.shape, host.dtype)
    out[...] = host
    return _dispatch.make(out, _cpu)


def _numpy_guess(batch) -> np.ndarray | None:
    """``np.asarray(batch)``, or None where numpy cannot make one array of it."""
    try:
        return np.asarray(batch)
    except (ValueError, TypeError):
        return None


def _element_dtype(value) -> tensor.dtype:
    """The dtype PyTorch infers for one number of a batch: int64 for a Python int, the default
    dtype for a float, the default complex dtype for a complex, a numpy scalar's or a 0-d
    array's or tensor's own dtype.

    Raises:
        TypeError: for strings, sequences and arrays with dimensions, or unsupported numpy dtypes.
        RuntimeError: for any other non-number (as PyTorch's "Could not infer dtype").
    """
    if isinstance(value, (np.generic, np.ndarray, Tensor)):  # first: np.float64 is a float too
        if value.ndim:
            raise TypeError(f"expected a number in the batch, got an array of shape {tuple(value.shape)}")
        return value.dtype if isinstance(value, Tensor) else _tensor_dtype(value.dtype)
    if isinstance(value, bool):
        return tensor.bool
    if isinstance(value, int):
        return tensor.int64
    if isinstance(value, float):
        return tensor.get_default_dtype()
    if isinstance(value, complex):
        return _dtype.to_complex(tensor.get_default_dtype())
    if isinstance(value, (str, bytes, collections.abc.Sequence)):
        raise TypeError(f"expected a number in the batch, got {type(value).__name__}")
    raise RuntimeError(f"Could not infer dtype of {type(value).__name__}")


def _collate_numbers(batch, expected: np.dtype, alloc) -> Tensor:
    """``tensor.tensor(batch)`` for a batch of numbers whose first element alone would give
    ``expected``: numpy builds the array when it agrees with PyTorch (one dtype throughout), and
    PyTorch's inference decides otherwise (``[np.float32(1), 2.0]`` is float32, not float64).

    Raises:
        TypeError, RuntimeError: for non-numbers (see ``_element_dtype``).
        ValueError: for Python ints outside int64.
    """
    host = _numpy_guess(batch)
    if host is not None and host.dtype == expected:
        _tensor_dtype(expected)  # refuses numpy scalars of a dtype no tensor has (uint16, ...)
        return _from_values(host, None, alloc)
    dtype = functools.reduce(tensor.promote_types, map(_element_dtype, batch))
    try:
        return _from_values(batch, dtype.numpy, alloc)
    except OverflowError:
        raise ValueError(f"Overflow when unpacking long long: an int in the batch is outside {dtype}") from None


def _collate_floats(batch, alloc) -> Tensor:
    """A float64 tensor of a batch of Python floats (and other real numbers).

    Raises:
        TypeError: for anything that is not a real number (None, strings and complex included).
    """
    host = _numpy_guess(batch)
    if host is None or host.dtype.kind not in "biuf":
        for value in batch:
            try:
                real = not _element_dtype(value).is_complex
            except (TypeError, RuntimeError):
                real = False
            if not real:
                raise TypeError(f"must be real number, not {type(value).__name__}")
        host = batch
    return _from_values(host, np.float64, alloc)


def _collate_tensors(batch, alloc) -> Tensor:
    elem = batch[0]
    if elem.device.type != "cpu":
        return tensor.stack(list(batch), 0)
    try:
        arrays = [t._data for t in batch]
    except AttributeError:  # a non-tensor among the tensors
        raise TypeError(f"expected Tensor as element {[type(t) for t in batch]} in argument 0") from None
    if any([t._requires_grad for t in batch]):  # the batch joins the autograd graph, as torch.stack's does
        return tensor.stack(list(batch), 0)
    return _dispatch.make(_stack(arrays, alloc), _cpu)


def _collate_arrays(batch, alloc) -> Tensor:
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    arrays = [np.asarray(b) for b in batch]
    return _dispatch.make(_stack(arrays, alloc), _cpu)


def collate(batch, alloc=_empty):
    """``default_collate`` with the memory of stacked leaves taken from ``alloc(shape, dtype)``."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _collate_tensors(batch, alloc)
    if elem_type is float:
        return _collate_floats(batch, alloc)
    if elem_type is int:
        return _collate_numbers(batch, _INT64, alloc)
    if elem_type is bool:
        return _collate_numbers(batch, _BOOL, alloc)
    if elem_type is str or elem_type is bytes:
        return batch
    if isinstance(elem, np.ndarray):
        return _collate_arrays(batch, alloc)
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        if isinstance(elem, np.object_):
            raise TypeError(default_collate_err_msg_format.format(elem.dtype))
        return _collate_numbers(batch, elem.dtype, alloc)
    if isinstance(elem, float):
        return _collate_floats(batch, alloc)
    if isinstance(elem, int):
        return _collate_numbers(batch, _INT64, alloc)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _like_mapping(elem, {key: collate([d[key] for d in batch], alloc) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, alloc) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, alloc) for samples in transposed]  # a list, as PyTorch does
        return _like_sequence(elem, [collate(samples, alloc) for samples in transposed])
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def default_collate(batch):
    """Stack a list of samples into a batch: each leaf becomes one tensor with a batch dimension.

    Tensors and numpy arrays are stacked (mixed dtypes promote by PyTorch's rules, and a batch
    of tensors that require grad is part of the autograd graph); ``int`` gives int64, ``float``
    float64, numpy scalars keep their dtype (mixed numbers are inferred as ``tensor.tensor``
    does); strings and bytes stay a list; mappings, namedtuples and sequences are collated
    field by field (a tuple sample gives a list, as in PyTorch).

        >>> default_collate([(0, 1.5), (2, 3.5)])
        [tensor([0, 2]), tensor([1.5000, 3.5000], dtype=tensor.float64)]

    Raises:
        TypeError: for a leaf of another type, numpy arrays of a dtype no tensor has (strings,
            objects, dates, uint16 and wider unsigned), or non-numbers among numbers.
        RuntimeError: for sequences of unequal length, tensors of unequal shape, or ``None`` and
            other objects among ints or numpy scalars (as PyTorch).
        ValueError: for ints outside int64, or numpy arrays of non-native byte order.
    """
    return collate(batch)


def default_convert(data):
    """Turn numpy arrays and numpy scalars into tensors, recursively; everything else is kept.

    The collate function a DataLoader uses when automatic batching is off (``batch_size=None``).
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ == "ndarray" and _np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return tensor.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _like_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, as PyTorch does
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _like_sequence(data, [default_convert(d) for d in data])
    return data
