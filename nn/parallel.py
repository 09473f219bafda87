"""``nn.parallel``: the names of ``torch.nn.parallel``. ``DataParallel`` is nn's own;
``DistributedDataParallel`` is ``distrib``'s (the layer above nn), imported on first access,
so ``from nn.parallel import DistributedDataParallel`` ports torch's usual spelling."""

from __future__ import annotations

import importlib

from .modules.misc import DataParallel

__all__ = ["DataParallel"]  # and DistributedDataParallel, on first access


def __getattr__(name: str):
    if name == "DistributedDataParallel":
        return importlib.import_module("distrib").DistributedDataParallel
    raise AttributeError(f"module 'nn.parallel' has no attribute {name!r}")
