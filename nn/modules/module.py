"""``nn.Module``: the base class of every layer and model."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import tensor
from autograd.graph import RemovableHandle
from tensor import Tensor, _conversion

from ..parameter import Buffer, Parameter
from . import _hooks, _state_dict
from ._hooks import (  # noqa: F401 - nn.modules.module.register_module_* as in PyTorch
    register_module_backward_hook,
    register_module_buffer_registration_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
    register_module_module_registration_hook,
    register_module_parameter_registration_hook,
)

__all__ = ["Module", "IncompatibleKeys", *_hooks.__all__]


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: the keys it missed and the ones it did not expect."""

    missing_keys: list
    unexpected_keys: list

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"


class Module:
    """Base class for layers: holds parameters, buffers and submodules, registered by attribute
    assignment, and runs ``forward`` (with hooks) when called."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        """Define the computation; subclasses override this."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        compiled = self.__dict__.get("_compiled_call")
        if compiled is not None:
            return compiled(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's calls with ``tensor.compile`` (same arguments), in place.

        Parameters stay the module's own, so optimizers and DistributedDataParallel see
        them as before; changing ``training`` (``train()``/``eval()``) recompiles.
        """
        object.__setattr__(self, "_compiled_call", tensor.compile(self._call_impl, *args, **kwargs))

    def _call_impl(self, *args, **kwargs):
        state = self.__dict__
        if (self._forward_pre_hooks or self._forward_hooks or state.get("_backward_hooks")
                or state.get("_backward_pre_hooks") or _hooks.any_global_call_hook()):
            return _hooks.call_with_hooks(self, args, kwargs)  # Note [Module hook options]
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ registration
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            # As PyTorch: plain attributes may be set before Module.__init__(), registered ones not.
            for kind, what in ((Parameter, "parameters"), (Buffer, "buffer"), (Module, "module")):
                if isinstance(value, kind):
                    raise AttributeError(f"cannot assign {what} before Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        params, buffers, modules = self._parameters, self._buffers, self._modules
        # Re-assigning a name keeps its place in its own store (so a Sequential keeps its order).
        if isinstance(value, Parameter):
            self._discard(name, keep=params)
            self.register_parameter(name, value)
        elif isinstance(value, Buffer):
            self._discard(name, keep=buffers)
            self.register_buffer(name, value.detach(), persistent=value.persistent)  # a plain Tensor, as PyTorch
        elif name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            self._discard(name, keep=modules)
            if _hooks._global_module_registration_hooks:
                value = _hooks.run_registration_hooks(_hooks._global_module_registration_hooks, self, name, value)
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(nn.Module or None expected)"
                )
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(nn.Buffer, Tensor or None expected)"
                )
            if _hooks._global_buffer_registration_hooks:
                value = _hooks.run_registration_hooks(_hooks._global_buffer_registration_hooks, self, name, value)
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _discard(self, name: str, keep=None) -> None:
        for store in (self.__dict__, self._parameters, self._buffers, self._modules):
            if store is not keep:
                store.pop(name, None)
        if keep is not self._buffers:
            self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            found = state.get(store)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(name for name in names if not name[:1].isdigit())  # not attribute names, as PyTorch

    def _check_name(self, name: str, kind: str, store: dict) -> None:
        # PyTorch's checks and messages; a name may be re-registered in its own store.
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
        if not name:
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in store:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or None, a declared but absent one) under ``name``.

        Raises:
            KeyError: for an empty or dotted name, or one already used by another attribute.
            TypeError: if ``param`` is not a Parameter.
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameters before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(nn.Parameter or None required)"
            )
        if _hooks._global_parameter_registration_hooks:
            param = _hooks.run_registration_hooks(_hooks._global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, buffer: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (e.g. running statistics).

        Non-persistent buffers are left out of ``state_dict``.

        Raises:
            KeyError: for an empty or dotted name, or one already used by another attribute.
            TypeError: if ``buffer`` is neither a Tensor nor None.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if buffer is not None and not isinstance(buffer, Tensor):
            raise TypeError(f"cannot assign '{type(buffer).__name__}' object to buffer '{name}' "
                            "(Tensor or None required)")
        if _hooks._global_buffer_registration_hooks:
            buffer = _hooks.run_registration_hooks(_hooks._global_buffer_registration_hooks, self, name, buffer)
        self._buffers[name] = buffer
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name``.

        Raises:
            TypeError: if ``module`` is not a Module.
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        if _hooks._global_module_registration_hooks:
            module = _hooks.run_registration_hooks(_hooks._global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    # ------------------------------------------------------------ traversal
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        """Yield (qualified name, module) for this module and every descendant."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self, remove_duplicate: bool = True) -> Iterator[Module]:
        """This module and every descendant (a shared one once, unless not ``remove_duplicate``)."""
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self):
        """Yield (name, module) for the direct children."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self) -> Iterator[Module]:
        """The direct children."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, store).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield (qualified name, parameter); shared parameters appear once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, in registration order."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yield (qualified name, buffer)."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        """The descendant at the dotted path ``target`` ("" is this module).

        Raises:
            AttributeError: naming the missing part of the path, or for a ``target`` that is not a str.
        """
        if not isinstance(target, str):
            raise AttributeError(f"'{type(target).__name__}' object has no attribute 'split'")
        module = self
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at the dotted path ``target``.

        Raises:
            AttributeError: if there is none.
        """
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at the dotted path ``target``.

        Raises:
            AttributeError: if there is none.
        """
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._buffers:
            if not hasattr(module, name):
                raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target``, replacing what is there.

        Raises:
            ValueError: for an empty ``target`` or a ``module`` that is not a Module.
            AttributeError: for a missing parent, for ``target``'s last part naming something
                that is not a Module, or (``strict``) for a child that does not exist yet.
        """
        if not target:
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and name not in parent._modules:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if name in parent.__dict__ or name in parent._parameters or name in parent._buffers:
            raise AttributeError(f"`{name}` is not an nn.Module")
        parent.add_module(name, module)

    # ------------------------------------------------------------ modes and transforms
    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects Dropout, BatchNorm, ...) on this module and descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Turn gradient recording on or off for every parameter.

        Raises:
            TypeError: if ``requires_grad`` is not a bool.
        """
        if not isinstance(requires_grad, bool):
            raise TypeError("requires_grad_(): argument 'requires_grad' (position 1) must be bool, "
                            f"not {type(requires_grad).__name__}")
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None by default, else zero it in place (detached
        from any graph), so that references to it see the zeros, as in PyTorch."""
        for param in self.parameters():
            grad = param.grad
            if grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every descendant, then on this module; returns ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply_to_tensors(self, convert: Callable[[Tensor], Tensor]) -> Module:
        with tensor.no_grad():
            for module in self.modules():
                for param in module._parameters.values():
                    if param is None:
                        continue
                    moved = convert(param)
                    param._data, param._device = moved._data, moved._device
                    if param.grad is not None:
                        grad = convert(param.grad)
                        param.grad = grad
                for name, buffer in module._buffers.items():
                    if buffer is not None:
                        module._buffers[name] = convert(buffer)
        return self

    def to(self, *args, **kwargs) -> Module:
        """Move (in place) parameters and buffers to a device and/or cast floating ones to a dtype.

        Takes the arguments of ``Tensor.to``; ``memory_format=`` lays out the 4-d and 5-d ones
        (``tensor.channels_last``...), as in PyTorch.

        Raises:
            TypeError: for a dtype that is neither floating point nor complex, or arguments
                ``Tensor.to`` refuses.
            RuntimeError: for ``copy=True``.
        """
        memory_format = kwargs.pop("memory_format", tensor.preserve_format)
        device, dtype, copy = _conversion.parse_to(args, kwargs)
        if copy:
            raise RuntimeError(".to() does not accept copy argument")
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(
                f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            # A complex tensor keeps its imaginary part unless the target is complex too.
            castable = t.is_floating_point() or (t.is_complex() and dtype.is_complex)
            target_dtype = dtype if dtype is not None and castable else None
            layout = memory_format if t.ndim in (4, 5) else tensor.preserve_format
            return t.to(device=device, dtype=target_dtype, memory_format=layout)
        return self._apply_to_tensors(convert)

    def type(self, dst_type) -> Module:
        """Cast every parameter and buffer (integer ones too) to ``dst_type``, a dtype or a
        type name such as ``"torch.DoubleTensor"``; returns ``self``."""
        return self._apply_to_tensors(lambda t: t.type(dst_type))

    def cpu(self) -> Module:
        """Move everything to the CPU."""
        return self.to("cpu")

    def cuda(self, device=None) -> Module:
        """Move everything to a CUDA device."""
        return self.to("cuda" if device is None else device)

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32."""
        return self.to(dtype=tensor.float32)

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64."""
        return self.to(dtype=tensor.float64)

    def half(self) -> Module:
        """Cast floating parameters and buffers to float16."""
        return self.to(dtype=tensor.float16)

    def bfloat16(self) -> Module:
        """Cast floating parameters and buffers to bfloat16."""
        return self.to(dtype=tensor.bfloat16)

    def to_empty(self, *, device, recurse: bool = True) -> Module:
        """Move parameters and buffers to ``device`` as uninitialised tensors (no copy), to be
        filled afterwards, e.g. by ``load_state_dict`` or a ``reset_parameters``."""
        if not recurse:
            raise NotImplementedError("to_empty(recurse=False) is not supported here; it moves every descendant")
        return self._apply_to_tensors(lambda t: tensor.empty_like(t, device=device))

    def share_memory(self) -> Module:
        """Move every parameter and buffer into shared memory (see ``Tensor.share_memory_``)."""
        for t in itertools.chain(self.parameters(), self.buffers()):
            t.share_memory_()
        return self

    # ------------------------------------------------------------ hooks (Note [Module hook options])
    def _hook_store(self, name: str) -> OrderedDict:
        return self.__dict__.setdefault(name, OrderedDict())

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """Run ``hook(module, args)`` before ``forward``; it may return replacement args (a
        non-tuple is wrapped in one). With ``with_kwargs``: ``hook(module, args, kwargs)``, which
        may return ``(args, kwargs)``. ``prepend`` runs it before the hooks already registered.

        Raises (at call time):
            RuntimeError: if a ``with_kwargs`` hook returns something else than None or a pair.
        """
        options = (self._hook_store("_forward_pre_hooks_with_kwargs"),) if with_kwargs else ()
        return _hooks.HookHandle(self._forward_pre_hooks, hook, prepend=prepend, options=options)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Run ``hook(module, args, output)`` after ``forward`` (with ``with_kwargs``:
        ``hook(module, args, kwargs, output)``); it may return a new output. ``always_call``
        runs it even when ``forward`` raises; ``prepend`` runs it before the hooks already
        registered."""
        options = tuple(self._hook_store(name) for name, on in (("_forward_hooks_with_kwargs", with_kwargs),
                                                                ("_forward_hooks_always_called", always_call)) if on)
        return _hooks.HookHandle(self._forward_hooks, hook, prepend=prepend, options=options)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_input, grad_output)`` once the gradients of the module's
        positional inputs are computed (None for non-tensors and inputs without gradients); it may
        return replacement ``grad_input`` (Note [Module backward hooks] in ``_backward_hooks.py``).

        Raises:
            RuntimeError: if hooks were registered with the legacy ``register_backward_hook``.
        """
        _hooks.check_backward_kind(self._hook_store("_backward_hook_kind"), True, "on a single Module")
        return _hooks.HookHandle(self._hook_store("_backward_hooks"), hook, prepend=prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Deprecated form of ``register_full_backward_hook``: here the hook runs as a full one,
        getting the gradients of the module's inputs (forward warns, with a FutureWarning).

        Raises:
            RuntimeError: if hooks were registered with ``register_full_backward_hook``.
        """
        _hooks.check_backward_kind(self._hook_store("_backward_hook_kind"), False, "on a single Module")
        return _hooks.HookHandle(self._hook_store("_backward_hooks"), hook)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """Run ``hook(module, grad_output)`` when the gradients of the module's outputs arrive; it
        may return replacement ``grad_output``."""
        return _hooks.HookHandle(self._hook_store("_backward_pre_hooks"), hook, prepend=prepend)

    # ------------------------------------------------------------ state (Note [State dict protocol])
    _version: int = 1  # recorded in state_dict()._metadata; a class bumps it when its keys change

    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters, persistent buffers and extra state by qualified name (detached unless
        ``keep_vars``), after the state-dict hooks; carries ``_metadata`` (versions)."""
        return _state_dict.save(self, destination, prefix, keep_vars)

    def _save_to_state_dict(self, destination, prefix: str, keep_vars: bool) -> None:
        """Write this module's own entries (not its children's) into ``destination``."""
        _state_dict.save_own(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Copy tensors from ``state_dict`` into this module's parameters and buffers (with
        ``assign``, use the given tensors themselves), running the load hooks.

        Returns the missing and unexpected keys.

        Raises:
            TypeError: if ``state_dict`` is not a mapping.
            RuntimeError: "Error(s) in loading state_dict for <Class>" listing every missing
                and unexpected key (when ``strict``) and every shape mismatch.
        """
        return _state_dict.load(self, state_dict, strict, assign, IncompatibleKeys)

    def _load_from_state_dict(self, state_dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Load this module's own entries (not its children's) from the keys under ``prefix``."""
        _state_dict.load_own(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                             error_msgs)

    def get_extra_state(self) -> Any:
        """State beyond tensors for ``state_dict`` (saved under ``_extra_state``): a module that
        needs it overrides this and ``set_extra_state``.

        Raises:
            RuntimeError: when called on a module that does not override it.
        """
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned.

        Raises:
            RuntimeError: when called on a module that does not override it.
        """
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Run ``hook(module, prefix, keep_vars)`` before this module's ``state_dict`` entries are made."""
        return RemovableHandle(self._hook_store("_state_dict_pre_hooks"), hook)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata)`` after this module and its
        children wrote their entries; it may edit ``state_dict`` in place.

        Raises (in ``state_dict``):
            RuntimeError: if the hook returns something else than None.
        """
        return RemovableHandle(self._hook_store("_state_dict_hooks"), hook)

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """``register_state_dict_post_hook`` whose hook may also return a new state dict, which
        replaces it (PyTorch's older, private form)."""
        return _hooks.HookHandle(self._hook_store("_state_dict_hooks"), hook,
                                 options=(self._hook_store(_state_dict.RETURNING_HOOKS),))

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Run ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module loads its entries; it may edit
        ``state_dict`` (the keys under ``prefix``) in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False) -> RemovableHandle:
        """``register_load_state_dict_pre_hook``, whose hook gets the module as its first argument
        only ``with_module`` (PyTorch's private form)."""
        wrapped = hook if with_module else _state_dict.WithoutModule(hook)
        return RemovableHandle(self._hook_store("_load_state_dict_pre_hooks"), wrapped)

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Run ``hook(module, incompatible_keys)`` after this module and its children loaded; it may
        remove entries from the missing and unexpected keys before ``strict`` checks them.

        Raises (in ``load_state_dict``):
            AssertionError: if the hook returns something else than None (as PyTorch).
        """
        return RemovableHandle(self._hook_store("_load_state_dict_post_hooks"), hook)

    # ------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """Extra text for ``repr`` (e.g. layer sizes); subclasses override this."""
        return ""

    def _get_name(self) -> str:
        """The class name ``repr`` prints."""
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, module in self._modules.items():
            child = repr(module).replace("\n", "\n  ")
            lines.append(f"({name}): {child}")
        name = self._get_name()
        if not lines:
            return f"{name}()"
        if len(lines) == 1 and not self._modules:
            return f"{name}({lines[0]})"
        return f"{name}(\n  " + "\n  ".join(lines) + "\n)"
