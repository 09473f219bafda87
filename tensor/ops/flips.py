"""Ops that reorder elements along dims: ``flip`` (and ``fliplr``/``flipud``), ``roll`` and
``rot90``. ``flip`` and ``roll`` are primitives whose derivative is the same op (``roll`` by the
opposite shifts); ``rot90`` is a flip and a transpose."""

from __future__ import annotations

from .. import _dispatch
from .._factory import as_ints, is_int
from .reduction import normalize_dims, wrap_dim
from .registry import defop
from .shape import _sizes

__all__ = ["flip", "fliplr", "flipud", "roll", "rot90"]


@defop("flip")
def _flip(xp, a, dims):
    return xp.flip(a, dims).copy()


_flip.derivative(lambda node, g: (_dispatch.apply_unary(_flip, g, node.params),))


def flip(input, *given, dims=None):
    """A copy with the order of elements reversed along ``dims`` (given as dims, a tuple or ``dims=``).

    Raises:
        RuntimeError: if a dim appears twice.
        TypeError: if the dims are given both positionally and by keyword.
    """
    dims = _sizes("flip", given, "dims", dims)
    if not dims:
        return input.clone()
    return _dispatch.apply_unary(_flip, input, (normalize_dims(dims, input.ndim, "flip"),))


def fliplr(input):
    """Reverse the columns (dim 1).

    Raises:
        RuntimeError: for input with fewer than 2 dims.
    """
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


def flipud(input):
    """Reverse the rows (dim 0).

    Raises:
        RuntimeError: for 0-d input.
    """
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


@defop("roll")
def _roll(xp, a, shifts, dims):
    return xp.roll(a, shifts, dims)


@_roll.derivative
def _(node, g):
    shifts, dims = node.params
    return (_dispatch.apply_unary(_roll, g, (tuple(-s for s in shifts), dims)),)


def roll(input, shifts, dims=None):
    """Roll elements along ``dims`` by ``shifts`` (the flattened input if ``dims`` is None).

    Raises:
        RuntimeError: if ``shifts`` and ``dims`` differ in length.
    """
    shifts = as_ints((shifts,) if is_int(shifts) else shifts, "shift")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts {list(shifts)} need dims when more than one is given")
        return roll(input.reshape(-1), shifts, 0).reshape(input.shape)
    dims = (dims,) if is_int(dims) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    dims = tuple(wrap_dim(d, input.ndim) for d in dims)
    return _dispatch.apply_unary(_roll, input, (shifts, dims))


def rot90(input, k: int = 1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the second).

    Raises:
        RuntimeError: if ``dims`` is not two different dims of a >= 2-d input.
    """
    if len(dims) != 2 or input.ndim < 2:
        raise RuntimeError(
            f"expected total rotation dims == 2 and total dims >= 2, but got "
            f"{len(dims)} rotation dims and {input.ndim} dims"
        )
    d0, d1 = (wrap_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, (d0,)).transpose(d0, d1)
    return input.clone()
