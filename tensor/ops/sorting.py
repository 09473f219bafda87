"""Sorting and selection: sort, argsort, msort, topk, kthvalue, median, mode, searchsorted, bucketize.

Every op that returns values computes integer indices with a non-differentiable kernel and
gathers the values with ``gather``: the derivative (and double backward) is gather's.
"""

from __future__ import annotations

from .. import _backend, _dispatch, _dtype
from .dtype_checks import refuse_complex, refuse_complex_kernel
from .indexing import gather
from .reduction import values_indices, wrap_dim
from .registry import defop

__all__ = [
    "sort",
    "argsort",
    "msort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
    "searchsorted",
    "bucketize",
]


def _last_axis(xp, a, dim, body):
    """Run ``body(xp, a)`` with ``dim`` moved last; move the (same-rank) result back.

    Every body returns indices, so a bfloat16 or float8 ``a`` is ordered as its exact float32
    copy: ml_dtypes' own sort does not put NaN last.
    """
    out = body(xp, xp.moveaxis(_backend.widen(a), dim, -1))
    return xp.ascontiguousarray(xp.moveaxis(out, -1, dim))


def _argsort_last(xp, a, descending):
    # Stable both ways: descending is the reversed stable ascending sort of the reversed input,
    # so that ties keep their order and NaN (sorted as the largest value) comes first.
    if not descending:
        return xp.argsort(a, axis=-1, kind="stable")
    n = a.shape[-1]
    return (n - 1) - xp.argsort(a[..., ::-1], axis=-1, kind="stable")[..., ::-1]


@defop("argsort", differentiable=False)
def _argsort(xp, a, dim, descending):
    return _last_axis(xp, a, dim, lambda xp, b: _argsort_last(xp, b, descending))


def _values(input, dim, indices):
    return input.clone() if input.ndim == 0 else gather(input, dim, indices)


def argsort(input, dim: int = -1, descending: bool = False, *, stable: bool = False):
    """Indices that sort ``input`` along ``dim`` (always stable; NaN sorts as the largest value).

    Raises:
        RuntimeError: for a complex input, as PyTorch.
    """
    refuse_complex(input, "Sort does not support complex dtypes on CPU")
    dim = wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return _dispatch.apply_unary(_argsort, input.reshape(1), (0, descending)).reshape(())
    return _dispatch.apply_unary(_argsort, input, (dim, descending))


def sort(input, dim: int = -1, descending: bool = False, *, stable: bool = False):
    """Sort along ``dim``; returns ``(values, indices)``. Gradients flow to the sorted values."""
    indices = argsort(input, dim, descending)
    return values_indices(_values(input, wrap_dim(dim, input.ndim), indices), indices)


def msort(input):
    """The input sorted along its first dim (``sort(input, 0).values``)."""
    return sort(input, 0).values


@defop("topk_indices", differentiable=False)
def _topk_indices(xp, a, dim, k, largest, sorted_):
    def body(xp, b):
        n = b.shape[-1]
        if k == 0:
            return xp.zeros(b.shape[:-1] + (0,), dtype="int64")
        if largest:
            part = xp.argpartition(b, n - k, axis=-1)[..., n - k :] if k < n else xp.argsort(b, axis=-1)
        else:
            part = xp.argpartition(b, k - 1, axis=-1)[..., :k] if k < n else xp.argsort(b, axis=-1)
        if not sorted_:
            return part
        order = _argsort_last(xp, xp.take_along_axis(b, part, axis=-1), largest)
        return xp.take_along_axis(part, order, axis=-1)

    return _last_axis(xp, a, dim, body)


