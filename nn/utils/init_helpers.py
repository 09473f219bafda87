"""``skip_init`` and the memory-format converters of ``torch.nn.utils``."""

from __future__ import annotations

import inspect
from typing import Any

from ..modules.module import Module

__all__ = ["skip_init", "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def skip_init(module_cls: type[Module], *args: Any, **kwargs: Any) -> Module:
    """``module_cls(*args, **kwargs)``. PyTorch skips the parameter initialisation (builds on the
    meta device, then allocates); here the module is built and initialised normally, so the
    values are defined rather than arbitrary.

    Raises:
        RuntimeError: if ``module_cls`` does not accept a ``device`` argument (as PyTorch).
    """
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Return ``module`` unchanged: tensors here have no channels-last memory format."""
    return module


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """Return ``module`` unchanged: tensors here have no channels-last memory format."""
    return module
