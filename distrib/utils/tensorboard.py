"""``SummaryWriter``: TensorBoard event files from a (distributed) training job, as
``torch.utils.tensorboard``.

The record format is written by tensorboardX (the maintained writer library, pip extra
``tensorboard``), not by hand. In a distributed job only rank 0 writes by default, so one run
gets one set of curves; ``all_ranks=True`` gives every rank its own ``rank<N>`` subdirectory.

>>> writer = SummaryWriter("runs/exp1")                       # doctest: +SKIP
>>> writer.add_scalar("loss/train", 0.25, global_step=10)      # doctest: +SKIP
>>> writer.close()                                            # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tensor import Tensor

from .. import init_api

__all__ = ["SummaryWriter"]


def _rank() -> int:
    """This process's rank: the process group's, else ``$RANK``, else 0."""
    if init_api.is_initialized():
        return init_api.get_rank()
    return int(os.environ.get("RANK", "0"))


def _numpy(value) -> np.ndarray:
    """A host array of a Tensor (any device) or array-like."""
    if isinstance(value, Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _scalar(value) -> float:
    if isinstance(value, Tensor):
        return float(value.item())
    return float(value)


class SummaryWriter:
    """Write scalars, histograms, images and text for TensorBoard (``tensorboard --logdir runs``).

    Args:
        log_dir: the run's directory (default ``runs/<date>_<host><comment>``).
        comment: appended to the default ``log_dir``.
        all_ranks: every rank writes (into ``log_dir/rank<N>``); by default only rank 0 does and
            the other ranks' calls do nothing.
        flush_secs, max_queue, filename_suffix, purge_step: as ``torch.utils.tensorboard``.

    Raises:
        ImportError: when tensorboardX is missing (``pip install 'distrib[tensorboard]'``).
    """

    def __init__(
        self,
        log_dir: str | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
        *,
        all_ranks: bool = False,
    ) -> None:
        try:
            import tensorboardX  # noqa: PLC0415 - the optional writer library, loaded when a writer is made
        except ImportError as exc:
            raise ImportError(
                "SummaryWriter needs tensorboardX: pip install 'distrib[tensorboard]' (or pip install tensorboardX)"
            ) from exc
        rank = _rank()
        self.rank = rank
        self._writer = None
        if rank != 0 and not all_ranks:
            return
        if all_ranks and log_dir is not None:
            log_dir = os.path.join(log_dir, f"rank{rank}")
        self._writer = tensorboardX.SummaryWriter(
            log_dir=log_dir,
            comment=comment,
            purge_step=purge_step,
            max_queue=max_queue,
            flush_secs=flush_secs,
            filename_suffix=filename_suffix,
        )

    @property
    def log_dir(self) -> str | None:
        """The directory this writer writes to (None on a rank that does not write)."""
        return None if self._writer is None else self._writer.logdir

    def get_logdir(self) -> str | None:
        """The directory this writer writes to (as ``torch.utils.tensorboard``)."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step: int | None = None, walltime: float | None = None) -> None:
        """Log one number (a Python number or a one-element Tensor) under ``tag``."""
        if self._writer is not None:
            self._writer.add_scalar(tag, _scalar(scalar_value), global_step, walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: dict[str, Any],
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log several numbers as curves of one chart ``main_tag`` (one run directory per key)."""
        if self._writer is not None:
            values = {k: _scalar(v) for k, v in tag_scalar_dict.items()}
            self._writer.add_scalars(main_tag, values, global_step, walltime)

    def add_histogram(
        self, tag: str, values, global_step: int | None = None, bins: str = "tensorflow", walltime: float | None = None
    ) -> None:
        """Log the distribution of ``values`` (a Tensor or array), e.g. weights or gradients."""
        if self._writer is not None:
            self._writer.add_histogram(tag, _numpy(values), global_step, bins, walltime)

    def add_image(
        self,
        tag: str,
        img_tensor,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Log an image: floats in [0, 1] or uint8, laid out as ``dataformats`` (CHW, HWC, HW)."""
        if self._writer is not None:
            self._writer.add_image(tag, _numpy(img_tensor), global_step, walltime, dataformats)

    def add_text(
        self, tag: str, text_string: str, global_step: int | None = None, walltime: float | None = None
    ) -> None:
        """Log a text (rendered as Markdown by TensorBoard)."""
        if self._writer is not None:
            self._writer.add_text(tag, text_string, global_step, walltime)

    def flush(self) -> None:
        """Write what is queued to disk."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """Flush and close the event files."""
        if self._writer is not None:
            self._writer.close()

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
