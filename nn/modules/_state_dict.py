"""``Module.state_dict`` and ``load_state_dict``, as PyTorch runs them.

Note [State dict protocol]
--------------------------
Saving walks the module tree: at each module the pre hooks run (``hook(module, prefix,
keep_vars)``), then ``module._save_to_state_dict`` writes its parameters, persistent buffers
and, when its class defines ``get_extra_state``, ``prefix + "_extra_state"``; then its children,
then the post hooks (``hook(module, state_dict, prefix, local_metadata)``, which may edit the
dict in place). The result carries ``_metadata``: per module prefix, ``{"version":
cls._version}``.

Loading walks the same tree with the keys under each prefix: ``module._load_from_state_dict``
runs the load pre hooks (``hook(module, state_dict, prefix, local_metadata, strict,
missing_keys, unexpected_keys, error_msgs)``, which may rename keys in place), copies what
matches (or, with ``assign=True``, puts the given tensors in place), calls ``set_extra_state``
and records missing and unexpected keys; after a module's children, its load post hooks get
``(module, incompatible_keys)`` and may clear entries. Only then does ``strict`` turn the keys
into errors. Modules override ``_save_to_state_dict``/``_load_from_state_dict`` or register
hooks to change their keys, as a wrapper that hides its own name does (``CheckpointWrapper``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import tensor
from tensor import Tensor

from ..parameter import Parameter

__all__ = ["save", "save_own", "load", "load_own", "EXTRA_STATE", "RETURNING_HOOKS", "WithoutModule"]

EXTRA_STATE = "_extra_state"
# The ids of the state-dict post hooks registered by ``_register_state_dict_hook``, which may
# return a new state dict (a module attribute; PyTorch marks the public ones instead).
RETURNING_HOOKS = "_state_dict_hooks_returning"


class WithoutModule:
    """A load-state-dict pre hook registered ``with_module=False``: called without the module."""

    def __init__(self, hook) -> None:
        self.hook = hook

    def __call__(self, module, *args):
        return self.hook(*args)


def _hooks(module, name: str) -> dict:
    return module.__dict__.get(name) or {}


def save(module, destination, prefix: str, keep_vars: bool):
    """``module.state_dict(destination, prefix, keep_vars)`` (Note [State dict protocol])."""
    if destination is None:
        destination = OrderedDict()
        destination._metadata = OrderedDict()
    local_metadata = {"version": type(module)._version}
    if hasattr(destination, "_metadata"):
        destination._metadata[prefix[:-1]] = local_metadata
    for hook in list(_hooks(module, "_state_dict_pre_hooks").values()):
        hook(module, prefix, keep_vars)
    module._save_to_state_dict(destination, prefix, keep_vars)
    for name, child in module._modules.items():
        if child is not None:
            child.state_dict(destination, prefix + name + ".", keep_vars)
    may_return = _hooks(module, RETURNING_HOOKS)
    for hook_id, hook in list(_hooks(module, "_state_dict_hooks").items()):
        result = hook(module, destination, prefix, local_metadata)
        if result is not None:
            if hook_id not in may_return:
                raise RuntimeError("state_dict post-hook must return None")
            destination = result
    return destination


def save_own(module, destination, prefix: str, keep_vars: bool) -> None:
    """``module._save_to_state_dict``: its own parameters, persistent buffers and extra state."""
    for name, param in module._parameters.items():
        if param is not None:
            destination[prefix + name] = param if keep_vars else param.detach()
    for name, buffer in module._buffers.items():
        if buffer is not None and name not in module._non_persistent_buffers:
            destination[prefix + name] = buffer if keep_vars else buffer.detach()
    if _defines(module, "get_extra_state"):
        destination[prefix + EXTRA_STATE] = module.get_extra_state()


def _defines(module, method: str) -> bool:
    """Whether ``module``'s class overrides Module's ``method`` (the extra-state pair)."""
    from .module import Module  # noqa: PLC0415 - module.py imports this file

    return getattr(type(module), method) is not getattr(Module, method)


def load(module, state_dict, strict: bool, assign: bool, incompatible_keys_type):
    """``module.load_state_dict(state_dict, strict, assign)`` (Note [State dict protocol])."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
    missing, unexpected, errors = [], [], []
    metadata = getattr(state_dict, "_metadata", None)
    state_dict = OrderedDict(state_dict)

    def visit(current, local_state, prefix):
        local_metadata = dict(metadata.get(prefix[:-1], {})) if metadata is not None else {}
        if assign:
            local_metadata["assign_to_params_buffers"] = True
        current._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected, errors)
        for name, child in current._modules.items():
            if child is not None:
                child_prefix = prefix + name + "."
                visit(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)}, child_prefix)
        keys = incompatible_keys_type(missing, unexpected)
        for hook in list(_hooks(current, "_load_state_dict_post_hooks").values()):
            if hook(current, keys) is not None:
                raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not expected "
                                     "to return new values, if incompatible_keys need to be modified, it should be "
                                     "done inplace.")

    visit(module, state_dict, "")
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
    if errors:
        raise RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t" + "\n\t".join(errors))
    return incompatible_keys_type(missing, unexpected)


