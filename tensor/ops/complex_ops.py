"""Complex numbers: real, imag, conj, angle, view_as_real, view_as_complex, complex, polar.

Gradients follow PyTorch's convention for a real loss ``L`` of complex ``z = x + iy``: the
gradient is ``dL/dx + i dL/dy`` (the conjugate Wirtinger derivative, times 2). So ``real``'s
derivative maps ``g`` to ``g + 0i``, ``imag``'s to ``i g``, and ``view_as_real`` and
``view_as_complex`` are each other's derivative. ``real``, ``imag``, ``view_as_real`` and
``view_as_complex`` return views sharing the input's memory, as in PyTorch; the others return copies.
"""

from __future__ import annotations

import math

from .. import _dispatch, _dtype
from .registry import defop

__all__ = ["real", "imag", "conj", "conj_physical", "angle", "view_as_real", "view_as_complex", "complex", "polar"]


def _check_complex(name, input):
    if not input.dtype.is_complex:
        raise RuntimeError(f"{name} is not implemented for tensors with non-complex dtypes (got {input.dtype.name}).")


@defop("real", is_view=True)
def _real(xp, a):
    return a.real  # numpy's and CuPy's: a writable view of the real parts


_real.derivative(lambda node, g: (complex(g, g.new_zeros(g.shape)),))


@defop("imag", is_view=True)
def _imag(xp, a):
    return a.imag


_imag.derivative(lambda node, g: (complex(g.new_zeros(g.shape), g),))


def real(input):
    """The real part, a view (the input itself for real dtypes)."""
    return _dispatch.apply_unary(_real, input) if input.dtype.is_complex else input


def imag(input):
    """The imaginary part, a view.

    Raises:
        RuntimeError: for real dtypes, as PyTorch.
    """
    _check_complex("imag", input)
    return _dispatch.apply_unary(_imag, input)


@defop("conj")
def _conj(xp, a):
    return xp.conj(a)


_conj.derivative(lambda node, g: (conj(g),))


def conj(input):
    """The complex conjugate (the input itself for real dtypes)."""
    return _dispatch.apply_unary(_conj, input) if input.dtype.is_complex else input


conj_physical = conj


@defop("angle_real")
def _angle_real(xp, a):
    # -0.0 and +inf give 0, -inf gives pi and NaN stays NaN, as in PyTorch.
    return xp.where(a < 0, math.pi, xp.where(xp.isnan(a), a, 0)).astype(a.dtype, copy=False)


_angle_real.derivative(lambda node, g: (g.new_zeros(g.shape),))


def angle(input):
    """The argument of each element (``atan2(imag, real)``; 0 or pi for real inputs, in their
    floating dtype, the default float for integers and bool)."""
    if input.dtype.is_complex:
        return imag(input).atan2(real(input))
    x = input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())
    return _dispatch.apply_unary(_angle_real, x)


@defop("view_as_real", is_view=True)
def _view_as_real(xp, a):
    # A new unit dim keeps the last dim contiguous whatever the strides, so the dtype view holds.
    return a[..., None].view(a.real.dtype)


_view_as_real.derivative(lambda node, g: (view_as_complex(g.contiguous()),))


def view_as_real(input):
    """A view of a complex tensor as real pairs in a new last dim of size 2, sharing its memory.

    Raises:
        RuntimeError: for real dtypes.
    """
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _dispatch.apply_unary(_view_as_real, input)


@defop("view_as_complex", is_view=True)
def _view_as_complex(xp, a):
    return a.view(xp.result_type(a.dtype, xp.complex64))[..., 0]


_view_as_complex.derivative(lambda node, g: (view_as_real(g.contiguous()),))


def view_as_complex(input):
    """A view of real pairs in a last dim of size 2 as one complex tensor, sharing their memory.

    Raises:
        RuntimeError: unless the input is float32 or float64 with a last dim of size 2 and stride 1,
            other strides and a storage offset that are even (PyTorch's messages; float16, which
            would give complex32, is not supported).
    """
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(
            f"view_as_complex is only supported for float and double tensors, but got a tensor "
            f"of scalar type: {_dtype.scalar_type_name(input.dtype)}"
        )
    _check_complex_view(input)
    return _dispatch.apply_unary(_view_as_complex, input)


def _check_complex_view(input) -> None:
    """PyTorch's checks that real pairs can be read as complex elements in place.

    Raises:
        RuntimeError: for a 0-d input, a last dim not of size 2 or not of stride 1, another
            dim's stride that is odd (dims of size 1 excepted), or an odd storage offset.
    """
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(stride % 2 and size != 1 for size, stride in zip(input.shape[:-1], strides[:-1])):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")


@defop("complex")
def _complex(xp, re, im):
    return re + 1j * im


_complex.derivative(lambda node, g: (real(g), imag(g)))


def complex(real, imag):  # noqa: A001 - PyTorch's name
    """The complex tensor ``real + i imag`` (float32 parts give complex64, float64 complex128).

    Raises:
        RuntimeError: unless both parts are float32 or float64 tensors of the same dtype
            (complex32, of float16 parts, is not supported).
    """
    _check_parts(real, imag)
    if real.dtype is _dtype.float16:
        raise RuntimeError("complex(): complex32 (ComplexHalf) is not supported: give float32 or float64 parts")
    out = _dispatch.apply(_complex, (real, imag))
    target = _dtype.to_complex(real.dtype).numpy
    return out if out._data.dtype == target else out.to(_dtype.to_complex(real.dtype))


def polar(abs, angle):  # noqa: A002 - PyTorch's names
    """The complex tensor with modulus ``abs`` and argument ``angle``.

    Raises:
        RuntimeError: unless both are float tensors of the same dtype.
        NotImplementedError: for float16 ones, as PyTorch.
    """
    _check_parts(abs, angle)
    if abs.dtype is _dtype.float16:
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    return complex(abs * angle.cos(), abs * angle.sin())


_PART_DTYPES = (_dtype.float16, _dtype.float32, _dtype.float64)


def _check_parts(first, second) -> None:
    """PyTorch's checks of the two real tensors that ``complex`` and ``polar`` combine.

    Raises:
        RuntimeError: unless both are float16, float32 or float64 tensors of the same dtype.
    """
    first_name, second_name = _dtype.scalar_type_name(first.dtype), _dtype.scalar_type_name(second.dtype)
    if first.dtype not in _PART_DTYPES or second.dtype not in _PART_DTYPES:
        raise RuntimeError(
            f"Expected both inputs to be Half, Float or Double tensors but got {first_name} and {second_name}")
    if first.dtype is not second.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {first_name} but got scalar type {second_name} for second argument")
