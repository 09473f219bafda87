"""The training examples' progress bar: tqdm, configured for them.

On a terminal tqdm redraws one line in place (at most ten times a second, as wide as the
terminal allows). Anywhere else (a pipe, the launcher, a log file, a test) it prints a few
plain lines with no ``\\r``, spaced by step count so the output does not depend on timing::

    epoch 3/10 |############..................| 18/45 [00:00<00:01, 41.20 it/s, loss=0.1234]

Use it as a context manager, or call ``close`` yourself; ``disable=True`` (e.g. on every
rank but 0) prints nothing::

    with Progress(len(batches), desc="epoch 1/10") as bar:
        for batch in batches:
            ...
            bar.update(loss=loss.item())
        bar.set_postfix(test_acc="97.5%")
"""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

__all__ = ["Progress"]

BAR_FORMAT = "{desc}|{bar:30}| {n:%dd}/{total} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


class _PlainLines:
    """tqdm's file off a terminal: each redraw becomes one plain line (tqdm writes ``\\r`` + the
    bar + padding); the bare line end tqdm writes when it closes is dropped."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


class Progress(tqdm):
    """A tqdm bar over ``total`` steps showing step/total, elapsed<ETA, rate, loss and extra values.

    ``stream`` defaults to ``sys.stdout``; ``lines`` is how many plain lines to print when the
    stream is not a terminal (evenly spaced by step; the last one when the bar closes).

    Raises:
        ValueError: if ``total`` or ``lines`` is less than 1.
    """

    monitor_interval = 0  # no monitor thread: off a terminal, when a line appears depends on steps only

    def __init__(self, total: int, desc: str = "", stream: TextIO | None = None, lines: int = 1,
                 disable: bool = False) -> None:
        if total < 1:
            raise ValueError(f"total must be >= 1, got {total}")
        if lines < 1:
            raise ValueError(f"lines must be >= 1, got {lines}")
        stream = stream if stream is not None else sys.stdout
        self.live, self.lines = stream.isatty(), lines
        self._values: dict[str, str] = {}
        self._drawing = False
        file = stream if self.live else _PlainLines(stream)
        super().__init__(total=total, desc=f"{desc} " if desc else "", file=file,
                         bar_format=BAR_FORMAT % len(str(total)), ascii=".#", unit=" it", leave=True,
                         dynamic_ncols=self.live, mininterval=0.1 if self.live else float("inf"), disable=disable)

    def update(self, n: int = 1, loss: float | None = None) -> None:
        """Advance by ``n`` steps and record the latest ``loss``."""
        if loss is not None:
            self.set_postfix(loss=f"{loss:.4f}")
        before = self.n
        super().update(n)
        if not self.live and self.n < self.total and self._point(before) != self._point(self.n):
            self._draw(self.refresh)

    def set_postfix(self, **values) -> None:
        """Show ``key=value`` pairs after the loss (e.g. a validation metric) from the next redraw."""
        self._values.update({key: str(value) for key, value in values.items()})
        super().set_postfix(ordered_dict=self._values, refresh=False)

    def display(self, msg=None, pos=None):
        """Draw the bar; off a terminal only at the step-spaced points and on close."""
        if self.live or self._drawing:
            return super().display(msg, pos)
        return None

    def close(self) -> None:
        """Draw the final state and end the line (idempotent)."""
        self._draw(super().close)

    def _point(self, count: int) -> int:
        # Which of the ``lines`` evenly spaced print points ``count`` has passed.
        return count * self.lines // self.total

    def _draw(self, action) -> None:
        self._drawing = True
        try:
            action()
        finally:
            self._drawing = False
