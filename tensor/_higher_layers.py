"""``torch.nn``, ``torch.optim``, ``torch.utils.data``... spelled through ``tensor``.

PyTorch reaches its higher layers as attributes of ``torch`` (nanoGPT calls
``torch.optim.AdamW``, the tutorials ``torch.nn.CrossEntropyLoss``). Here they are packages above
``tensor`` (``nn``, ``nn.optim``, ``distrib``), so ``tensor`` imports them only on first access
to such an attribute: ``import tensor`` stays light and imports nothing from a higher layer.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType


def module_getattr(owner: str, namespace: dict, table: dict[str, str]) -> Callable[[str], ModuleType]:
    """A module-level ``__getattr__`` for module ``owner`` that imports ``table[name]`` on first
    access, caches it in ``namespace`` (the module's globals) and returns it.

    The returned function raises AttributeError, as Python does, for a name not in ``table``.
    """

    def __getattr__(name: str) -> ModuleType:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {owner!r} has no attribute {name!r}")
        module = importlib.import_module(target)
        namespace[name] = module
        return module

    return __getattr__
