"""``Tensor.type()``: PyTorch's legacy type names ("torch.FloatTensor", "torch.cuda.LongTensor").

The names keep PyTorch's ``torch.`` prefix so that code comparing ``x.type()`` with a string
ports unchanged; ``Tensor.type`` accepts them with a ``tensor.`` prefix too.
"""

from __future__ import annotations

from . import _dtype

_CLASS_NAMES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "float16": "HalfTensor",
    "bfloat16": "BFloat16Tensor",
    "int8": "CharTensor",
    "int16": "ShortTensor",
    "int32": "IntTensor",
    "int64": "LongTensor",
    "uint8": "ByteTensor",
    "bool": "BoolTensor",
    "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor",
}
_BY_CLASS = {cls: name for name, cls in _CLASS_NAMES.items()}


def type_name(dtype: _dtype.dtype, device_type: str) -> str:
    """The legacy name of a tensor with ``dtype`` on a device of ``device_type``."""
    prefix = "torch.cuda." if device_type == "cuda" else "torch."
    return prefix + _CLASS_NAMES.get(dtype.name, dtype.name)


def parse(name: str) -> tuple[_dtype.dtype, str]:
    """The dtype and device type a legacy name asks for ("torch.cuda.FloatTensor" -> float32, cuda).

    Raises:
        ValueError: for a name that is not a legacy tensor type.
    """
    parts = name.split(".")
    cls = parts[-1]
    head = parts[:-1]
    device_type = "cuda" if head[1:] == ["cuda"] else "cpu"
    if head not in (["torch"], ["tensor"], ["torch", "cuda"], ["tensor", "cuda"]) or cls not in _BY_CLASS:
        raise ValueError(f"invalid type: '{name}'")
    return _dtype._by_name(_BY_CLASS[cls]), device_type
