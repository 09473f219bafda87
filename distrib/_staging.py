"""Tensors to arrays and back for the collectives: contiguous staging, argument checks, and
the debug mode's call signatures (used by ``collectives.py``, ``p2p.py`` and
``object_collectives.py``)."""

from __future__ import annotations

import numpy as np

from tensor import Tensor
from tensor import _backend as array_backend

from .errors import CollectiveArgumentError


def in_place_array(t: Tensor, backend):
    """``t``'s storage as a flat array ``backend`` can use directly, or None if it must be
    staged (a device the backend cannot read, or a non-contiguous tensor)."""
    arr = t._data
    if t._device.type in backend.device_types and arr.flags.c_contiguous:
        return arr if arr.ndim == 1 else arr.reshape(-1)
    return None


class Staged:
    """A contiguous flat array the backend can use for ``t``, and the write-back of results."""

    __slots__ = ("t", "flat", "_copy")

    def __init__(self, t: Tensor, backend, what: str) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what} must be a Tensor, got {type(t).__name__}")
        self.t = t
        self._copy = None
        self.flat = in_place_array(t, backend)
        if self.flat is not None:
            return
        arr = t._data
        if t.device.type not in backend.device_types:  # e.g. a CUDA tensor on the zmq backend
            # to_numpy synchronises the device before the host copy is made
            self._copy = np.ascontiguousarray(array_backend.backend_for_array(arr)[0].to_numpy(arr))
        else:
            self._copy = array_backend.contiguous_copy(arr)  # on arr's device, whatever thread this is
        self.flat = self._copy.reshape(-1)

    def written(self) -> None:
        """Copy results back into the tensor if staged, and bump its version counter."""
        if self._copy is not None:
            dst = self.t._data
            if not getattr(dst.flags, "writeable", True):  # CuPy arrays have no such flag
                dst = _writable_view(dst)
            array_backend.copy_into(dst, self._copy)
        self.t._version_box[0] += 1


def _writable_view(arr):
    """A writable view of the memory that read-only ``arr`` covers. An expanded tensor's
    elements share memory, so ``tensor`` makes its arrays read-only, but PyTorch's collectives
    write through them (each shared element receives equal results)."""
    xp = array_backend.backend_for_array(arr)[0].xp
    storage, offset = array_backend.storage_of(xp, arr)
    return array_backend.storage_view(xp, storage, arr.shape, arr.strides, offset, arr.dtype)


def resolve_rank(pg, rank, group_rank, what: str, op: str) -> int:
    """The group rank of the root given as global ``rank`` or as ``group_rank``.

    Raises:
        ValueError: both are given.
        CollectiveArgumentError: the rank is not in the group.
    """
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"{op}: pass {what} or group_{what}, not both")
        r = int(group_rank)
    else:
        r = 0 if rank is None else int(rank)
        if r not in pg.ranks:
            raise CollectiveArgumentError(
                f"{op}: {what}={r} is not a member of the group (global ranks {pg.ranks})")
        r = pg.ranks.index(r)
    if not 0 <= r < pg.size():
        raise CollectiveArgumentError(f"{op}: group_{what}={r} is out of range for a group of size {pg.size()}")
    return r


def debug_sig(t: Tensor, **extra) -> dict:
    return {"shape": tuple(t.shape), "dtype": t.dtype.name, **extra}


def check_list(op: str, name: str, tensors, like: Tensor, size: int) -> None:
    """``tensors`` holds one Tensor per rank (``size``), each with the dtype and element count of ``like``.

    Raises:
        TypeError: ``tensors`` is not a list of Tensors.
        CollectiveArgumentError: a wrong length, dtype or element count.
    """
    check_len(op, name, tensors, size)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name}[{i}] must be a Tensor, got {type(t).__name__}")
        if t.dtype != like.dtype or t.numel() != like.numel():
            raise CollectiveArgumentError(f"{op}: {name}[{i}] has shape {tuple(t.shape)} and dtype {t.dtype.name}; "
                             f"expected {like.numel()} elements of {like.dtype.name}")


def check_len(op: str, name: str, tensors, size: int) -> None:
    """``tensors`` is a list of ``size`` entries.

    Raises:
        TypeError: it is not a sequence (None, say).
        CollectiveArgumentError: it has another length.
    """
    if not hasattr(tensors, "__len__"):
        raise TypeError(f"{op}: {name} must be a list of tensors, got {type(tensors).__name__}")
    if len(tensors) != size:
        raise CollectiveArgumentError(
            f"{op}: {name} must hold one tensor per rank of the group ({size}), got {len(tensors)} entries")


def check_root_list(op: str, name: str, tensors, like: Tensor, pg, is_root: bool, root_role: str) -> None:
    """``tensors`` is a valid per-rank list (see ``check_list``) on the root rank and not given elsewhere."""
    if is_root:
        if tensors is None:
            raise ValueError(f"{op}: {name} must be given on the {root_role} rank")
        check_list(op, name, tensors, like, pg.size())
    elif tensors:
        raise ValueError(f"{op}: {name} must be given on the {root_role} rank only")


def empty_flat(like: Staged, count: int):
    return array_backend.empty_like(like.flat, (count,))


def unstack(flat, outs: list[Staged]) -> None:
    pos = 0
    for o in outs:
        n = o.flat.size
        o.flat[...] = flat[pos: pos + n]
        pos += n
        o.written()