def topk(input, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``.

    Raises:
        RuntimeError: if ``k`` is negative or larger than the size of ``dim``, or for a complex
            input.
    """
    refuse_complex(input, "topk does not support complex dtypes on CPU")
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"selected index k out of range (k={k}, size of dim {dim} is {size})")
    flat = input.reshape(1) if input.ndim == 0 else input
    indices = _dispatch.apply_unary(_topk_indices, flat, (dim, k, largest, sorted))
    if input.ndim == 0:
        indices = indices.reshape(())
    return values_indices(_values(input, dim, indices), indices)


@defop("kth_index", differentiable=False)
def _kth_index(xp, a, dim, k, nan_first):
    def body(xp, b):
        index = xp.argsort(b, axis=-1, kind="stable")[..., k : k + 1]
        if nan_first and b.dtype.kind == "f":  # median propagates NaN: pick the first NaN
            nan = xp.isnan(b)
            index = xp.where(nan.any(axis=-1, keepdims=True), xp.argmax(nan, axis=-1)[..., None], index)
        return index

    return _last_axis(xp, a, dim, body)


def _select_kth(input, k, dim, keepdim, nan_first):
    dim = wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return values_indices(
            input.clone(), _dispatch.make(input._device.backend.xp.zeros((), dtype="int64"), input._device)
        )
    indices = _dispatch.apply_unary(_kth_index, input, (dim, k, nan_first))
    values = gather(input, dim, indices)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values_indices(values, indices)


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):
    """The ``k``-th smallest element (1-based) along ``dim``: ``(values, indices)``.

    Raises:
        RuntimeError: if ``k`` is out of range for the size of ``dim``.
        IndexError: if ``dim`` is empty.
        NotImplementedError: for a complex input, as PyTorch.
    """
    refuse_complex_kernel(input, "kthvalue_cpu")
    size = input.shape[wrap_dim(dim, input.ndim)] if input.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {dim} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim} (k={k}, size {size})")
    return _select_kth(input, k - 1, dim, keepdim, nan_first=False)


def _median(input, dim, keepdim, ignore_nan, name):
    refuse_complex_kernel(input, "median_cpu" if dim is None else "median_out")
    if dim is None:
        if input.numel() == 0:
            return input.new_full((), float("nan")) if input.dtype.is_floating_point else input.sum()
        flat = input.reshape(-1)
        return _median(flat, 0, False, ignore_nan, name).values
    size = input.shape[wrap_dim(dim, input.ndim)] if input.ndim else 1
    if size == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
    if ignore_nan and input.dtype.is_floating_point and input.ndim:
        # Lower median of the non-NaN values: NaN sorts last, so index by the non-NaN count.
        count = (~input.isnan()).sum(dim, keepdim=True)
        k = (count - 1).clamp(min=0) // 2
        indices = gather(argsort(input, dim), dim, k)
        values = gather(input, dim, indices)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return values_indices(values, indices)
    return _select_kth(input, (size - 1) // 2, dim, keepdim, nan_first=True)


def median(input, dim=None, keepdim: bool = False):
    """The lower median (of all elements, or ``(values, indices)`` along ``dim``); NaN propagates.

    Raises:
        NotImplementedError: for a complex input, as PyTorch.
    """
    return _median(input, dim, keepdim, False, "median")


def nanmedian(input, dim=None, keepdim: bool = False):
    """``median`` ignoring NaN values (same errors)."""
    return _median(input, dim, keepdim, True, "nanmedian")


@defop("mode_index", differentiable=False)
def _mode_index(xp, a, dim):
    def body(xp, b):
        order = xp.argsort(b, axis=-1, kind="stable")
        s = xp.take_along_axis(b, order, axis=-1)
        n = s.shape[-1]
        position = xp.arange(n)
        differs = s[..., 1:] != s[..., :-1]
        if s.dtype.kind == "f":  # NaNs (sorted last) are one value: the mode when the most frequent
            differs &= ~(xp.isnan(s[..., 1:]) & xp.isnan(s[..., :-1]))
        new_run = xp.concatenate([xp.ones(s.shape[:-1] + (1,), bool), differs], -1)
        start = _backend.running_scan(xp, "maximum", xp.where(new_run, position, 0))
        # The first place a run reaches the longest length ends the smallest most frequent value.
        end = xp.argmax(position - start, axis=-1)[..., None]
        return xp.take_along_axis(order, end, axis=-1)

    return _last_axis(xp, a, dim, body)


def mode(input, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` (the smallest on ties) and an index of it.

    Raises:
        NotImplementedError: for a complex input, as PyTorch.
    """
    refuse_complex_kernel(input, "mode_cpu")
    dim = wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        return _select_kth(input, 0, dim, keepdim, False)
    if input.shape[dim] == 0:
        raise IndexError(f"mode(): Expected reduction dim {dim} to have non-zero size.")
    indices = _dispatch.apply_unary(_mode_index, input, (dim,))
    values = gather(input, dim, indices)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return values_indices(values, indices)


@defop("searchsorted", differentiable=False)
def _searchsorted(xp, seq, values, side, np_dtype):
    if seq.ndim == 1:
        return seq.searchsorted(values, side=side).astype(np_dtype)
    rows_s = seq.reshape(-1, seq.shape[-1])
    rows_v = values.reshape(-1, values.shape[-1])
    out = xp.stack([s.searchsorted(v, side=side) for s, v in zip(rows_s, rows_v)])
    return out.reshape(values.shape).astype(np_dtype)


def searchsorted(
    sorted_sequence, input, *, out_int32: bool = False, right: bool = False, side: str | None = None, sorter=None
):
    """Indices where ``input`` would be inserted into ``sorted_sequence`` to keep it sorted.

    Raises:
        RuntimeError: if the leading dims of a N-d ``sorted_sequence`` and ``input`` differ, or
            ``side`` contradicts ``right``.
        NotImplementedError: for complex values, as PyTorch.
    """
    if side is not None:
        if side not in ("left", "right") or (side == "left" and right):
            raise RuntimeError(
                f"torch.searchsorted(): side must be 'left' or 'right' and agree with right={right}, got side={side!r}"
            )
        right = side == "right"
    scalar = not _dispatch.is_tensor(input)
    if scalar:
        input = _dispatch.scalar_tensor(input, None, sorted_sequence._device)
    if sorter is not None:
        sorted_sequence = gather(sorted_sequence, -1, sorter)
    if sorted_sequence.ndim > 1 and sorted_sequence.shape[:-1] != input.shape[:-1]:
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            f"dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor {list(input.shape)}"
        )
    dtype = _dtype.int32 if out_int32 else _dtype.int64
    if input.dtype is not sorted_sequence.dtype:
        common = _dtype.promote_types(input.dtype, sorted_sequence.dtype)
        input, sorted_sequence = input.to(common), sorted_sequence.to(common)
    refuse_complex_kernel(input, "searchsorted_out_cpu")
    return _dispatch.apply(_searchsorted, (sorted_sequence, input), ("right" if right else "left", dtype.numpy))


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    """The bucket of each element of ``input`` given 1-d ``boundaries``.

    With ``right=False`` bucket ``i`` holds ``boundaries[i-1] < x <= boundaries[i]``.

    Raises:
        RuntimeError: if ``boundaries`` is not 1-d.
    """
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
