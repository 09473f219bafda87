"""Pruning (our ``torch.nn.utils.prune``): zero out entries or channels of a module's tensor
through a mask.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, adds the buffer ``<name>_mask``
and makes ``<name>`` a plain attribute holding ``<name>_orig * <name>_mask``, recomputed by a
forward pre-hook (the pruning method itself). The state_dict keys are PyTorch's, so a pruned
PyTorch checkpoint loads. Pruning the same tensor again combines the masks through a
``PruningContainer``: each new method only acts on what is still unpruned. ``remove`` makes the
pruned value a parameter again.

``amount`` is a fraction of the entries (or channels) in [0, 1], or a count.
"""

from __future__ import annotations

import numbers
from abc import abstractmethod
from collections.abc import Iterable

import tensor
from tensor import Tensor

from ..modules.module import Module
from ._prune_base import BasePruningMethod, PruningContainer, pruning_hooks
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "PruningContainer",
    "Identity",
    "RandomUnstructured",
    "L1Unstructured",
    "RandomStructured",
    "LnStructured",
    "CustomFromMask",
    "identity",
    "random_unstructured",
    "l1_unstructured",
    "random_structured",
    "ln_structured",
    "global_unstructured",
    "custom_from_mask",
    "remove",
    "is_pruned",
]


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones (gives a tensor the pruning reparametrization)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> Identity:
        """Reparametrize ``module.<name>`` with an all-ones mask."""
        return super().apply(module, name)


class _AmountPruning(BasePruningMethod):
    """A method pruning ``amount`` entries (or channels).

    Raises:
        TypeError: if ``amount`` is not a real number.
        ValueError: if it is a negative count or a fraction outside [0, 1].
    """

    def __init__(self, amount: int | float) -> None:
        _validate_amount(amount)
        self.amount = amount

    def _count(self, size: int) -> int:
        """How many of ``size`` entries (or channels) to prune.

        Raises:
            ValueError: if ``amount`` is a count larger than ``size``.
        """
        if isinstance(self.amount, numbers.Integral):
            if self.amount > size:
                raise ValueError(f"amount={self.amount} should be smaller than the number of parameters to "
                                 f"prune={size}")
            return int(self.amount)
        return round(self.amount * size)


class RandomUnstructured(_AmountPruning):
    """Prunes ``amount`` entries chosen at random among those still unpruned."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with ``amount`` random entries of ``t`` zeroed."""
        return _zero_top(default_mask, tensor.rand_like(t), self._count(t.numel()), largest=True)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float) -> RandomUnstructured:
        """Prune ``module.<name>`` with this method."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_AmountPruning):
    """Prunes the ``amount`` entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the ``amount`` smallest entries of ``|t|`` zeroed."""
        return _zero_top(default_mask, t.abs(), self._count(t.numel()), largest=False)

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float,
              importance_scores: Tensor | None = None) -> L1Unstructured:
        """Prune ``module.<name>``, ranking its entries by ``importance_scores`` (default: itself)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _zero_top(default_mask: Tensor, scores: Tensor, count: int, *, largest: bool) -> Tensor:
    """A copy of ``default_mask`` with zeros where ``scores`` has its ``count`` largest (or
    smallest) entries."""
    mask = default_mask.clone(memory_format=tensor.contiguous_format)
    if count:
        mask.view(-1)[tensor.topk(scores.reshape(-1), k=count, largest=largest).indices] = 0
    return mask


class _StructuredPruning(_AmountPruning):
    """A method pruning ``amount`` whole channels along ``dim``.

    Raises:
        As ``_AmountPruning``.
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount: int | float, dim: int = -1) -> None:
        super().__init__(amount)
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` with the channels that ``_kept_channels`` does not keep zeroed.

        Raises:
            ValueError: for a tensor of fewer than 2 dims, or a count larger than the channels.
            IndexError: for ``dim`` out of range.
        """
        if t.ndim <= 1:
            raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                             f"shape {t.shape} with {t.ndim} dims")
        if self.dim >= t.ndim:
            raise IndexError(f"Invalid index {self.dim} for tensor of size {t.shape}")
        channels = t.shape[self.dim]
        count = self._count(channels)
        if count == 0:
            return default_mask
        mask = tensor.zeros_like(t)
        index = [slice(None)] * t.ndim
        index[self.dim] = self._kept_channels(t, channels, count)
        mask[tuple(index)] = 1
        return mask * default_mask.to(dtype=mask.dtype)

    @abstractmethod
    def _kept_channels(self, t: Tensor, channels: int, count: int) -> Tensor:
        """An index of the channels kept when pruning ``count`` of them."""


