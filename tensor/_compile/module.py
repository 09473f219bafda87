"""``tensor.compile(module)``: a wrapper whose calls go through a compiled ``module.__call__``.

Modules live in ``nn``, above ``tensor``, so this module only relies on what every
module has (``__call__``, ``forward``, ``modules()``). Parameters and buffers are
outside tensors of the captured graph, read live, so optimizer steps between calls are
seen; the ``training`` flags are guards.
"""

from __future__ import annotations

__all__ = ["OptimizedModule", "compile_module"]


class OptimizedModule:
    """What ``tensor.compile(module)`` returns: calls are compiled, everything else is the module's."""

    def __init__(self, module, compiled) -> None:
        object.__setattr__(self, "_orig_mod", module)
        object.__setattr__(self, "_compiled", compiled)

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._orig_mod, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._orig_mod, name, value)

    def __repr__(self) -> str:
        return f"OptimizedModule({self._orig_mod!r})"


def compile_module(module, compiled_function_cls, settings: dict) -> OptimizedModule:
    """Wrap ``module`` so that its calls run through ``compiled_function_cls(module.__call__)``."""
    return OptimizedModule(module, compiled_function_cls(module.__call__, **settings))
