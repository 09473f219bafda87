# cython: auto_pickle=False
"""Grad mode: the calling thread's flags that every op reads, whether ops record and whether
inference mode is on. Per thread, as in PyTorch: a new thread starts with grad enabled and
inference mode off.

Plain Python, the flags are attributes of a ``threading.local``. Compiled (Note [Compiled dispatch
and graph] in tensor/_accelerator.py), they are C thread-local variables (``_grad_state.pxd``)
and ``grad_enabled()`` and ``inference_enabled()`` are C functions the dispatcher calls: reading the attribute of a
``threading.local`` cost a recorded op ~460 of its ~11,000 instructions (BENCHMARKS.md, issue 19).
Everything else reads and writes them as ``grad_mode.enabled`` and ``grad_mode.inference``.

Note [Inference tensors]
~~~~~~~~~~~~~~~~~~~~~~~~
As in PyTorch, every tensor made while inference mode is on is an *inference tensor*
(``is_inference()``), except a view, which is what its base is (``detach`` included):
``_dispatch.make`` marks them, ``make_view`` copies the base's mark. Outside inference mode an
inference tensor cannot be written in place (``tensor/_inplace.py``), be made to require grad
(``Tensor.requires_grad_``) or be saved for a backward (``autograd.graph._link``): each raises
PyTorch's RuntimeError. Ops that read one without saving it (``a + c``) work, and make normal
tensors.
"""

from __future__ import annotations

import threading

_COMPILED = not __file__.endswith(".py")


class _Flags(threading.local):
    """Plain Python's flags (compiled, the C thread-locals replace them)."""

    enabled = True
    inference = False


_flags = _Flags()


def grad_enabled() -> bool:
    """Whether ops record in the calling thread."""
    if _COMPILED:
        return not _grad_off  # noqa: F821 (C thread-local, in _grad_state.pxd)
    return _flags.enabled


def inference_enabled() -> bool:
    """Whether inference mode is on in the calling thread."""
    if _COMPILED:
        return _inference_on  # noqa: F821 (C thread-local, in _grad_state.pxd)
    return _flags.inference


def _set_flags(enabled, inference) -> None:
    global _grad_off, _inference_on
    if _COMPILED:
        _grad_off = not enabled
        _inference_on = bool(inference)
    else:
        _flags.enabled = bool(enabled)
        _flags.inference = bool(inference)


class GradMode:
    """The calling thread's grad-mode flags, as attributes: ``enabled`` and ``inference``."""

    __slots__ = ()

    @property
    def enabled(self) -> bool:
        """Whether ops record (``torch.is_grad_enabled()``)."""
        return grad_enabled()

    @enabled.setter
    def enabled(self, value) -> None:
        _set_flags(value, inference_enabled())

    @property
    def inference(self) -> bool:
        """Whether inference mode is on (``torch.is_inference_mode_enabled()``)."""
        return inference_enabled()

    @inference.setter
    def inference(self, value) -> None:
        _set_flags(grad_enabled(), value)


grad_mode = GradMode()
