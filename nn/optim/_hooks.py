"""Optimizer step hooks: the global ones (``register_optimizer_step_pre_hook``/``_post_hook``,
run for every optimizer), an optimizer's own (``StepHooksMixin``), and the wrapper that runs them
around each ``step`` and reports the step to the profiler."""

from __future__ import annotations

import functools
from collections.abc import Callable

from autograd.graph import RemovableHandle
from tensor.profiler import _recorder

__all__ = ["StepHooksMixin", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook"]


_global_optimizer_pre_hooks: dict[int, Callable] = {}
_global_optimizer_post_hooks: dict[int, Callable] = {}


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before the ``step`` of every optimizer (before its own
    pre-hooks); it may return new ``(args, kwargs)``. Returns a handle whose ``remove()`` unregisters it."""
    return RemovableHandle(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after the ``step`` of every optimizer (after its own
    post-hooks). Returns a handle whose ``remove()`` unregisters it."""
    return RemovableHandle(_global_optimizer_post_hooks, hook)


def _hook_step(step: Callable) -> Callable:
    """Wrap a ``step`` so it runs the step hooks and records that the optimizer stepped."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in [*_global_optimizer_pre_hooks.values(), *self._optimizer_step_pre_hooks.values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got {result}."
                    )
        run = step
        if _recorder.current is not None:  # tensor.profiler: the step as one event
            run = _recorder.current.wrap(step, f"Optimizer.step#{type(self).__name__}.step", "optimizer")
        out = run(self, *args, **kwargs)
        for hook in [*self._optimizer_step_post_hooks.values(), *_global_optimizer_post_hooks.values()]:
            hook(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


class StepHooksMixin:
    """An optimizer's own step hooks (part of ``Optimizer``): its ``step`` is wrapped once per class
    to run them, and the global ones, around it."""

    def _patch_step_function(self) -> None:
        cls = type(self)
        if not getattr(cls.step, "_hooked", False):
            cls.step = _hook_step(cls.step)

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step``; it may return new (args, kwargs)."""
        return RemovableHandle(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step``."""
        return RemovableHandle(self._optimizer_step_post_hooks, hook)
