"""Save and resume a whole training state with ``tensor.save`` / ``tensor.load``.

A checkpoint holds everything a run needs to continue as if it had never
stopped: the model's ``state_dict``, the optimizer's (momentum buffers, Adam
moments, step counts), the LR scheduler's, the counters of the loop (epoch,
global step), the run's configuration, and the state of the default random
generator (``tensor.get_rng_state``), which drives dropout masks and the
shuffling done with ``tensor.randperm``. Resuming from it on CPU with the same
configuration gives parameters bit-identical to an uninterrupted run.

``tensor.save`` writes a path atomically (a temporary file in the same
directory, fsynced, then renamed over the target), so a crash while saving
leaves the previous checkpoint intact. The file holds only tensors and plain
values, so it loads with the safe default ``weights_only=True``.

    save_checkpoint(path, model, optimizer, scheduler, epoch=epoch, step=step, config=vars(args))
    ...
    state = load_checkpoint(path, model, optimizer, scheduler)   # restores the RNG too
    start_epoch = state["epoch"] + 1
"""

from __future__ import annotations

import os
from typing import Any

import tensor

__all__ = ["FORMAT", "save_checkpoint", "load_checkpoint"]

FORMAT = "distrib-examples-checkpoint/1"


def save_checkpoint(path: str | os.PathLike, model, optimizer, scheduler=None, *, epoch: int, step: int = 0,
                    config: dict[str, Any] | None = None, **extra: Any) -> None:
    """Write the training state to ``path`` atomically.

    ``epoch`` and ``step`` are the last *completed* epoch and global step;
    ``config`` (e.g. ``vars(args)``) and ``extra`` are stored as given and must
    be plain values (numbers, strings, lists, dicts, tensors).

    Raises:
        OSError: if the file cannot be written (the old file, if any, is untouched).
    """
    state = {
        "format": FORMAT,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "epoch": epoch,
        "step": step,
        "rng_state": tensor.get_rng_state(),
        "config": dict(config or {}),
        "extra": extra,
    }
    tensor.save(state, path)


def load_checkpoint(path: str | os.PathLike, model, optimizer=None, scheduler=None, *,
                    restore_rng: bool = True) -> dict[str, Any]:
    """Load ``path`` into ``model`` (and ``optimizer``/``scheduler`` if given) and
    restore the default generator's state (unless ``restore_rng`` is False).

    Returns the checkpoint's ``epoch``, ``step``, ``config`` and ``extra`` as a dict.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        RuntimeError: if the file is corrupt, is not a checkpoint written by
            ``save_checkpoint``, or does not match the model (missing/unexpected keys).
        ValueError: if it holds a scheduler state but no ``scheduler`` is given, or the reverse.
    """
    state = tensor.load(path, map_location="cpu")
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise RuntimeError(f"{os.fspath(path)}: not a training checkpoint (expected format {FORMAT!r})")
    model.load_state_dict(state["model"])
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    if (state["scheduler"] is None) != (scheduler is None):
        saved = "a" if state["scheduler"] is not None else "no"
        given = "one" if scheduler is not None else "none"
        raise ValueError(f"{os.fspath(path)}: checkpoint has {saved} LR scheduler state but {given} was given")
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    if restore_rng:
        tensor.set_rng_state(state["rng_state"])
    return {key: state[key] for key in ("epoch", "step", "config", "extra")}
