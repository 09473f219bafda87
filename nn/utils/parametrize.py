"""Parametrizations (our ``torch.nn.utils.parametrize``): make ``module.weight`` the output of
modules applied to stored ``original`` tensors.

``register_parametrization(module, "weight", p)`` moves the parameter to
``module.parametrizations.weight.original`` (its state_dict key, as in PyTorch) and turns
``weight`` into a property of a per-module subclass that computes ``p(original)`` on each
access (once per ``cached()`` block). Assigning to it stores ``p.right_inverse(value)``. A
``right_inverse`` that returns a tuple stores ``original0``, ``original1``, ... and ``p`` is then
called with all of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Sequence

import tensor
from tensor import Tensor

from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = [
    "register_parametrization",
    "remove_parametrizations",
    "is_parametrized",
    "cached",
    "type_before_parametrizations",
    "ParametrizationList",
]

_cache: dict | None = None


@contextlib.contextmanager
def cached() -> Generator[None, None, None]:
    """Compute each parametrized tensor once inside the block (reused by every access)."""
    global _cache
    outer = _cache
    _cache = {} if outer is None else outer
    try:
        yield
    finally:
        _cache = outer


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the ``original`` tensor(s)
    they are applied to.

    Raises:
        ValueError: if a ``right_inverse`` returns neither a tensor nor a sequence of them or
            changes the dtype, or (unless ``unsafe``) the parametrized value is not a tensor of
            the original's dtype and shape.
    """

    def __init__(self, modules: list[Module], original: Tensor, unsafe: bool = False) -> None:
        super().__init__(modules)
        self.unsafe = unsafe
        with tensor.no_grad():
            value = original
            for module in reversed(list(self)):
                value = _right_inverse(module, value)
        if not isinstance(value, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(value).__name__}")
        self.is_tensor = isinstance(value, Tensor)
        self.ntensors = 1 if self.is_tensor else len(value)
        requires_grad = original.requires_grad
        if self.is_tensor:
            if value.dtype != original.dtype:
                raise ValueError(
                    f"When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {value.dtype}"
                )
            with tensor.no_grad():
                original.copy_(value)
            self._register_original("original", original, requires_grad)
        else:
            for i, part in enumerate(value):
                self._register_original(f"original{i}", part, requires_grad)
        if not unsafe:
            _check_same_kind(self(), original, "Registering a parametrization may not change the {} of the "
                             "tensor, unless `unsafe` flag is enabled.\nunparametrized {}: {}\nparametrized {}: {}")

    def _register_original(self, name: str, value: Tensor, requires_grad: bool) -> None:
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif requires_grad:
            self.register_parameter(name, Parameter(value.detach().clone(), requires_grad=True))
        else:
            self.register_buffer(name, value)

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` through each parametrization's ``right_inverse``, last first (what
        assigning to the parametrized tensor does).

        Raises:
            RuntimeError: if a parametrization has no ``right_inverse`` (unlike at registration,
                where that means the identity).
            NotImplementedError: from a ``right_inverse`` that cannot invert.
            ValueError: if the result is not tensors of the originals' number and dtypes.
        """
        with tensor.no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            parts = (value,) if self.is_tensor else value
            if not isinstance(parts, Sequence) or len(parts) != self.ntensors:
                raise ValueError(f"'right_inverse' must return {self.ntensors} tensor(s). Got {type(value).__name__}.")
            names = ("original",) if self.is_tensor else tuple(f"original{i}" for i in range(self.ntensors))
            for name, part in zip(names, parts):
                original = getattr(self, name)
                if not isinstance(part, Tensor) or part.dtype != original.dtype:
                    raise ValueError(f"The value returned by `right_inverse` for {name} must be a tensor of dtype "
                                     f"{original.dtype}. Got {getattr(part, 'dtype', type(part).__name__)}")
                original.copy_(part)

    def forward(self) -> Tensor:
        """The parametrized tensor."""
        first, *rest = list(self)
        x = (
            first(self.original)
            if self.is_tensor
            else first(*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        )
        for module in rest:
            x = module(x)
        return x


def _right_inverse(module: Module, value):
    """``module.right_inverse(value)``; the identity for a module without one, or whose one
    raises NotImplementedError."""
    if not hasattr(module, "right_inverse"):
        return value
    try:
        return module.right_inverse(value)
    except NotImplementedError:
        return value


def _check_same_kind(value, reference: Tensor, message: str) -> None:
    """Check that ``value`` is a tensor of ``reference``'s dtype and shape.

    Raises:
        ValueError: otherwise, from ``message`` formatted with the attribute's name, then the
            name with ``reference``'s value and with ``value``'s.
    """
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    for attribute in ("dtype", "shape"):
        want, got = getattr(reference, attribute), getattr(value, attribute)
        if got != want:
            raise ValueError(message.format(attribute, attribute, want, attribute, got))


def _check_appended(module: Module, tensor_name: str, parametrization: Module) -> None:
    """PyTorch's checks before appending ``parametrization`` to ``tensor_name``'s: it and its
    ``right_inverse`` must map the parametrized tensor to a tensor of the same dtype and shape.

    Raises:
        ValueError: when they do not.
    """
    current = getattr(module, tensor_name)
    value = parametrization(current)
    _check_same_kind(value, current, "Registering a parametrization may not change the {} of the tensor, "
                     f"unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.{{}}: {{}}\n"
                     f"parametrization(module.{tensor_name}).{{}}: {{}}")
    inverse = _right_inverse(parametrization, value)
    if not isinstance(inverse, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(inverse).__name__}")
    _check_same_kind(inverse, current, "The tensor returned by parametrization.right_inverse must have the same "
                     f"{{}} as module.{tensor_name}, unless the `unsafe` flag is enabled.\n"
                     f"module.{tensor_name}.{{}}: {{}}\nreturned {{}}: {{}}")


def _make_property(name: str) -> property:
    def getter(self) -> Tensor:
        parametrization = self.parametrizations[name]
        if _cache is None:
            return parametrization()
        key = (id(self), name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def setter(self, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    return property(getter, setter)


def _inject_new_class(module: Module) -> None:
    cls = module.__class__
    parametrized = type(f"Parametrized{cls.__name__}", (cls,), {"_original_class": cls})
    object.__setattr__(module, "__class__", parametrized)


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make ``module.<tensor_name>`` be ``parametrization(original)``; a second call on the same
    name appends to its list. Returns ``module``.

    Unless ``unsafe``, the parametrization (and its ``right_inverse``) must give a tensor of the
    same dtype and shape.

    Raises:
        ValueError: if ``module`` has no parameter or buffer ``tensor_name`` (and it is not
            parametrized yet), a ``right_inverse`` changes the dtype, or (unless ``unsafe``) the
            parametrization does not give a tensor of the same dtype and shape.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_appended(module, tensor_name, parametrization)
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
            f"name '{tensor_name}'"
        )
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    setattr(module.__class__, tensor_name, _make_property(tensor_name))
    module.parametrizations[tensor_name] = plist
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has parametrizations (on ``tensor_name``, when given)."""
    parametrizations = module._modules.get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations replaced it."""
    return module.__class__._original_class if is_parametrized(module) else type(module)


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Remove the parametrizations of ``tensor_name``; it becomes a parameter again holding the
    parametrized value (``leave_parametrized``) or the original. Returns ``module``.

    Raises:
        ValueError: if ``tensor_name`` is not parametrized, or the original is several tensors and
            ``leave_parametrized`` is False.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with tensor.no_grad():
                value = getattr(module, tensor_name)
            with tensor.no_grad():
                if value.shape == original.shape:
                    original.copy_(value)
                else:
                    original = Parameter(value.detach(), requires_grad=original.requires_grad)
    elif leave_parametrized:
        with tensor.no_grad():
            value = getattr(module, tensor_name)
        original = Parameter(value.detach(), requires_grad=value.requires_grad or plist.original0.requires_grad)
    else:
        raise ValueError(
            "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
            "in terms of a sequence of tensors."
        )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        del module.parametrizations
        object.__setattr__(module, "__class__", module.__class__._original_class)
    return module
