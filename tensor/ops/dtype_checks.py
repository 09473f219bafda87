"""PyTorch's errors for an op given a dtype it does not support: integer-only kernels given
floating point, ordering ops given complex numbers."""

from __future__ import annotations

from .. import _dtype


def not_implemented_for(kernel_name: str, d: _dtype.dtype) -> NotImplementedError:
    """PyTorch's error for a kernel that has no implementation for dtype ``d``
    (``"lt_cpu" not implemented for 'ComplexFloat'``)."""
    return NotImplementedError(f'"{kernel_name}" not implemented for \'{_dtype.scalar_type_name(d)}\'')


def check_integral(kernel_name: str, array) -> None:
    """Raise PyTorch's ``NotImplementedError`` for an integer-only kernel (bitwise ops, shifts,
    ``gcd``) given a floating or complex array (its inputs' promoted dtype)."""
    if array.dtype.kind in "fcV":
        raise not_implemented_for(kernel_name, _dtype.from_numpy_dtype(array.dtype))


def refuse_complex(input, message: str) -> None:
    """Raise PyTorch's ``RuntimeError(message)`` for an op that orders values (complex numbers
    have no order) given a complex tensor."""
    if input.dtype.is_complex:
        raise RuntimeError(message)


def refuse_complex_kernel(input, kernel_name: str) -> None:
    """Raise PyTorch's ``NotImplementedError`` naming ``kernel_name`` for an op that orders values
    given a complex tensor."""
    if input.dtype.is_complex:
        raise not_implemented_for(kernel_name, input.dtype)
