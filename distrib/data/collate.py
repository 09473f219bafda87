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
import operator
import re

import numpy as np

import tensor
from tensor import Tensor, _dispatch

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


def _stack(arrays: list, alloc) -> np.ndarray:
    """``np.stack(arrays)`` into memory from ``alloc`` (PyTorch's message for unequal shapes).

    Stacking is one ``np.concatenate`` along the first axis into the (C-contiguous) output seen
    as ``(n * d0, d1, ...)``: the same bytes as a stack, at half the cost of ``np.stack``.
    """
    shapes = set(map(_shape_of, arrays))
    if len(shapes) != 1:
        raise _stack_error([a.shape for a in arrays])
    shape = arrays[0].shape
    dtypes = set(map(_dtype_of, arrays))
    dtype = dtypes.pop() if len(dtypes) == 1 else np.result_type(*dtypes)
    out = alloc((len(arrays), *shape), dtype)
    if shape:
        np.concatenate(arrays, axis=0, out=out.reshape(len(arrays) * shape[0], *shape[1:]))
    else:
        out[...] = arrays
    return out


_shape_of = operator.attrgetter("shape")
_dtype_of = operator.attrgetter("dtype")


def _from_values(values, dtype, alloc) -> Tensor:
    host = np.asarray(values, dtype=dtype)
    out = alloc(host.shape, host.dtype)
    out[...] = host
    return _dispatch.make(out, _cpu)


def _collate_ints(batch, alloc) -> Tensor:
    host = np.asarray(batch)  # ints (int64), bools (bool), or a mix with floats
    if host.dtype.kind == "f":
        host = host.astype(tensor.get_default_dtype().numpy)
    elif host.dtype.kind in "iu":
        host = host.astype(np.int64, copy=False)
    return _from_values(host, host.dtype, alloc)


def _collate_tensors(batch, alloc) -> Tensor:
    elem = batch[0]
    if elem.device.type != "cpu":
        return tensor.stack(list(batch), 0)
    try:
        arrays = [t._data for t in batch]
    except AttributeError:  # a non-tensor among the tensors
        raise TypeError(f"expected Tensor as element {[type(t) for t in batch]} in argument 0") from None
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
        return _from_values(batch, np.float64, alloc)
    if elem_type is int or elem_type is bool:
        return _collate_ints(batch, alloc)
    if elem_type is str or elem_type is bytes:
        return batch
    if isinstance(elem, np.ndarray):
        return _collate_arrays(batch, alloc)
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        if isinstance(elem, np.object_):
            raise TypeError(default_collate_err_msg_format.format(elem.dtype))
        return _from_values(batch, None, alloc)
    if isinstance(elem, float):
        return _from_values(batch, np.float64, alloc)
    if isinstance(elem, int):
        return _collate_ints(batch, alloc)
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

    Tensors and numpy arrays are stacked; ``int`` gives int64, ``float`` float64, numpy scalars
    keep their dtype; strings and bytes stay a list; mappings, namedtuples and sequences are
    collated field by field (a tuple sample gives a list, as in PyTorch).

        >>> default_collate([(0, 1.5), (2, 3.5)])
        [tensor([0, 2]), tensor([1.5000, 3.5000], dtype=tensor.float64)]

    Raises:
        TypeError: for a leaf of another type, or numpy arrays of strings or objects.
        RuntimeError: for sequences of unequal length, or tensors of unequal shape.
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
