"""Our multiprocessing contexts: the standard ones, except that ``fork`` is refused once CUDA is up.

CUDA does not survive ``fork``: a forked child that touches the GPU fails in obscure ways, so
starting a ``fork`` process after CUDA was initialised raises at once, naming the fix.
"""

from __future__ import annotations

import multiprocessing.context as _mpc
from multiprocessing import process as _process

from tensor import _backend

__all__ = ["DefaultContext", "ForkContext", "ForkProcess", "Process", "default_context", "without_cuda_check"]


def check_fork_allowed() -> None:
    """Raise RuntimeError if this process initialised CUDA (so a ``fork`` child could not use it)."""
    if _backend.cuda_initialized():
        raise RuntimeError(
            "Cannot start a process with the 'fork' start method: CUDA was already initialised in "
            "this process, and CUDA does not survive fork. help: use the 'spawn' (or 'forkserver') "
            "start method: distrib.multiprocessing.set_start_method('spawn') at program start, "
            "or distrib.multiprocessing.get_context('spawn').Process(...).")


class ForkProcess(_mpc.ForkProcess):
    """``multiprocessing``'s fork Process, refused after CUDA init."""

    @staticmethod
    def _Popen(process_obj):
        check_fork_allowed()
        return _mpc.ForkProcess._Popen(process_obj)


class ForkContext(_mpc.ForkContext):
    """The ``fork`` context, with ``ForkProcess`` (also used by its ``Pool``)."""

    Process = ForkProcess


_ours: dict[str, _mpc.BaseContext] = {"fork": ForkContext()} if hasattr(_mpc, "ForkContext") else {}


def without_cuda_check(ctx: _mpc.BaseContext) -> _mpc.BaseContext:
    """The standard library's context for ``ctx``: for children that never touch CUDA (DataLoader
    workers), which PyTorch lets fork even after CUDA was initialised. A forked child that does
    touch CUDA gets an error naming the fix (``tensor._backend.check_cuda_available``)."""
    return _mpc._default_context.get_context(ctx.get_start_method())


class Process(_process.BaseProcess):
    """``multiprocessing.Process``, started with ``distrib.multiprocessing``'s start method."""

    _start_method = None

    @staticmethod
    def _Popen(process_obj):
        return default_context.get_context().Process._Popen(process_obj)

    @staticmethod
    def _after_fork():
        return default_context.get_context().Process._after_fork()


class DefaultContext(_mpc.DefaultContext):
    """The module-level context: ``get_context`` and ``set_start_method`` hand out our contexts."""

    Process = Process

    def get_context(self, method=None):
        ctx = super().get_context(method)
        return _ours.get(ctx._name, ctx)


_stdlib_default = _mpc._default_context._default_context
default_context = DefaultContext(_ours.get(_stdlib_default._name, _stdlib_default))
