"""Views by explicit geometry: ``as_strided`` and its copy, scatter and in-place forms,
``slice_inverse``, ``storage_offset``, ``resize_as_`` (issue 16, coverage).

A tensor's storage is the array that owns its memory (``_backend.storage_of``: numpy's or
CuPy's ``.base`` chain), as PyTorch's storage is; offsets and strides are in elements.

Note [as_strided gradient]
--------------------------
The output's elements are storage positions ``offset + sum(i_k * stride_k)``, and so are the
input's. The gradient adds the output gradient into a zero storage at the output's positions
(several output elements may share one), then reads it back at the input's positions; where the
input overlaps itself (an expanded tensor), each position's gradient is shared equally by the
input elements on it, as PyTorch's ``as_strided_backward`` does. It is written with ``index_add`` and ``take``,
so it is differentiable again. A view replayed for an in-place write (``copy_slices``) takes the
geometry relative to the storage of the tensor it is replayed on, which matches the original
when the base is its storage's only owner (the usual case: a tensor that is not itself a view of
a numpy array passed in from outside).
"""

from __future__ import annotations

import math

from .. import _backend, _creation, _dispatch
from .. import _memory_format as formats
from .._autograd_hooks import grad_mode
from .registry import defop

__all__ = ["as_strided", "as_strided_", "as_strided_copy", "as_strided_scatter", "resize_as_", "slice_inverse"]
# ``to_memory_format`` is used by ``contiguous``, ``clone``, ``to`` and the creation ops' ``memory_format=``


def storage_offset(input) -> int:
    """The offset, in elements, of ``input``'s first element in its storage."""
    xp = input._device.backend.xp
    _, offset = _backend.storage_of(xp, input._data)
    return offset // input._data.itemsize


def check_geometry(size: tuple, stride: tuple, offset: int, item: int, have: int) -> None:
    """Raise RuntimeError (PyTorch's messages) for a geometry that is malformed or reaches outside
    a storage of ``have`` bytes."""
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = 0 if 0 in size else (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * item
    if needed > have:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and itemsize "
            f"{item} requiring a storage size of {needed} are out of bounds for storage of size {have}"
        )


@defop("as_strided", is_view=True)
def _as_strided(xp, a, size, stride, offset, input_geometry):
    storage, offset = _replay_storage(xp, a, size, stride, offset, input_geometry)
    item = a.itemsize
    return _backend.storage_view(xp, storage, size, tuple(s * item for s in stride), offset * item, a.dtype)


