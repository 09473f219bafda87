"""``tensor.finfo`` / ``tensor.iinfo``: the numeric limits of a dtype, as ``torch.finfo`` / ``torch.iinfo``
(attention masks use ``finfo(dtype).min``). Read from numpy (ml_dtypes for bfloat16 and float8)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from . import _dtype

_DEFAULT = object()  # finfo() without a type: the default dtype (None is refused, as in PyTorch)


class _Info:
    """What finfo and iinfo share: equality by dtype (unhashable, as PyTorch's) and the repr."""

    dtype: str
    _FIELDS: tuple

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.dtype == self.dtype

    def __repr__(self) -> str:
        # PyTorch prints the limits with 6 significant digits (``%g``)
        fields = ", ".join(f"{name}={getattr(self, name):g}" for name in self._FIELDS)
        return f"{type(self).__name__}({fields}, dtype={self.dtype})"


class finfo(_Info):  # noqa: N801 - PyTorch's name
    """Limits of a floating (or complex: of its real part) dtype, the default dtype when not given:
    ``bits``, ``eps``, ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype``.

    Raises:
        TypeError: for an integral or bool dtype, or a type that is no dtype (None too).
    """

    _FIELDS = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")

    def __init__(self, type: _dtype.dtype = _DEFAULT) -> None:  # noqa: A002 - PyTorch's name
        if type is None:
            raise TypeError("finfo(): argument 'type' (position 1) must be tensor.dtype, not NoneType")
        d = _dtype.get_default_dtype() if type is _DEFAULT else _dtype.as_dtype(type)
        if d.is_complex:
            d = _dtype.to_real(d)
        if not d.is_floating_point:
            raise TypeError(f"finfo() requires a floating point input type, got {d!r}")
        info = ml_dtypes.finfo(d.numpy)
        self.dtype = d.name
        self.bits = d.itemsize * 8
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        # PyTorch's 10 ** -digits10: the decimal digits the mantissa holds (1.0 for float8).
        self.resolution = 10.0 ** -math.floor(info.nmant * math.log10(2))


class iinfo(_Info):  # noqa: N801 - PyTorch's name
    """Limits of an integral dtype: ``bits``, ``max``, ``min``, ``dtype``.

    Raises:
        TypeError: for a floating, complex or bool dtype.
    """

    _FIELDS = ("min", "max")

    def __init__(self, type: _dtype.dtype) -> None:  # noqa: A002 - PyTorch's name
        d = _dtype.as_dtype(type)
        if d.is_floating_point or d.is_complex or d.name == "bool":
            raise TypeError(f"iinfo() requires an integer input type, got {d!r}")
        self.dtype = d.name
        self.bits = d.itemsize * 8
        info = np.iinfo(d.numpy)
        self.min, self.max = int(info.min), int(info.max)
