"""What this installation can run, and how the process was started: PyTorch's ``Backend``
names, ``is_backend_available``, ``is_mpi_available``/``is_nccl_available``/...,
``get_default_backend_for_device``, ``is_torchelastic_launched`` and ``get_node_local_rank``.

``"gloo"`` is accepted everywhere as a name for our ``zmq`` backend (the CPU backend that
takes its place), so ``is_gloo_available()`` is True and a PyTorch script's
``backend="nccl" if dist.is_nccl_available() else "gloo"`` runs unchanged.
"""

from __future__ import annotations

import os

from .backends import available_backends, backend_class

__all__ = ["Backend", "is_backend_available", "is_gloo_available", "is_mpi_available", "is_nccl_available",
           "is_ucc_available", "is_xccl_available", "is_torchelastic_launched", "get_node_local_rank",
           "get_default_backend_for_device"]

_ALIASES = {"gloo": "zmq"}
_DEFAULT_FOR_DEVICE = {"cpu": "zmq", "cuda": "nccl"}


class Backend(str):
    """A backend name, lowercased: ``Backend("MPI") == "mpi" == Backend.MPI``.

    As in PyTorch, any string is accepted (third-party backends register under their own
    names); ``init_process_group`` reports a name no backend is registered under.

    Raises:
        ValueError: ``name`` is not a string.
    """

    UNDEFINED = "undefined"
    ZMQ = "zmq"
    GLOO = "gloo"  # a name for zmq
    MPI = "mpi"
    NCCL = "nccl"
    backend_list = [UNDEFINED, ZMQ, GLOO, MPI, NCCL]

    def __new__(cls, name: str) -> str:
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {type(name).__name__}")
        return getattr(Backend, name.upper(), name.lower())


def is_backend_available(backend: str) -> bool:
    """Whether ``init_process_group(backend)`` can work here: the name is registered and the
    library it needs is installed. A device map (``"cpu:zmq,cuda:nccl"``) needs all of its
    backends. Never raises for an unknown name (False)."""
    names = [part.rpartition(":")[2].strip().lower() for part in str(backend).split(",")]
    return all(_available(_ALIASES.get(name, name)) for name in names)


def _available(name: str) -> bool:
    if name not in available_backends():
        return False
    try:
        return backend_class(name).library_available()
    except RuntimeError:  # its module cannot be imported
        return False


def is_gloo_available() -> bool:
    """True: ``"gloo"`` names our ``zmq`` backend, which needs only pyzmq."""
    return is_backend_available("gloo")


def is_mpi_available() -> bool:
    """Whether mpi4py is installed (the ``mpi`` extra), checked without initialising MPI."""
    return is_backend_available("mpi")


def is_nccl_available() -> bool:
    """Whether CuPy with NCCL is installed and usable (the ``cuda`` extra)."""
    return is_backend_available("nccl")


def is_ucc_available() -> bool:
    """False: there is no UCC backend."""
    return False


def is_xccl_available() -> bool:
    """False: there is no XCCL backend."""
    return False


def get_default_backend_for_device(device) -> str:
    """The backend ``init_process_group(backend=None)`` uses for tensors on ``device`` (a
    ``tensor.device`` or a string such as ``"cuda:1"``): ``"zmq"`` for CPU, ``"nccl"`` for CUDA.

    Raises:
        ValueError: the device type is neither ``cpu`` nor ``cuda``.
    """
    device_type = str(getattr(device, "type", device)).partition(":")[0]
    if device_type not in _DEFAULT_FOR_DEVICE:
        raise ValueError(f"get_default_backend_for_device: no backend for device type {device_type!r} "
                         f"(expected one of {sorted(_DEFAULT_FOR_DEVICE)})")
    return _DEFAULT_FOR_DEVICE[device_type]


def is_torchelastic_launched() -> bool:
    """Whether ``distrib-launch`` (or torchrun) started this process: it sets ``TORCHELASTIC_RUN_ID``."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node, from ``LOCAL_RANK`` (set by the launcher), else
    ``fallback_rank``.

    Raises:
        RuntimeError: ``LOCAL_RANK`` is not set and no ``fallback_rank`` was given.
    """
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("get_node_local_rank: LOCAL_RANK is not in the environment (the launcher sets it). "
                       "help: pass fallback_rank= to run outside a launcher")
