"""Backend factory: ``backend_class("zmq")`` imports a backend's module only when asked for it."""

from __future__ import annotations

import importlib

from .base import Backend

__all__ = ["Backend", "backend_class", "register_backend", "available_backends"]

# name -> "module:Class"; a backend's module (and its library: mpi4py, cupy) loads on first use.
_BUILTIN = {
    "zmq": "distrib.backends.zmq_backend:ZmqBackend",
    "mpi": "distrib.backends.mpi_backend:MpiBackend",
    "nccl": "distrib.backends.nccl_backend:NcclBackend",
}
_registry: dict[str, object] = dict(_BUILTIN)


def register_backend(name: str, backend) -> None:
    """Make ``init_process_group(backend=name)`` use ``backend`` (a Backend subclass or "module:Class")."""
    _registry[name.lower()] = backend


def available_backends() -> list[str]:
    """The names that ``init_process_group`` accepts (whether or not their library is installed)."""
    return sorted(_registry)


def backend_class(name: str) -> type[Backend]:
    """The Backend subclass registered as ``name``, importing its module now.

    Raises:
        ValueError: no backend of that name.
        RuntimeError: its module or library cannot be imported (the message says which).
    """
    key = name.lower()
    if key not in _registry:
        raise ValueError(f"unknown distrib backend {name!r}; available: {available_backends()}")
    entry = _registry[key]
    if isinstance(entry, type):
        return entry
    module_name, _, class_name = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RuntimeError(
            f"the {name!r} backend is not usable here: {exc}. help: install its extra "
            f"(e.g. `pip install 'distrib[{'cuda' if key == 'nccl' else key}]'`) or use backend='zmq'"
        ) from exc
    cls = getattr(module, class_name)
    _registry[key] = cls
    return cls
