"""Saving and loading an optimizer's state in PyTorch's ``state_dict`` format (part of
``Optimizer``): state keyed by the parameter's index, groups listing parameter indices; the hooks
that run around ``state_dict()`` and ``load_state_dict()``, and the cast of loaded state to each
parameter's dtype and device."""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from collections.abc import Callable
from copy import deepcopy
from itertools import chain
from typing import Any

import tensor
from autograd.graph import RemovableHandle
from tensor import Tensor

from ._checks import required

__all__ = ["StateDictMixin"]


def _register(store: OrderedDict, hook: Callable, prepend: bool) -> RemovableHandle:
    handle = RemovableHandle(store, hook)
    if prepend:
        store.move_to_end(handle.id, last=False)
    return handle


class StateDictMixin:
    """An optimizer's ``state_dict``/``load_state_dict`` and their hooks (part of ``Optimizer``,
    which creates the hook stores and gives ``param_groups``, ``state`` and ``defaults``)."""

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` at the start of each ``state_dict()`` (first of all if ``prepend``)."""
        return _register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` at the end of each ``state_dict()``; a result that is
        not None replaces the state dict (first of all if ``prepend``)."""
        return _register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer, state_dict)`` before each ``load_state_dict``; a result that is not
        None is loaded instead (first of all if ``prepend``)."""
        return _register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call ``hook(optimizer)`` after each ``load_state_dict`` (first of all if ``prepend``)."""
        return _register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def state_dict(self) -> dict[str, Any]:
        """The optimizer state as ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        Parameters are numbered in group order across groups; the state tensors are not copied. The
        state-dict pre-hooks run first, and each post-hook may replace the result.
        """
        for pre_hook in list(self._optimizer_state_dict_pre_hooks.values()):
            pre_hook(self)
        state_dict = self._pack_state()
        for post_hook in list(self._optimizer_state_dict_post_hooks.values()):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def _pack_state(self) -> dict[str, Any]:
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": param_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state from ``state_dict()`` (copies its tensors, cast to each parameter's dtype/device).

        The load-state-dict pre-hooks may replace ``state_dict`` first; the post-hooks run last.

        Raises:
            ValueError: if the number of groups, or of parameters in a group, differs.
        """
        state_dict = dict(state_dict)
        for pre_hook in list(self._optimizer_load_state_dict_pre_hooks.values()):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        self._unpack_state(state_dict)
        for post_hook in list(self._optimizer_load_state_dict_post_hooks.values()):
            post_hook(self)

    def _unpack_state(self, state_dict: dict[str, Any]) -> None:
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups), chain.from_iterable(g["params"] for g in groups)
            )
        )
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast(param, value)
            else:
                state[key] = value
        param_groups = []
        for group, new_group in zip(groups, saved_groups):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            for name, default in self.defaults.items():
                if default is not required:
                    new_group.setdefault(name, default)
            param_groups.append(new_group)
        self.__setstate__({"state": state, "param_groups": param_groups})
        for param_state in self.state.values():
            if isinstance(param_state, dict) and "step" in param_state and not isinstance(param_state["step"], Tensor):
                param_state["step"] = tensor.tensor(float(param_state["step"]), dtype=tensor.float32, device="cpu")


def _cast(param: Tensor, value, key=None):
    """A copy of ``value`` with floating tensors cast to ``param``'s dtype and device ('step' is kept)."""
    if isinstance(value, Tensor):
        if key == "step":
            moved = value
        elif param.is_floating_point() and value.is_floating_point():
            moved = value.to(device=param.device, dtype=param.dtype)
        else:
            moved = value.to(device=param.device)
        return moved.detach().clone() if moved is value else moved.detach()
    if isinstance(value, dict):
        return {k: _cast(param, v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value
