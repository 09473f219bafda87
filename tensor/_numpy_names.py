"""NumPy's argument names where PyTorch's parser takes them (Note [NumPy argument names]).

Note [NumPy argument names]
    PyTorch's argument parser accepts ``axis`` for ``dim`` and ``keepdims`` for ``keepdim``
    in every function and method it binds (``x.sum(axis=0, keepdims=True)``,
    ``torch.cat(ts, axis=1)``), so ported code uses them. ``install`` wraps each public
    function of ``tensor`` and each method of ``Tensor`` that has a ``dim`` or ``keepdim``
    parameter and not the NumPy name, once, at import. The wrapper renames the keyword and
    calls the function; the functions inside the package keep calling the unwrapped ones,
    and a call without keywords costs one more Python frame. ``nn.functional``'s functions
    are Python functions in PyTorch too, and take only ``dim`` there as here.
"""

from __future__ import annotations

import functools
import inspect
import types

__all__ = ["install"]

_ALIASES = (("axis", "dim"), ("keepdims", "keepdim"))


def renames_of(fn) -> tuple:
    """``(numpy_name, name)`` pairs for the ``dim``/``keepdim`` parameters ``fn`` has without the
    NumPy spelling (empty for a builtin without a signature)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    return tuple((alias, name) for alias, name in _ALIASES if name in params and alias not in params)


def rename(fn_name: str, kwargs: dict, renames: tuple) -> None:
    """Rename NumPy's keywords in ``kwargs`` to PyTorch's.

    Raises:
        TypeError: when both spellings are given.
    """
    for alias, name in renames:
        if alias in kwargs:
            if name in kwargs:
                raise TypeError(f"{fn_name}() got multiple values for argument '{name}'")
            kwargs[name] = kwargs.pop(alias)


def _accepting_numpy_names(fn):
    """``fn``, or a wrapper of it taking ``axis``/``keepdims`` for its ``dim``/``keepdim``."""
    renames = renames_of(fn)
    if not renames:
        return fn

    @functools.wraps(fn)
    def accepting(*args, **kwargs):
        if kwargs:
            rename(fn.__name__, kwargs, renames)
        return fn(*args, **kwargs)

    accepting.__numpy_names__ = renames
    return accepting


def install(namespace: dict, names, cls) -> None:
    """Wrap the functions ``names`` of ``namespace`` (a module's globals) and the methods of
    ``cls`` that take ``dim``/``keepdim`` (Note [NumPy argument names])."""
    for name in names:
        value = namespace.get(name)
        if isinstance(value, types.FunctionType) and not hasattr(value, "__numpy_names__"):
            namespace[name] = _accepting_numpy_names(value)
    for name, value in list(vars(cls).items()):
        if isinstance(value, types.FunctionType) and not name.startswith("_") and not hasattr(value, "__numpy_names__"):
            setattr(cls, name, _accepting_numpy_names(value))