def load_own(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors) -> None:
    """``module._load_from_state_dict``: its own parameters, buffers and extra state from the keys
    under ``prefix``, recording what is missing and unexpected and the errors."""
    for hook in list(_hooks(module, "_load_state_dict_pre_hooks").values()):
        hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors)
    local = {name: value for name, value in module._parameters.items() if value is not None}
    local.update((name, value) for name, value in module._buffers.items()
                 if value is not None and name not in module._non_persistent_buffers)
    assign = local_metadata.get("assign_to_params_buffers", False)
    for name, target in local.items():
        key = prefix + name
        if key not in state_dict:
            if strict:
                missing.append(key)
            continue
        source = state_dict[key]
        if not isinstance(source, Tensor):
            errors.append(f'While copying the parameter named "{key}", expected Tensor or Tensor-like object from '
                          f"checkpoint but received {type(source)}")
            continue
        if target.ndim == 0 and source.ndim == 1 and source.shape[0] == 1:  # PyTorch's 0-dim backward compatibility
            source = source[0]
        if source.shape != target.shape:
            errors.append(f"size mismatch for {key}: copying a param with shape {list(source.shape)} from checkpoint, "
                          f"the shape in current model is {list(target.shape)}.")
            continue
        try:
            with tensor.no_grad():
                if assign:
                    _put(module, name, target, source)
                else:
                    target.copy_(source)
        except Exception as exc:  # noqa: BLE001 - reported with the key, as PyTorch does
            errors.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                          f"{list(target.shape)} and whose dimensions in the checkpoint are {list(source.shape)}, "
                          f"an exception occurred : {exc.args}.")
    extra_key = prefix + EXTRA_STATE
    if _defines(module, "set_extra_state"):
        if extra_key in state_dict:
            module.set_extra_state(state_dict[extra_key])
        elif strict:
            missing.append(extra_key)
    elif strict and extra_key in state_dict:
        unexpected.append(extra_key)
    if strict:
        for key in state_dict:
            if key.startswith(prefix) and key != extra_key:
                head, dot, _ = key[len(prefix):].partition(".")
                if head not in (module._modules if dot else local):  # a dotted key names a child's entry
                    unexpected.append(key)


def _put(module, name: str, target, source) -> None:
    """``assign=True``: ``source`` itself becomes the parameter (keeping ``requires_grad``) or buffer."""
    if name in module._parameters:
        if isinstance(source, Parameter):
            source.requires_grad_(target.requires_grad)
        else:
            source = Parameter(source, target.requires_grad)
        module._parameters[name] = source
    else:
        module._buffers[name] = source
