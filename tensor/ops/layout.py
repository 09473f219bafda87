"""Ops that rearrange dims: ``unflatten``, ``Tensor.unfold`` (windows along a dim, as a view),
``swapaxes``/``swapdims``, ``moveaxis`` and ``atleast_1d/2d/3d``; and ``on_device``, which builds
index arrays on a tensor's device.

The other shape ops beyond views live beside it: flips and rolls in ``flips``, triangles and
diagonals in ``diagonals``, repeats, broadcasting, grids and combinations in ``repeats``.
"""

from __future__ import annotations

import math

from .. import _backend, _dispatch
from .._factory import is_int
from .reduction import wrap_dim
from .registry import defop
from .shape import flatten, movedim, reshape

__all__ = [
    "unflatten",
    "unfold",
    "swapaxes",
    "swapdims",
    "moveaxis",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
]


def on_device(device, fn):
    """``fn(xp)`` run with ``device`` current: for index arrays built on the device."""
    backend = device.backend
    return backend.launch(device.index, fn, backend.xp)


def unflatten(input, dim: int, sizes):
    """Split dim ``dim`` into ``sizes`` (one of them may be -1).

    Raises:
        RuntimeError: if ``sizes`` do not multiply up to the dim's size.
    """
    dim = wrap_dim(dim, input.ndim)
    sizes, size = tuple(sizes), input.shape[dim]
    known = math.prod(s for s in sizes if s != -1)
    if (known != size) if -1 not in sizes else (known == 0 or size % known):
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} ({size}) in the "
            "input tensor")
    sizes = tuple(size // known if s == -1 else s for s in sizes)  # from the dim: the input may be empty
    return reshape(input, input.shape[:dim] + sizes + input.shape[dim + 1 :])


@defop("unfold", is_view=True)
def _unfold(xp, a, dim, size, step):
    storage, start = _backend.storage_of(xp, a)
    windows = (a.shape[dim] - size) // step + 1
    shape = a.shape[:dim] + (windows,) + a.shape[dim + 1 :] + (size,)
    strides = a.strides[:dim] + (a.strides[dim] * step,) + a.strides[dim + 1 :] + (a.strides[dim],)
    return _backend.storage_view(xp, storage, shape, strides, start, a.dtype)


@_unfold.derivative
def _(node, g):
    dim, size, step = node.params
    windows = g.shape[dim]
    index = on_device(g._device, lambda xp: (xp.arange(windows)[:, None] * step + xp.arange(size)).reshape(-1))
    spread = flatten(movedim(g, -1, dim + 1), dim, dim + 1)  # window i's elements at i * size ...
    return (g.new_zeros(node.input_shapes[0]).index_add(dim, _dispatch.make(index, g._device), spread),)


def unfold(input, dimension: int, size: int, step: int):
    """``Tensor.unfold``: every window of ``size`` along ``dimension``, ``step`` apart, in a new last
    dim; a view (windows may overlap).

    Raises:
        RuntimeError: if ``size`` exceeds the dim's size or ``step`` is not positive.
    """
    dim = wrap_dim(dimension, input.ndim)
    n = input.shape[dim] if input.ndim else 1
    if size > n or size < 0:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if input.ndim == 0:
        return _dispatch.apply_unary(_unfold, input.reshape(1), (0, size, step)).reshape(size)
    return _dispatch.apply_unary(_unfold, input, (dim, size, step))


def swapaxes(input, axis0: int, axis1: int):
    """``transpose(input, axis0, axis1)`` (numpy's name)."""
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def moveaxis(input, source, destination):
    """Move dims ``source`` to positions ``destination`` (ints or sequences); a view.

    Raises:
        RuntimeError: if ``source`` and ``destination`` differ in length or repeat a dim.
    """
    src = (source,) if is_int(source) else tuple(source)
    dst = (destination,) if is_int(destination) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) "
            f"should contain the same number of dims as destination ({list(dst)} dims)"
        )
    src = [wrap_dim(d, input.ndim) for d in src]
    dst = [wrap_dim(d, input.ndim) for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    if input.ndim == 0:
        return input.view(())
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return input.permute(order)


def _atleast_shape(shape, n):
    """numpy's rule: 1-d (N) becomes (1, N) and (1, N, 1); 2-d (M, N) becomes (M, N, 1)."""
    if len(shape) >= n:
        return shape
    if n == 1 or len(shape) == 0:
        return (1,) * n
    if n == 2:
        return (1,) + shape
    return (1,) + shape + (1,) if len(shape) == 1 else shape + (1,)


def _atleast(n):
    def run(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        out = [t.reshape(_atleast_shape(t.shape, n)) if t.ndim < n else t for t in tensors]
        return out[0] if len(out) == 1 else tuple(out)

    run.__name__ = run.__qualname__ = f"atleast_{n}d"
    run.__doc__ = f"View each input with at least {n} dims (numpy's rule for where new dims go)."
    return run


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)
