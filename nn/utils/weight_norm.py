"""The older, hook-based weight and spectral normalization (``nn.utils.weight_norm``,
``remove_weight_norm``, ``spectral_norm``, ``remove_spectral_norm``): the weight is recomputed
from ``<name>_g``/``<name>_v`` (or ``<name>_orig`` and the power-iteration buffers
``<name>_u``/``<name>_v``) before each forward. PyTorch deprecates them in favour of
``nn.utils.parametrizations``; they are kept for checkpoints that use their names."""

from __future__ import annotations

import tensor
from tensor import Tensor

from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from ..parameter import Parameter
from ._recomputed import recomputed
from .parametrizations import check_dim, norm_except_dim

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


class _WeightNormHook:
    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def compute(self, module: Module) -> Tensor:
        g, v = getattr(module, self.name + "_g"), getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, self.dim))

    def __call__(self, module: Module, args) -> None:
        object.__setattr__(module, self.name, recomputed(self.compute(module)))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split ``module.<name>`` into ``<name>_g`` (magnitude) and ``<name>_v`` (direction)
    parameters, recombined before every forward. Returns ``module``.

    Raises:
        RuntimeError: if ``name`` is already weight-normalized.
        IndexError: for a ``dim`` out of range for the tensor.
    """
    hooks = module.__dict__.setdefault("_norm_hooks", {})
    if name in hooks:
        raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    hook = _WeightNormHook(name, -1 if dim is None else dim)
    weight = getattr(module, name)
    check_dim(weight, dim)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, hook.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    object.__setattr__(module, name, recomputed(hook.compute(module)))
    hooks[name] = (hook, module.register_forward_pre_hook(hook))
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``weight_norm``: ``<name>`` is one parameter again. Returns ``module``.

    Raises:
        ValueError: if ``name`` is not weight-normalized.
    """
    return _remove(module, name, _WeightNormHook, "weight_norm", (name + "_g", name + "_v"))


class _SpectralNormHook:
    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def matrix(self, weight: Tensor) -> Tensor:
        return (weight.movedim(self.dim, 0) if self.dim != 0 else weight).flatten(1)

    def compute(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        matrix = self.matrix(weight)
        if do_power_iteration:
            with tensor.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(matrix.mT @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(matrix @ v, dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = (u * (matrix @ v)).sum()
        return weight / sigma

    def __call__(self, module: Module, args) -> None:
        object.__setattr__(module, self.name, recomputed(self.compute(module, module.training)))


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    """Divide ``module.<name>`` by its spectral norm before every forward (one power iteration
    per training forward); the parameter becomes ``<name>_orig`` with buffers ``<name>_u`` and
    ``<name>_v``. Returns ``module``.

    Raises:
        RuntimeError: if ``name`` already has spectral normalization.
        ValueError: if ``n_power_iterations <= 0``.
        KeyError: if ``module`` has no parameter ``name``.
    """
    hooks = module.__dict__.setdefault("_norm_hooks", {})
    if name in hooks:
        raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    if n_power_iterations <= 0:
        raise ValueError(
            f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}"
        )
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    hook = _SpectralNormHook(name, n_power_iterations, dim, eps)
    weight = module._parameters[name]
    h, w = hook.matrix(weight).shape
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    module.register_buffer(
        name + "_u", F.normalize(tensor.randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
    )
    module.register_buffer(
        name + "_v", F.normalize(tensor.randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
    )
    object.__setattr__(module, name, weight.detach() * 1)
    hooks[name] = (hook, module.register_forward_pre_hook(hook))
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Undo ``spectral_norm``: ``<name>`` is one parameter again (the normalized value).
    Returns ``module``.

    Raises:
        ValueError: if ``name`` has no spectral normalization.
    """
    return _remove(module, name, _SpectralNormHook, "spectral_norm", (name + "_orig", name + "_u", name + "_v"))


def _remove(module: Module, name: str, kind: type, what: str, stored: tuple[str, ...]) -> Module:
    hooks = module.__dict__.get("_norm_hooks", {})
    entry = hooks.get(name)
    if entry is None or not isinstance(entry[0], kind):
        raise ValueError(f"{what} of '{name}' not found in {module}")
    hook, handle = hooks.pop(name)
    with tensor.no_grad():
        value = hook.compute(module, False) if kind is _SpectralNormHook else hook.compute(module)
    handle.remove()
    for attr in stored:
        delattr(module, attr)
    module.__dict__.pop(name, None)
    module.register_parameter(name, Parameter(value.detach()))
    return module
