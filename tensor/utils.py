"""``torch.utils`` spelled through ``tensor``: ``tensor.utils.data`` is ``distrib.data``,
``tensor.utils.checkpoint`` is ``nn.utils.checkpoint`` and ``tensor.utils.tensorboard`` is
``distrib.utils.tensorboard``, each imported on first access (they live in higher layers);
``tensor.utils.dlpack`` is ``tensor/_dlpack.py``."""

from __future__ import annotations

from ._higher_layers import module_getattr

__getattr__ = module_getattr(
    __name__,
    globals(),
    {
        "data": "distrib.data", "checkpoint": "nn.utils.checkpoint", "tensorboard": "distrib.utils.tensorboard",
        "dlpack": "tensor._dlpack",
    },
)