class RandomStructured(_StructuredPruning):
    """Prunes ``amount`` channels along ``dim``, chosen at random."""

    def _kept_channels(self, t: Tensor, channels: int, count: int) -> Tensor:
        prob = tensor.rand(channels, device=t.device)
        return prob > tensor.kthvalue(prob, k=count).values

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, dim: int = -1) -> RandomStructured:
        """Prune ``module.<name>`` with this method."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_StructuredPruning):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    def __init__(self, amount: int | float, n, dim: int = -1) -> None:
        super().__init__(amount, dim)
        self.n = n

    def _kept_channels(self, t: Tensor, channels: int, count: int) -> Tensor:
        dim = self.dim % t.ndim
        order = 2 if self.n == "fro" else self.n  # torch.norm's 'fro' over any dims is the 2-norm
        norm = tensor.linalg.vector_norm(t, ord=order, dim=[d for d in range(t.ndim) if d != dim])
        return tensor.topk(norm, k=channels - count, largest=True).indices

    @classmethod
    def apply(cls, module: Module, name: str, amount: int | float, n, dim: int,
              importance_scores: Tensor | None = None) -> LnStructured:
        """Prune ``module.<name>``, ranking its channels by ``importance_scores`` (default: itself)."""
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """``default_mask`` times the given mask.

        Raises:
            AssertionError: if the mask has another shape than ``default_mask``.
        """
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"mask shape {self.mask.shape} does not match default_mask shape "
                                 f"{default_mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> CustomFromMask:
        """Prune ``module.<name>`` where ``mask`` is 0."""
        return super().apply(module, name, mask=mask)


def _validate_amount(amount) -> None:
    """Raises TypeError for a non-real ``amount``, ValueError for a negative count or a fraction
    outside [0, 1]."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    integral = isinstance(amount, numbers.Integral)
    if (integral and amount < 0) or (not integral and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def identity(module: Module, name: str) -> Module:
    """Give ``module.<name>`` the pruning reparametrization with an all-ones mask. Returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: int | float) -> Module:
    """Prune ``amount`` random unpruned entries of ``module.<name>``. Returns ``module``.

    Raises:
        TypeError, ValueError: for an invalid ``amount``.
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount: int | float, importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest absolute value (or score).
    Returns ``module``.

    Raises:
        TypeError, ValueError: for an invalid ``amount``.
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: int | float, dim: int) -> Module:
    """Prune ``amount`` random channels of ``module.<name>`` along ``dim``. Returns ``module``.

    Raises:
        TypeError, ValueError: for an invalid ``amount`` or a 1-D tensor; IndexError for ``dim``.
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount: int | float, n, dim: int,
                  importance_scores: Tensor | None = None) -> Module:
    """Prune the ``amount`` channels of ``module.<name>`` along ``dim`` of smallest ``n``-norm
    (of ``importance_scores``, when given). Returns ``module``.

    Raises:
        TypeError, ValueError: for an invalid ``amount`` or a 1-D tensor; IndexError for ``dim``.
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune ``module.<name>`` where ``mask`` is 0. Returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters: Iterable, pruning_method: type, importance_scores: dict | None = None,
                        **kwargs) -> None:
    """Prune the ``(module, name)`` tensors in ``parameters`` together, as one vector: with
    ``L1Unstructured`` and ``amount=0.2``, the 20% smallest entries over all of them. Each tensor
    gets a ``CustomFromMask`` with its part of the mask. ``importance_scores`` maps
    ``(module, name)`` to the scores that rank its entries (default: the tensor).

    Raises:
        TypeError: if ``parameters`` is not iterable, ``importance_scores`` not a dict, or the
            method not unstructured.
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = {} if importance_scores is None else importance_scores
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((m, name), getattr(m, name)) for m, name in parameters])
    default_mask = parameters_to_vector([_mask_of(m, name) for m, name in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    method._tensor_name = "temp"
    final_mask = PruningContainer(method).compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final_mask[start:start + param.numel()].view_as(param))
        start += param.numel()


def _mask_of(module: Module, name: str) -> Tensor:
    """``module.<name>_mask``, or all ones when ``name`` is not pruned yet."""
    mask = getattr(module, name + "_mask", None)
    return tensor.ones_like(getattr(module, name)) if mask is None else mask


def remove(module: Module, name: str) -> Module:
    """Make the pruning of ``module.<name>`` permanent: ``<name>`` is a parameter holding the
    pruned value, without ``<name>_orig``, ``<name>_mask`` or the hook. Returns ``module``.

    Raises:
        ValueError: if ``name`` is not pruned.
    """
    hooks = pruning_hooks(module, name)
    if not hooks:
        raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")
    key, method = hooks[0]
    method.remove(module)
    del module._forward_pre_hooks[key]
    return module


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or one of its submodules has a pruned tensor."""
    return any(isinstance(hook, BasePruningMethod)
               for sub in module.modules() for hook in sub._forward_pre_hooks.values())
