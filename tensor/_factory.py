"""``layout`` (``tensor.strided``) and the keywords every PyTorch factory function takes.

``torch.zeros(size=(2, 3), layout=torch.strided, pin_memory=False)`` and the like are valid
PyTorch; ``factory`` gives our creation functions the same keywords: ``size=`` in place of
positional sizes, ``layout=`` (only ``tensor.strided``: tensors here are dense), and
``pin_memory=`` (a copy in page-locked memory, which needs a CUDA device, as in PyTorch).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = ["layout", "strided", "factory"]


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
                args = (*args, *((size,) if isinstance(size, int) else tuple(size)))
            out = fn(*args, **kwargs)
            if not pin_memory:
                return out
            pinned = out.pin_memory()
            return pinned.requires_grad_() if out.requires_grad else pinned

        return create

    return decorate
