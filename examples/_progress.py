"""A tiny tqdm-like progress bar for the training examples (no dependencies).

On a terminal the bar is one line redrawn in place with ``\\r`` (at most ten
times a second); anywhere else (a pipe, a log file, a test) it prints a few
plain lines, spaced by step count so the output does not depend on timing::

    epoch 3/10 |############..................|  18/45 [00:00<00:01, 41.2 it/s, loss=0.1234]

Use it as a context manager, or call ``close`` yourself::

    with Progress(len(batches), desc="epoch 1/10") as bar:
        for batch in batches:
            ...
            bar.update(loss=loss.item())
        bar.set_postfix(test_acc="97.5%")
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_seconds"]

BAR_WIDTH = 30
REDRAW_SECONDS = 0.1


def format_seconds(seconds: float) -> str:
    """``MM:SS`` (or ``H:MM:SS`` from an hour on), as tqdm prints times; ``?`` if unknown."""
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Progress:
    """A progress bar over ``total`` steps showing step/total, rate, loss and ETA.

    ``stream`` defaults to ``sys.stdout``; ``lines`` is how many plain lines to print
    when the stream is not a terminal (evenly spaced by step; the last one at
    ``total``); ``live`` forces terminal (True) or plain (False) mode.

    Raises:
        ValueError: if ``total`` or ``lines`` is less than 1.
    """

    def __init__(self, total: int, desc: str = "", stream: TextIO | None = None, lines: int = 1,
                 live: bool | None = None) -> None:
        if total < 1:
            raise ValueError(f"total must be >= 1, got {total}")
        if lines < 1:
            raise ValueError(f"lines must be >= 1, got {lines}")
        self.total, self.desc, self.lines = total, desc, lines
        self.stream = stream if stream is not None else sys.stdout
        self.live = self.stream.isatty() if live is None else live
        self.count = 0
        self.loss: float | None = None
        self.postfix: dict[str, str] = {}
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._closed = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def update(self, n: int = 1, loss: float | None = None) -> None:
        """Advance by ``n`` steps and record the latest ``loss``."""
        previous, self.count = self.count, min(self.count + n, self.total)
        if loss is not None:
            self.loss = loss
        if self.live:
            now = time.perf_counter()
            if now - self._last_draw >= REDRAW_SECONDS or self.count == self.total:
                self._last_draw = now
                self.stream.write("\r" + self.render() + "\033[K")
                self.stream.flush()
        elif self.count < self.total and self._checkpoint(previous) != self._checkpoint(self.count):
            self.stream.write(self.render() + "\n")
            self.stream.flush()

    def set_postfix(self, **values) -> None:
        """Show ``key=value`` pairs after the loss (e.g. a validation metric)."""
        self.postfix.update({key: str(value) for key, value in values.items()})

    def close(self) -> None:
        """Draw the final state and end the line (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.stream.write(("\r" + self.render() + "\033[K\n") if self.live else self.render() + "\n")
        self.stream.flush()

    def render(self) -> str:
        """The bar as one line of text."""
        elapsed = time.perf_counter() - self.start
        rate = self.count / elapsed if elapsed > 0 else float("nan")
        eta = (self.total - self.count) / rate if self.count else float("nan")
        filled = BAR_WIDTH * self.count // self.total
        width = len(str(self.total))
        info = [f"{rate:.1f} it/s" if rate == rate else "? it/s"]
        if self.loss is not None:
            info.append(f"loss={self.loss:.4f}")
        info.extend(f"{key}={value}" for key, value in self.postfix.items())
        prefix = f"{self.desc} " if self.desc else ""
        return (f"{prefix}|{'#' * filled}{'.' * (BAR_WIDTH - filled)}| {self.count:{width}d}/{self.total} "
                f"[{format_seconds(elapsed)}<{format_seconds(eta)}, {', '.join(info)}]")

    def _checkpoint(self, count: int) -> int:
        # Which of the ``lines`` evenly spaced print points ``count`` has passed.
        return count * self.lines // self.total
