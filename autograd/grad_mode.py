"""``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode``.

Each works as a context manager and as a decorator, and affects only the
current thread, as in PyTorch.
"""

from __future__ import annotations

import functools
import inspect

from tensor._autograd_hooks import grad_mode

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _GradModeContext:
    """Sets the thread's grad mode on enter and restores it on exit."""

    _enabled = True
    _inference = False

    def __enter__(self):
        self._saved = (grad_mode.enabled, grad_mode.inference)
        grad_mode.enabled = self._enabled
        grad_mode.inference = self._inference

    def __exit__(self, *exc) -> None:
        grad_mode.enabled, grad_mode.inference = self._saved

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self.clone, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        """A fresh context with the same setting (contexts are not re-entrant)."""
        return type(self)()


def _wrap_generator(make_context, fn):
    """``fn``, a generator function, with every step of its generators (each resumption, and their
    closing) run inside a fresh ``make_context()``, as PyTorch's ``_DecoratorContextManager``:
    the caller's own mode is back at each ``yield``."""

    @functools.wraps(fn)
    def generator(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with make_context():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_context():
                        gen.close()
                    raise
                except BaseException as exc:  # thrown in by the caller: pass it on
                    with make_context():
                        response = gen.throw(exc)
                else:
                    with make_context():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value  # noqa: B901 - the wrapped generator's return value, passed on

    return generator


class _BareDecorator(_GradModeContext):
    """A context that is also a decorator without parentheses (``@no_grad`` as ``@no_grad()``),
    as PyTorch's ``_NoParamDecoratorContextManager``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_BareDecorator):
    """Disable recording: results of ops do not require grad. Also a decorator, with or without
    parentheses."""

    _enabled = False

    def __init__(self, orig_func=None) -> None:
        self._inference = grad_mode.inference


class enable_grad(_BareDecorator):
    """Re-enable recording inside a ``no_grad`` block. Also a decorator, with or without parentheses."""

    def __init__(self, orig_func=None) -> None:
        pass

    _enabled = True


class set_grad_enabled(_GradModeContext):
    """Turn recording on or off. Takes effect immediately, as in PyTorch, and also
    works as a context manager that restores the previous mode."""

    def __init__(self, mode: bool) -> None:
        self._enabled = bool(mode)
        self._saved = (grad_mode.enabled, grad_mode.inference)
        grad_mode.enabled = self._enabled

    def __enter__(self):
        pass

    def __call__(self, fn):
        # Used as a decorator: the mode set by __init__ must not leak past decoration.
        grad_mode.enabled, grad_mode.inference = self._saved
        return super().__call__(fn)

    def clone(self):
        return set_grad_enabled(self._enabled)


class inference_mode(_GradModeContext):
    """Like ``no_grad``, and tensors made inside are inference tensors (``is_inference()``), which
    cannot be written in place, require grad or be saved for a backward outside the region
    (Note [Inference tensors] in tensor/_grad_state.py)."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # ``@inference_mode`` without parentheses: ``mode`` is the function

    def __init__(self, mode: bool = True) -> None:
        if not isinstance(mode, bool):
            return  # the decorator made by __new__, already initialised
        self._enabled = not mode
        self._inference = bool(mode)
        self._mode = mode

    def clone(self):
        return inference_mode(self._mode)


def is_grad_enabled() -> bool:
    """Whether ops are recorded in this thread."""
    return grad_mode.enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode``."""
    return grad_mode.inference