def _replay_storage(xp, a, size, stride, offset, input_geometry):
    """The storage to take the view from, and the offset there (Note [as_strided gradient]).

    Called as recorded, ``a`` has the input's geometry: its own storage. Replayed on another array
    of the input's shape (a gradient, a base's copy), the storage is rebuilt around it: ``a``
    itself when both are contiguous and the view stays inside ``a``, else a zero storage holding
    ``a``'s elements at the input's positions."""
    in_size, in_stride, in_offset = input_geometry
    item = a.itemsize
    storage, start = _backend.storage_of(xp, a)
    if tuple(s // item for s in a.strides) == in_stride and start // item == in_offset:
        return storage, offset
    extent = offset - in_offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    dense = tuple(math.prod(in_size[k + 1 :]) for k in range(len(in_size)))
    if a.flags.c_contiguous and in_stride == dense and offset >= in_offset and extent <= a.size:
        return a, offset - in_offset
    positions = in_offset + sum(
        xp.arange(n).reshape((-1,) + (1,) * (len(in_size) - k - 1)) * s
        for k, (n, s) in enumerate(zip(in_size, in_stride))
    )
    rebuilt = xp.zeros(max(offset + extent, in_offset + a.size, 1), a.dtype)
    rebuilt[positions] = a
    return rebuilt, offset


def _positions(like, size: tuple, stride: tuple, offset: int):
    """The storage position of each element of the geometry, as an int64 tensor of shape ``size``."""
    out = _creation.full((), offset, dtype=None, device=like.device).long()
    for n, s in zip(size, stride):
        out = out.unsqueeze(-1) + _creation.arange(n, device=like.device) * s
    return out


@_as_strided.derivative
def _(node, g):  # Note [as_strided gradient]
    size, stride, offset, (in_size, in_stride, in_offset) = node.params
    out_pos = _positions(g, size, stride, offset).reshape(-1)
    in_pos = _positions(g, in_size, in_stride, in_offset)
    length = 1 + max(_last(size, stride, offset), _last(in_size, in_stride, in_offset))
    storage = g.new_zeros(length).index_add(0, out_pos, g.reshape(-1))
    grad = storage.take(in_pos)
    if _overlaps(in_size, in_stride):  # several input elements share a position: they share its gradient
        in_flat = in_pos.reshape(-1)
        count = g.new_zeros(length).index_add(0, in_flat, g.new_ones(in_flat.shape))
        grad = grad / count.take(in_pos)
    return (grad,)


def _last(size: tuple, stride: tuple, offset: int) -> int:
    """The highest storage position of a geometry (its offset when it is empty)."""
    return offset if 0 in size else offset + sum((n - 1) * s for n, s in zip(size, stride))


def _overlaps(size: tuple, stride: tuple) -> bool:
    """Whether two elements of the geometry may share a storage position (a zero stride, or a dim
    whose stride does not clear the dims inside it)."""
    reach = 0
    for n, s in sorted((pair for pair in zip(size, stride) if pair[0] > 1), key=lambda pair: pair[1]):
        if s <= reach:
            return True
        reach += (n - 1) * s
    return False


def as_strided(input, size, stride, storage_offset: int | None = None):
    """A view of ``input``'s storage with the given sizes, strides and storage offset (elements);
    the offset defaults to ``input``'s own. Gradients flow back to ``input`` (Note [as_strided gradient]).

    >>> import tensor
    >>> tensor.arange(9.).as_strided((2, 2), (3, 1), 1)
    tensor([[1., 2.],
            [4., 5.]])

    Raises:
        RuntimeError: for negative sizes, strides or offset, ``size``/``stride`` of different
            lengths, or a view reaching outside the storage (PyTorch's messages).
    """
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    array = input._data
    storage, start = _backend.storage_of(input._device.backend.xp, array)
    item = array.itemsize
    geometry = (array.shape, tuple(s // item for s in array.strides), start // item)
    offset = geometry[2] if storage_offset is None else int(storage_offset)
    check_geometry(size, stride, offset, item, storage.nbytes)
    return _dispatch.apply_unary(_as_strided, input, (size, stride, offset, geometry))


def as_strided_copy(input, size, stride, storage_offset: int | None = None):
    """``as_strided``, copied into new storage (gradients flow through the copy).

    Raises:
        RuntimeError: as ``as_strided``.
    """
    return as_strided(input, size, stride, storage_offset).clone()


def as_strided_scatter(input, src, size, stride, storage_offset: int | None = None):
    """A copy of ``input`` whose ``as_strided(size, stride, storage_offset)`` region holds ``src``
    (the copy is contiguous; offsets count from its start). Differentiable in both.

    Raises:
        RuntimeError: if ``src``'s shape is not ``size``, or as ``as_strided``.
    """
    size = tuple(int(n) for n in size)
    if tuple(src.shape) != size:
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
            f"slice size = {list(size)}"
        )
    out = input.clone()
    out.as_strided(size, stride, 0 if storage_offset is None else storage_offset).copy_(src)
    return out


def as_strided_(input, size, stride, storage_offset: int | None = None):
    """Give ``input`` itself the geometry ``as_strided`` would return (in place; a tensor with
    history takes the view's history).

    Raises:
        RuntimeError: for a leaf that requires grad, or as ``as_strided``.
    """
    return take_view_in_place(input, lambda: as_strided(input, size, stride, storage_offset))


def take_view_in_place(input, make_view):
    """``input`` itself takes the geometry of the view ``make_view()`` returns (and, with history,
    the view's history): the in-place form of a view op (``as_strided_``, ``unsqueeze_``, ...).

    Raises:
        RuntimeError: for a leaf that requires grad, or what ``make_view`` raises.
    """
    if grad_mode.enabled and input._requires_grad and input._grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    view = make_view()
    input._data = view._data
    if view._grad_fn is not None:
        input._grad_fn, input._output_nr = view._grad_fn, view._output_nr
    return input


def slice_inverse(input, src, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1):
    """The inverse of ``src[start:end:step]`` along ``dim``: a view of ``input``'s storage with
    ``src``'s geometry (``input`` being such a slice of ``src``'s storage).

    Raises:
        RuntimeError: if that geometry reaches outside ``input``'s storage.
    """
    return as_strided(input, src.shape, src.stride(), storage_offset(src))


def resize_as_(input, the_template, memory_format=None):
    """Resize ``input`` in place to ``the_template``'s shape, keeping its first elements in
    storage order (new ones are uninitialised; ``memory_format`` is accepted for PyTorch's
    signature: tensors here are row-major).

    Raises:
        RuntimeError: if ``input`` requires grad (PyTorch cannot resize those either).
    """
    if input._requires_grad and grad_mode.enabled:
        raise RuntimeError("cannot resize variables that require grad")
    shape, numel = tuple(the_template.shape), math.prod(the_template.shape)
    if numel == input.numel() and input.is_contiguous():
        input._data = input._data.reshape(shape)
    else:
        fresh = _creation.empty(*shape, dtype=input.dtype, device=input.device)
        keep = min(numel, input.numel())
        fresh.reshape(-1)[:keep] = input.detach().reshape(-1)[:keep]
        input._data = fresh._data
    input._version_box[0] += 1
    return input


@defop("restride")
def _restride(xp, a, order):
    inverse = [0] * len(order)
    for position, d in enumerate(order):
        inverse[d] = position
    return xp.transpose(xp.transpose(a, order).copy(order="C"), inverse)


@_restride.derivative
def _(node, g):
    return (g,)


def to_memory_format(input, memory_format, *, copy: bool = False):
    """``input`` laid out as ``memory_format`` asks: itself when it already is (unless ``copy``),
    else a copy with those strides (gradients flow through it).

    Raises:
        RuntimeError: for channels_last(_3d) and a tensor of another rank.
    """
    if memory_format is formats.preserve_format:
        memory_format = formats.preserved(input.shape, input.stride())
    order = formats.dim_order(memory_format, input.ndim)
    if not copy and formats.is_laid_out(input.shape, input.stride(), memory_format):
        return input
    return _dispatch.apply_unary(_restride, input, (order,))


def clone_as(input, memory_format=formats.preserve_format):
    """``Tensor.clone(memory_format=...)``: a copy in new storage, laid out as asked
    (``preserve_format``: channels_last(_3d) tensors stay so, others keep their dims' order)."""
    if formats.check(memory_format, "clone") is formats.preserve_format:
        memory_format = formats.preserved(input.shape, input.stride())
    # Row-major copies of non-dense inputs too: ``clone``'s order-K copy made an expanded
    # (3, 3) input column-major, where PyTorch's is row-major.
    return to_memory_format(input, memory_format, copy=True)
