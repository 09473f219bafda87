"""``layout`` (``tensor.strided``) and the keywords every PyTorch factory function takes.

``torch.zeros(size=(2, 3), layout=torch.strided, pin_memory=False)`` and the like are valid
PyTorch; ``factory`` gives our creation functions the same keywords: ``size=`` in place of
positional sizes, ``layout=`` (only ``tensor.strided``: tensors here are dense), and
``pin_memory=`` (a copy in page-locked memory, which needs a CUDA device, as in PyTorch).

It also holds ``Size`` and ``as_int``/``as_ints``/``is_int``: how every size and dim argument is read: as PyTorch's
parser reads them, from anything with ``__index__`` (numpy integers, one-element integer tensors).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable

__all__ = ["layout", "strided", "factory", "Size", "as_int", "as_ints", "is_int"]


class Size(tuple):
    """``torch.Size``: a tuple of dimension sizes. ``Tensor.shape`` here returns a plain tuple, which
    compares equal to a ``Size`` of the same sizes; ``Size`` adds ``numel()``."""

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"tensor.Size({list(self)})"


def is_int(value) -> bool:
    """Whether ``value`` is one int argument (an int or anything with ``__index__``, such as a
    numpy integer) rather than a sequence of them; bools count, for ``as_int`` to refuse."""
    return type(value) is int or hasattr(type(value), "__index__")


def as_int(value, what: str = "dim") -> int:
    """``value`` as a Python int, as PyTorch reads an int argument (a size or a dim): ints and
    objects with ``__index__`` (numpy integers, one-element integer tensors).

    Raises:
        TypeError: for bools (``True`` is no dim or size in PyTorch), floats and other objects.
    """
    if type(value) is int:
        return value
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{what} must be int, not {type(value).__name__}")


def as_ints(values, what: str = "size") -> tuple:
    """``values`` (a sequence) as a tuple of Python ints, read as ``as_int`` reads each; the
    tuple itself when it holds only ints (the common case costs one pass of type checks).

    Raises:
        TypeError: as ``as_int``.
    """
    if type(values) is not tuple:
        values = tuple(values)
    for v in values:
        if type(v) is not int:
            return tuple(as_int(v, what) for v in values)
    return values


class layout:  # noqa: N801 - PyTorch's name
    """``torch.layout``: how a tensor's elements are stored. Every tensor here is ``strided``
    (dense, with strides); there are no sparse layouts."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"tensor.{self.name}"

    def __reduce__(self):
        return self.name  # the module-level object: pickles by reference


strided = layout("strided")
_LAYOUT = layout  # the factories' ``layout`` keyword shadows the class's name


def factory(sizes_from: int | None = None) -> Callable:
    """Decorate a creation function to take PyTorch's factory keywords (see the module docstring);
    ``sizes_from`` is the position where it takes its sizes as ``*size`` (1 after a ``self``), so
    that ``size=`` maps onto them; None when it takes no ``*size``.

    The decorated function raises TypeError for a ``layout`` that is not a ``tensor.layout``,
    RuntimeError for a layout other than ``tensor.strided``, and RuntimeError for
    ``pin_memory=True`` where no CUDA device exists."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def create(*args, layout=None, pin_memory: bool = False, **kwargs):
            if layout is not None and layout is not strided:
                if not isinstance(layout, _LAYOUT):
                    raise TypeError(f"{fn.__name__}(): argument 'layout' must be tensor.layout, not "
                                    f"{type(layout).__name__}")
                raise RuntimeError(f"{fn.__name__}(): layout {layout!r} is not supported; tensors here are strided")
            if sizes_from is not None and "size" in kwargs:
                if len(args) > sizes_from:
                    raise TypeError(f"{fn.__name__}() got sizes both positionally and as size=")
                size = kwargs.pop("size")
                args = (*args, *((size,) if is_int(size) else tuple(size)))
            out = fn(*args, **kwargs)
            if not pin_memory:
                return out
            pinned = out.pin_memory()
            return pinned.requires_grad_() if out.requires_grad else pinned

        return create

    return decorate
