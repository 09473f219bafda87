"""``torch.nn``, ``torch.optim``, ``torch.utils.data``... spelled through ``tensor``.

PyTorch reaches its higher layers as attributes of ``torch`` (nanoGPT calls
``torch.optim.AdamW``, the tutorials ``torch.nn.CrossEntropyLoss``). Here they are packages above
``tensor`` (``nn``, ``nn.optim``, ``distrib``), so ``tensor`` imports them only on first access
to such an attribute: ``import tensor`` stays light and imports nothing from a higher layer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def module_getattr(
    owner: str, namespace: dict, table: dict[str, str], functions: dict[str, str] | None = None
) -> Callable[[str], object]:
    """A module-level ``__getattr__`` for module ``owner`` that imports ``table[name]`` (a module)
    on first access, or the module ``functions[name]`` and takes its attribute ``name`` (as
    ``torch.conv2d`` is ``torch.nn.functional.conv2d``), caches it in ``namespace`` (the module's
    globals) and returns it.

    The returned function raises AttributeError, as Python does, for a name in neither table.
    """
    functions = functions or {}

    def __getattr__(name: str) -> object:
        if name in table:
            value = importlib.import_module(table[name])
        elif name in functions:
            value = getattr(importlib.import_module(functions[name]), name)
        else:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    return __getattr__
