"""``save``, ``async_save`` and ``load`` of (sharded) state dicts, as ``torch.distributed.checkpoint``.

Note [Distributed checkpoint layout]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A checkpoint is a directory. Each save writes a new version ``v<token>/`` in it: one file per
rank, ``__<rank>_0.distcp``, holding that rank's pieces of the sharded tensors (and, on rank 0,
the whole tensors and nothing else), and rank 0's ``.metadata``: for each key of the flattened
state dict, its kind (a sharded tensor with its global shape and which rank holds which range of
its flattened elements; a whole tensor; or a plain value, kept in the metadata itself). All files
are written by ``tensor.save`` (atomic, checksummed, loaded without unpickling). The version
becomes the checkpoint when rank 0 rewrites the ``LATEST`` file atomically, after every rank has
finished its file (each rank marks that with an empty ``done.<rank>`` file, which rank 0 waits
for, so the commit needs no collective and ``async_save`` can run it in a thread). A crash before
that leaves ``LATEST`` naming the previous version, which stays loadable; older versions are
removed after a commit.

Loading reads ``LATEST`` and fills the given state dict in place: a sharded tensor gets the
ranges of its own piece from whichever files hold them, so a checkpoint saved on N ranks loads
on M ranks (resharding).
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
import time
from concurrent.futures import Future
from typing import Any

import tensor
from tensor import Tensor

from ..init_api import get_rank, get_world_size, is_initialized
from ..object_collectives import broadcast_object_list
from ._sharded import ShardedTensor, flatten

__all__ = ["save", "async_save", "load"]

LATEST = "LATEST"
METADATA = ".metadata"
COMMIT_TIMEOUT = 600.0  # seconds rank 0 waits for the other ranks' files


def _rank_world(process_group) -> tuple[int, int]:
    if not is_initialized():
        return 0, 1
    return get_rank(process_group), get_world_size(process_group)


def _snapshot(state_dict: dict, rank: int) -> tuple[dict, dict]:
    """(this rank's file: ``{key: tensor}`` copies, this rank's metadata entries)."""
    payload, entries = {}, {}
    for key, value in flatten(state_dict).items():
        if isinstance(value, ShardedTensor):
            valid = value.valid_length()
            payload[key] = value.local.detach().reshape(-1)[:valid].clone()
            entries[key] = {
                "kind": "sharded",
                "shape": list(value.global_shape),
                "dtype": value.local.dtype.name,
                "pieces": [[rank, value.offset, valid]],
            }
        elif isinstance(value, Tensor):
            if rank == 0:
                payload[key] = value.detach().clone()
            entries[key] = {"kind": "tensor", "shape": list(value.shape), "dtype": value.dtype.name}
        else:
            entries[key] = {"kind": "value", "value": value}
    return payload, entries


def async_save(state_dict: dict, *, checkpoint_id: str | os.PathLike, process_group=None) -> Future:
    """Start saving ``state_dict`` (on every rank) to the directory ``checkpoint_id``; returns a
    future that is done when this rank's part is written (on rank 0: when the checkpoint is
    committed). The tensors are copied before it returns, so training may go on and change them.
    See Note [Distributed checkpoint layout].
    """
    rank, world = _rank_world(process_group)
    token = [secrets.token_hex(8) if rank == 0 else None]
    if world > 1:
        broadcast_object_list(token, src=0, group=process_group)
    payload, entries = _snapshot(state_dict, rank)
    version = os.path.join(os.fspath(checkpoint_id), f"v{token[0]}")
    os.makedirs(version, exist_ok=True)
    future: Future = Future()

    def write() -> None:
        try:
            tensor.save(payload, os.path.join(version, f"__{rank}_0.distcp"))
            tensor.save(entries, os.path.join(version, f".entries.{rank}"))
            open(os.path.join(version, f"done.{rank}"), "w").close()
            if rank == 0:
                _commit(os.fspath(checkpoint_id), version, world)
            future.set_result(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            future.set_exception(exc)

    threading.Thread(target=write, name="distrib-checkpoint-save", daemon=True).start()
    return future


def _commit(root: str, version: str, world: int) -> None:
    """Wait for every rank's file, write the metadata, point ``LATEST`` at ``version``, and
    remove older versions.

    Raises:
        TimeoutError: if a rank's file does not appear within COMMIT_TIMEOUT seconds.
    """
    deadline = time.monotonic() + COMMIT_TIMEOUT
    for r in range(world):
        while not os.path.exists(os.path.join(version, f"done.{r}")):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"distrib.checkpoint: rank {r} did not write its part of {version} "
                    f"within {COMMIT_TIMEOUT} s; the previous checkpoint stays the latest"
                )
            time.sleep(0.01)
    merged: dict[str, Any] = {}
    for r in range(world):
        for key, entry in tensor.load(os.path.join(version, f".entries.{r}")).items():
            if key in merged and entry["kind"] == "sharded":
                merged[key]["pieces"] += entry["pieces"]
            else:
                merged.setdefault(key, entry)
    tensor.save({"world_size": world, "entries": merged}, os.path.join(version, METADATA))
    tensor.save({"version": os.path.basename(version)}, os.path.join(root, LATEST))
    for name in os.listdir(root):
        if name.startswith("v") and name != os.path.basename(version):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def save(state_dict: dict, *, checkpoint_id: str | os.PathLike, process_group=None) -> None:
    """Save ``state_dict`` (on every rank) to the directory ``checkpoint_id``: each rank its
    pieces of the ``ShardedTensor`` values, rank 0 the whole tensors and plain values; committed
    atomically (Note [Distributed checkpoint layout]). Returns once the checkpoint is committed.

    Raises:
        TimeoutError: if a rank does not write its part (the previous checkpoint stays).
    """
    async_save(state_dict, checkpoint_id=checkpoint_id, process_group=process_group).result()
    _, world = _rank_world(process_group)
    if world > 1:  # rank 0 commits: every rank returns once it has
        done = [None]
        broadcast_object_list(done, src=0, group=process_group)


def load(state_dict: dict, *, checkpoint_id: str | os.PathLike, process_group=None) -> None:
    """Fill ``state_dict`` in place from the checkpoint in ``checkpoint_id``: tensors are copied
    into, ``ShardedTensor`` values get their own range (whatever the world size at save time),
    plain values are replaced.

    Raises:
        FileNotFoundError: if there is no committed checkpoint there.
        KeyError: for a key of ``state_dict`` that the checkpoint lacks.
        RuntimeError: for a shape that differs from the saved one, or a corrupt file.
    """
    root = os.fspath(checkpoint_id)
    version = os.path.join(root, tensor.load(os.path.join(root, LATEST))["version"])
    metadata = tensor.load(os.path.join(version, METADATA))
    files: dict[int, dict] = {}

    def read(r: int) -> dict:
        if r not in files:
            files[r] = tensor.load(os.path.join(version, f"__{r}_0.distcp"))
        return files[r]

    with tensor.no_grad():
        for key, (container, name, target) in flatten(state_dict, with_parents=True).items():
            entry = metadata["entries"].get(key)
            if entry is None:
                raise KeyError(f"distrib.checkpoint.load: {key!r} is not in the checkpoint at {root}")
            if isinstance(target, ShardedTensor):
                _check_shape(key, target.global_shape, entry)
                _fill_piece(key, target, entry, read)
            elif isinstance(target, Tensor):
                _check_shape(key, target.shape, entry)
                target.copy_(read(0)[key])
            else:
                container[name] = entry["value"]


def _check_shape(key: str, shape, entry: dict) -> None:
    if list(shape) != entry.get("shape"):
        raise RuntimeError(
            f"distrib.checkpoint.load: {key!r} has shape {list(shape)} here and {entry.get('shape')} in the checkpoint"
        )


def _fill_piece(key: str, target: ShardedTensor, entry: dict, read) -> None:
    """Copy into ``target.local`` the saved ranges of ``key`` that overlap its own."""
    flat = target.local.reshape(-1)
    start, stop = target.offset, target.offset + target.valid_length()
    for rank, offset, length in entry["pieces"]:
        lo, hi = max(start, offset), min(stop, offset + length)
        if lo < hi:
            flat[lo - start : hi - start] = read(rank)[key][lo - offset : hi - offset]
