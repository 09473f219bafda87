"""Lazy modules: ``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``,
``LazyBatchNorm1d/2d/3d`` and ``LazyInstanceNorm1d/2d/3d`` infer their input size from the
first input, then become the ordinary module (``cls_to_become``), as in PyTorch.

Until that first call they hold no parameters (PyTorch holds uninitialized ones), so build the
optimizer after a dry run, as PyTorch's documentation asks. ``load_state_dict`` before the first
call reads the size from the checkpoint's tensors instead, so "build lazily, then restore" works.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from tensor import Tensor

from . import _hooks
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .normalization_extra import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = [
    "LazyModuleMixin",
    "LazyLinear",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]


def _in_features(entries: Mapping[str, Any], arguments: dict[str, Any]) -> int | None:
    weight = entries.get("weight")
    return None if weight is None or len(weight.shape) != 2 else weight.shape[1]


def _conv_in_channels(entries: Mapping[str, Any], arguments: dict[str, Any]) -> int | None:
    weight = entries.get("weight")
    return None if weight is None or len(weight.shape) < 2 else weight.shape[1] * arguments["groups"]


def _transpose_in_channels(entries: Mapping[str, Any], arguments: dict[str, Any]) -> int | None:
    weight = entries.get("weight")
    return None if weight is None or len(weight.shape) < 2 else weight.shape[0]


def _num_features(entries: Mapping[str, Any], arguments: dict[str, Any]) -> int | None:
    for name in ("weight", "bias", "running_mean", "running_var"):
        value = entries.get(name)
        if value is not None and len(value.shape) == 1:
            return value.shape[0]
    return None


class LazyModuleMixin(Module):
    """A module whose first input fixes its size: ``cls_to_become(size, *args, **kwargs)`` is
    built then, and this module turns into it. ``spatial`` is the number of dims after the
    channel dim (None: the size is the last dim). ``size_in_checkpoint`` reads the size from this
    module's state-dict entries (by name, without the prefix) and its bound constructor arguments."""

    cls_to_become: type[Module]
    spatial: int | None = None
    size_in_checkpoint: Callable[[Mapping[str, Any], dict[str, Any]], int | None] = staticmethod(_in_features)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_lazy_args", (args, kwargs))

    def has_uninitialized_params(self) -> bool:
        """True until the first call (or a ``load_state_dict``) has set the sizes."""
        return True

    def initialize_parameters(self, input: Tensor) -> None:
        """Build the parameters for ``input``'s size and become ``cls_to_become``.

        Raises:
            ValueError: for an input without the dim the size is read from.
        """
        if self.spatial is None:
            size = input.shape[-1] if input.ndim else None
        else:
            size = (
                input.shape[1]
                if input.ndim == self.spatial + 2
                else (input.shape[0] if input.ndim == self.spatial + 1 else None)
            )
        if size is None:
            raise ValueError(
                f"{type(self).__name__}: cannot infer the input size from an input of shape {list(input.shape)}"
            )
        self._become(size)

    def _become(self, size: int) -> None:
        args, kwargs = self._lazy_args
        concrete = self.cls_to_become(size, *args, **kwargs)
        training = self.training
        # The hook stores themselves carry over, so that their handles still remove them.
        hooks = {name: self.__dict__[name] for name in _hooks.HOOK_STORES if name in self.__dict__}
        self.__dict__.clear()
        self.__dict__.update(concrete.__dict__)
        self.__dict__.update(hooks)
        object.__setattr__(self, "__class__", self.cls_to_become)
        self.train(training)

    def _load_from_state_dict(self, state_dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Become ``cls_to_become`` with the size the checkpoint's tensors imply, then load as it
        (PyTorch materialises its uninitialized parameters from the checkpoint the same way)."""
        entries = {key[len(prefix):]: value for key, value in state_dict.items() if key.startswith(prefix)}
        args, kwargs = self._lazy_args
        arguments = inspect.signature(self.cls_to_become).bind_partial(0, *args, **kwargs)
        arguments.apply_defaults()
        size = self.size_in_checkpoint(entries, arguments.arguments)
        if size is None:
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                          unexpected_keys, error_msgs)
            return
        self._become(size)
        self._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                   error_msgs)

    def __call__(self, *args, **kwargs):
        if args and isinstance(args[0], Tensor):
            self.initialize_parameters(args[0])
        return self(*args, **kwargs)


class LazyLinear(LazyModuleMixin):
    """``Linear`` whose ``in_features`` is the last dim of the first input."""

    cls_to_become = Linear


class _LazyInstanceNorm(LazyModuleMixin):
    """PyTorch's LazyInstanceNorm defaults differ from InstanceNorm's: affine and tracking on."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__(eps, momentum, affine, track_running_stats, device, dtype, bias=bias)


def _lazy(cls_to_become: type[Module], spatial: int, size_name: str, size_in_checkpoint: Callable,
          base: type[LazyModuleMixin] = LazyModuleMixin) -> type[LazyModuleMixin]:
    """``Lazy<cls_to_become>``: ``cls_to_become`` whose ``size_name`` comes from the first input,
    which has ``spatial`` dims after the channel dim, or from a checkpoint by ``size_in_checkpoint``."""
    name = "Lazy" + cls_to_become.__name__
    namespace = {
        "__doc__": f"``{cls_to_become.__name__}`` whose ``{size_name}`` comes from the first input.",
        "__module__": __name__,
        "__qualname__": name,
        "cls_to_become": cls_to_become,
        "spatial": spatial,
        "size_in_checkpoint": staticmethod(size_in_checkpoint),
    }
    return type(name, (base,), namespace)


LazyConv1d, LazyConv2d, LazyConv3d = (
    _lazy(c, d, "in_channels", _conv_in_channels) for d, c in enumerate((Conv1d, Conv2d, Conv3d), 1)
)
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy(c, d, "in_channels", _transpose_in_channels)
    for d, c in enumerate((ConvTranspose1d, ConvTranspose2d, ConvTranspose3d), 1)
)
LazyBatchNorm2d, LazyBatchNorm3d = (
    _lazy(c, d, "num_features", _num_features) for d, c in ((2, BatchNorm2d), (3, BatchNorm3d))
)
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy(c, d, "num_features", _num_features, _LazyInstanceNorm)
    for d, c in enumerate((InstanceNorm1d, InstanceNorm2d, InstanceNorm3d), 1)
)


class LazyBatchNorm1d(LazyModuleMixin):
    """``BatchNorm1d`` whose ``num_features`` comes from the first input ((N, C) or (N, C, L))."""

    cls_to_become, spatial = BatchNorm1d, 0
    size_in_checkpoint = staticmethod(_num_features)

    def initialize_parameters(self, input: Tensor) -> None:
        """As ``LazyModuleMixin``, reading the channels from dim 1."""
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")
        object.__setattr__(self, "spatial", input.ndim - 2)
        super().initialize_parameters(input)
