"""Calling a module with hooks, and the hooks every module runs (``register_module_*``).

Note [Module hook options]
--------------------------
As PyTorch: forward pre hooks and forward hooks live in ``module._forward_pre_hooks`` and
``module._forward_hooks`` (id -> hook, in calling order); a hook's options are the presence of
its id in ``_forward_pre_hooks_with_kwargs``, ``_forward_hooks_with_kwargs`` or
``_forward_hooks_always_called`` (made on first use, so modules pickled before stay loadable).
``prepend=True`` moves the id to the front. The hooks registered for every module run before a
module's own. ``Module._call_impl`` calls ``forward`` directly unless some hook is registered,
so hooks cost nothing when there are none.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable

import tensor
from autograd.graph import RemovableHandle

from . import _backward_hooks

__all__ = [
    "register_module_forward_pre_hook", "register_module_forward_hook", "register_module_backward_hook",
    "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
    "register_module_buffer_registration_hook", "register_module_module_registration_hook",
    "register_module_parameter_registration_hook",
]

# A module's hook stores (in its __dict__): the hooks, then their options.
HOOK_STORES = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_backward_hook_kind")

_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: dict = {}
_global_forward_hooks_always_called: dict = {}
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
_global_backward_kind: dict = {}  # "full": True for full hooks, False for legacy ones
_global_buffer_registration_hooks: OrderedDict = OrderedDict()
_global_module_registration_hooks: OrderedDict = OrderedDict()
_global_parameter_registration_hooks: OrderedDict = OrderedDict()


class HookHandle(RemovableHandle):
    """A ``RemovableHandle`` that can put its hook first and that also forgets the hook's options
    (its id in the ``options`` dicts) when removed."""

    def __init__(self, store: dict, hook, *, prepend: bool = False, options: tuple = ()) -> None:
        super().__init__(store, hook)
        self._options = options
        for flags in options:
            flags[self.id] = True
        if prepend:
            store.move_to_end(self.id, last=False)

    def remove(self) -> None:
        """Unregister the hook and its options (idempotent)."""
        super().remove()
        for flags in self._options:
            flags.pop(self.id, None)


def any_global_call_hook() -> bool:
    """Whether a hook registered for every module runs around module calls."""
    return bool(_global_forward_pre_hooks or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks)


def run_registration_hooks(hooks: dict, module, name: str, value):
    """``value`` after each registration hook ``hook(module, name, value)`` (which may replace it)."""
    for hook in list(hooks.values()):
        result = hook(module, name, value)
        if result is not None:
            value = result
    return value


def check_backward_kind(state: dict, full: bool, where: str) -> None:
    """Record whether ``state``'s backward hooks are full or legacy ones, refusing a mix.

    Raises:
        RuntimeError: if hooks of the other kind are registered.
    """
    if state.get("full", full) is not full:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                           f"{where}. Please use only one of them.")
    state["full"] = full


def call_with_hooks(module, args: tuple, kwargs: dict):
    """``module.forward(*args, **kwargs)`` with the global and the module's forward and backward
    hooks (Note [Module hook options]); ``always_call`` forward hooks run even when it raises."""
    state = module.__dict__
    always_called = {**_global_forward_hooks_always_called, **state.get("_forward_hooks_always_called", {})}
    called: set = set()
    result = None
    try:
        args, kwargs = _run_pre_hooks(module, args, kwargs)
        backward = _backward_hook_lists(module) if tensor.is_grad_enabled() else None
        if backward is not None:
            args, hook_state = _backward_hooks.wrap_inputs(module, args, *backward)
        result = module.forward(*args, **kwargs)
        for hook_id, hook in _forward_hooks(module):
            if hook_id in always_called:
                called.add(hook_id)
            result = _run_forward_hook(module, hook_id, hook, args, kwargs, result)
        if backward is not None:
            result = _backward_hooks.wrap_outputs(result, hook_state)
        return result
    except Exception:
        for hook_id, hook in _forward_hooks(module):
            if hook_id in always_called and hook_id not in called:
                try:
                    result = _run_forward_hook(module, hook_id, hook, args, kwargs, result)
                except Exception as exc:  # noqa: BLE001 - the forward's error is the one to raise
                    warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                                  f"silenced as another error was raised in forward: {exc}", stacklevel=3)
        raise


def _run_pre_hooks(module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    with_kwargs = module.__dict__.get("_forward_pre_hooks_with_kwargs", {})
    for hook_id, hook in (*_global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()):
        if hook_id in with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    return args, kwargs


def _forward_hooks(module) -> list:
    return [*_global_forward_hooks.items(), *module._forward_hooks.items()]


def _run_forward_hook(module, hook_id: int, hook, args: tuple, kwargs: dict, result):
    if hook_id in _global_forward_hooks_with_kwargs or hook_id in module.__dict__.get("_forward_hooks_with_kwargs", {}):
        out = hook(module, args, kwargs, result)
    else:
        out = hook(module, args, result)
    return result if out is None else out


def _backward_hook_lists(module) -> tuple[list, list] | None:
    """The (pre hooks, full hooks) to run in backward, global ones first, or None for none."""
    state = module.__dict__
    pre = [*_global_backward_pre_hooks.values(), *state.get("_backward_pre_hooks", {}).values()]
    full = [*_global_backward_hooks.values(), *state.get("_backward_hooks", {}).values()]
    if not (pre or full):
        return None
    if not state.get("_backward_hook_kind", {}).get("full", True) or _global_backward_kind.get("full") is False:
        warnings.warn("Using a non-full backward hook is deprecated and will be removed in future versions. "
                      "Here it gets the gradients of the module's inputs and outputs, as a hook registered "
                      "with register_full_backward_hook does.", FutureWarning, stacklevel=4)
    return pre, full


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, name, buffer)`` whenever any module registers a buffer; it may return a
    replacement buffer."""
    return HookHandle(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, name, submodule)`` whenever any module registers a child; it may return a
    replacement module."""
    return HookHandle(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, name, param)`` whenever any module registers a parameter; it may return a
    replacement parameter."""
    return HookHandle(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, args)`` before every module's ``forward``, before the module's own pre
    hooks; it may return replacement args (a non-tuple is wrapped in one)."""
    return HookHandle(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Run ``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs, output)``)
    after every module's ``forward``, before the module's own forward hooks; it may return a new
    output. ``always_call`` runs it even when ``forward`` raises."""
    options = tuple(flags for flags, on in ((_global_forward_hooks_with_kwargs, with_kwargs),
                                            (_global_forward_hooks_always_called, always_call)) if on)
    return HookHandle(_global_forward_hooks, hook, options=options)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Deprecated form of ``register_module_full_backward_hook`` (runs as one here).

    Raises:
        RuntimeError: if global full backward hooks are registered.
    """
    check_backward_kind(_global_backward_kind, False, "as a global Module hook")
    return HookHandle(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, grad_output)`` for every module, before the module's own backward pre
    hooks (see ``Module.register_full_backward_pre_hook``)."""
    return HookHandle(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Run ``hook(module, grad_input, grad_output)`` for every module, before the module's own
    full backward hooks (see ``Module.register_full_backward_hook``).

    Raises:
        RuntimeError: if global legacy backward hooks (``register_module_backward_hook``) are registered.
    """
    check_backward_kind(_global_backward_kind, True, "as a global Module hook")
    return HookHandle(_global_backward_hooks, hook)
