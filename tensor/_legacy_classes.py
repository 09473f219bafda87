"""``torch.FloatTensor`` & co. (``tensor.FloatTensor``...): PyTorch's legacy typed-tensor constructors, for old code.

``FloatTensor(2, 3)`` is an uninitialised 2x3 float32 tensor on the cpu, ``LongTensor([1, 2])``
one made from data, ``FloatTensor(Size((2, 3)))`` one of that shape; ``isinstance(x, FloatTensor)``
holds for a float32 cpu tensor, as in PyTorch. The names are those ``Tensor.type()`` returns
(tensor/_legacy_types.py).
"""

from __future__ import annotations

from . import _creation, _dtype, _legacy_types
from ._tensor import Tensor


class _LegacyType(type):
    """Metaclass: calling the class builds a plain Tensor; ``isinstance`` checks dtype and device."""

    dtype: _dtype.dtype

    def __call__(cls, *args) -> Tensor:
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype is not cls.dtype or args[0].device.type != "cpu":
                raise TypeError(f"expected {cls.__name__} (got {args[0].type()})")
            return args[0]
        return _creation.legacy_new(args, cls.dtype, None)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"


def _legacy(name: str, dtype: _dtype.dtype) -> _LegacyType:
    return _LegacyType(
        name, (), {"dtype": dtype, "__doc__": f"Legacy constructor of {dtype.name} cpu tensors (``torch.{name}``)."}
    )


# "FloatTensor" -> its class, for each legacy name Tensor.type() knows
CLASSES = {name: _legacy(name, _dtype._by_name(dt)) for dt, name in _legacy_types._CLASS_NAMES.items()}
