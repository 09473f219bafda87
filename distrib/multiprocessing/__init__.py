"""``distrib.multiprocessing``: a drop-in for ``multiprocessing`` that shares tensors by handle.

Everything ``multiprocessing`` has is here (``Process``, ``Queue``, ``SimpleQueue``, ``Pipe``,
``Pool``, ``get_context``, ``set_start_method``...). Tensors, Parameters and Modules put through
it travel as a handle to shared memory, not as a copy: a tensor not yet shared is moved into
shared memory once on its way, and one already shared is sent in O(1). Also: ``spawn`` and
``start_processes``, and the sharing strategies (see ``tensor/_shared.py``).

    >>> import tensor, distrib.multiprocessing as mp
    >>> def add_one(t):
    ...     t += 1
    >>> t = tensor.zeros(3).share_memory_()
    >>> p = mp.Process(target=add_one, args=(t,)); p.start(); p.join()
    >>> t
    tensor([1., 1., 1.])
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F403 - the drop-in: every public name of multiprocessing

from tensor._shared import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy

from ._context import Process, check_fork_allowed, default_context
from .reductions import init_reductions
from .spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    spawn,
    start_processes,
)

# Bind the context functions to our default context (as multiprocessing/__init__.py does).
_CONTEXT_NAMES = [name for name in dir(default_context) if not name.startswith("_")]
globals().update((name, getattr(default_context, name)) for name in _CONTEXT_NAMES)

__all__ = sorted(set(_CONTEXT_NAMES) | set(multiprocessing.__all__) | {
    "Process", "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
    "check_fork_allowed", "get_all_sharing_strategies", "get_sharing_strategy", "init_reductions",
    "set_sharing_strategy", "spawn", "start_processes",
})

init_reductions()
