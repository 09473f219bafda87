"""The pruning machinery of ``nn.utils.prune``: ``BasePruningMethod`` (applying a method to a
module's tensor and undoing it) and ``PruningContainer`` (combining successive methods)."""

from __future__ import annotations

from abc import ABC, abstractmethod

import tensor
from tensor import Tensor

from ..modules.module import Module
from ._recomputed import recomputed

__all__ = ["BasePruningMethod", "PruningContainer", "pruning_hooks"]


class BasePruningMethod(ABC):
    """A way to compute a pruning mask. Subclasses set ``PRUNING_TYPE`` (``"unstructured"``,
    ``"structured"`` with a ``dim`` attribute, or ``"global"``) and define ``compute_mask``.

    An instance applied to a module is also its forward pre-hook: it recomputes the pruned tensor
    before each forward."""

    PRUNING_TYPE: str
    _tensor_name: str | None = None

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t``, pruning further the entries ``default_mask`` keeps."""

    def apply_mask(self, module: Module) -> Tensor:
        """``<name>_orig`` times ``<name>_mask`` for the pruned module.

        Raises:
            AssertionError: if this method was never applied to a module.
        """
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return recomputed(mask.to(dtype=orig.dtype) * orig)

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores: Tensor | None = None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (combined with its earlier pruning,
        if any), ranking entries by ``importance_scores`` (default: the tensor). Returns the
        method now registered as the hook (a ``PruningContainer`` on repeated pruning).

        Raises:
            AssertionError: if ``importance_scores`` has another shape than the tensor.
        """
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif importance_scores.shape != orig.shape:
            raise AssertionError(f"importance_scores should have the same shape as parameter {name} of {module}, "
                                 f"got {importance_scores.shape} vs {orig.shape}")
        first_time = not isinstance(method, PruningContainer)
        if first_time:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = tensor.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone(memory_format=tensor.contiguous_format)
        try:
            module.register_buffer(name + "_mask", method.compute_mask(importance_scores, default_mask=default_mask))
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_time:
                module.register_parameter(name, getattr(module, name + "_orig"))
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with this method's mask applied (the module-free form of pruning).

        Raises:
            AssertionError: if ``importance_scores`` has another shape than ``t``.
        """
        if importance_scores is None:
            importance_scores = t
        elif importance_scores.shape != t.shape:
            raise AssertionError("importance_scores should have the same shape as tensor t, "
                                 f"got {importance_scores.shape} vs {t.shape}")
        default_mask = tensor.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruned tensor ``<name>`` a parameter again (its pruned value, in the
        ``<name>_orig`` parameter object) and drop ``<name>_orig`` and ``<name>_mask``.

        Raises:
            AssertionError: if this method was never applied to a module.
        """
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        module.__dict__.pop(self._tensor_name, None)
        orig = module._parameters.pop(self._tensor_name + "_orig")
        orig.data = weight.data
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def pruning_hooks(module: Module, name: str) -> list:
    """``(key, method)`` of each pruning hook of ``module`` acting on ``name``."""
    return [(key, hook) for key, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]


def _composite_method(cls: type, module: Module, name: str, *args, **kwargs) -> BasePruningMethod:
    """A new ``cls`` method for ``name``, in a container with the one already pruning it (whose
    hook is unregistered).

    Raises:
        AssertionError: if ``name`` has several pruning hooks.
    """
    hooks = pruning_hooks(module, name)
    if len(hooks) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if not hooks:
        return method
    key, old = hooks[0]
    del module._forward_pre_hooks[key]
    container = old if isinstance(old, PruningContainer) else PruningContainer(old)
    container.add_pruning_method(method)
    return container


class PruningContainer(BasePruningMethod):
    """The successive pruning methods of one tensor; its mask is the latest method's applied to
    what the earlier masks left.

    Raises:
        TypeError: when given something that is not a pruning method.
        ValueError: when given a method acting on another tensor.
    """

    def __init__(self, *methods: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(methods) == 1:
            self._tensor_name = methods[0]._tensor_name
        for method in methods:
            self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method`` (applied after the ones already here).

        Raises:
            TypeError: if ``method`` is not a pruning method.
            ValueError: if it acts on another tensor than this container.
        """
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` further pruned by the latest method, which sees only the part of
        ``t`` still unpruned: the kept entries (unstructured), the channels not entirely pruned
        (structured) or all of it (global).

        Raises:
            AttributeError: for a structured method without ``dim``.
            IndexError: for a structured method's ``dim`` out of range.
            ValueError: for an unknown ``PRUNING_TYPE``.
        """
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        region = _unpruned_region(method, t, default_mask)
        partial = method.compute_mask(t[region], default_mask=default_mask[region])
        new_mask[region] = partial.to(dtype=new_mask.dtype)
        return new_mask


def _unpruned_region(method: BasePruningMethod, t: Tensor, mask: Tensor):
    """The index of the part of ``t`` that ``method`` may prune, given the earlier ``mask``."""
    if method.PRUNING_TYPE == "unstructured":
        return mask == 1
    if method.PRUNING_TYPE == "global":
        return (slice(None),) * t.ndim
    if method.PRUNING_TYPE != "structured":
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
    if not hasattr(method, "dim"):
        raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` defined.')
    dim = method.dim + t.ndim if method.dim < 0 else method.dim
    if dim < 0:
        raise IndexError(f"Index is out of bounds for tensor with dimensions {t.ndim}")
    keep_channel = mask.sum(dim=[d for d in range(t.ndim) if d != dim]) != 0
    return tuple(keep_channel if d == dim else slice(None) for d in range(t.ndim))
