"""Worker output: rank prefixes on the console, log files, and a stderr tail for the summary.

Every worker's stdout and stderr are pipes read by one thread each. Complete lines go to
the launcher's stdout/stderr as ``[rankN]:line``, under one lock, so lines of different
ranks never mix mid-line.

Note [Progress bars]
    A progress bar redraws its line with ``\\r`` and no newline. Holding those bytes until a
    newline would freeze the bar, and prefixing every redraw would fill logs with prefixes.
    So for global rank 0 only, a partial line that contains ``\\r`` is passed through at
    once, unprefixed after the ``\\r`` (the line start still carries ``[rank0]:``). If
    another rank writes a line while rank 0's bar is mid-line, a newline is written first
    so the two never share a line; rank 0's next redraw starts a fresh prefixed line, and
    the newline that would end the broken bar is dropped (no empty ``[rank0]:`` lines).
"""

from __future__ import annotations

import collections
import os
import sys
import threading

__all__ = ["Console", "StreamReader", "parse_std_spec"]

TAIL_LINES = 60
_MAX_PENDING = 1 << 16


def parse_std_spec(value: str, nproc: int, flag: str) -> dict[int, int]:
    """``--redirects``/``--tee``: ``"3"`` for every local rank, or ``"0:1,1:2"`` per local rank.

    The value is 0 (nothing), 1 (stdout), 2 (stderr) or 3 (both).
    """
    def code(text: str) -> int:
        if text.strip() not in ("0", "1", "2", "3"):
            raise ValueError(f"{flag}: expected 0 (none), 1 (stdout), 2 (stderr) or 3 (both), got {text!r}")
        return int(text)

    value = (value or "0").strip()
    if ":" not in value:
        return dict.fromkeys(range(nproc), code(value))
    spec = dict.fromkeys(range(nproc), 0)
    for part in value.split(","):
        rank, _, std = part.partition(":")
        if not rank.strip().isdigit():
            raise ValueError(f"{flag}: expected local_rank:value pairs like 0:1,1:2, got {value!r}")
        spec[int(rank)] = code(std)
    return spec


class Console:
    """The launcher's stdout and stderr, shared by all readers (see Note [Progress bars])."""

    def __init__(self, stdout=None, stderr=None) -> None:
        self.lock = threading.Lock()
        self.streams = {1: stdout or sys.stdout.buffer, 2: stderr or sys.stderr.buffer}
        self.partial_owner: dict[int, object] = {}  # fd -> reader whose line is unfinished on the console

    def emit(self, reader, lines: list[bytes], partial: bytes = b"") -> None:
        """Write ``reader``'s complete ``lines`` and then an unfinished ``partial`` line, prefixed."""
        fd = reader.target
        with self.lock:
            stream = self.streams[fd]
            owner = self.partial_owner.get(fd)
            if owner is not None and owner is not reader:
                stream.write(b"\n")  # never share a line with another rank's unfinished bar
                owner.at_line_start, owner.interrupted = True, True
                del self.partial_owner[fd]
            out = []
            for line in lines:
                if reader.interrupted and not line.strip(b"\r"):
                    reader.interrupted = False  # the end of a bar we already broke: drop its newline
                    continue
                reader.interrupted = False
                out.append((reader.prefix if reader.at_line_start else b"") + line + b"\n")
                reader.at_line_start = True
            if partial:
                out.append((reader.prefix if reader.at_line_start else b"") + partial)
                reader.at_line_start, reader.interrupted = False, False
                self.partial_owner[fd] = reader
            elif owner is reader:
                del self.partial_owner[fd]
            self._write(stream, b"".join(out))

    def notice(self, text: str) -> None:
        """A launcher message on stderr (it ends any unfinished worker line first)."""
        with self.lock:
            stream = self.streams[2]
            if self.partial_owner:
                for owner in self.partial_owner.values():
                    owner.at_line_start, owner.interrupted = True, True
                self.partial_owner.clear()
                stream.write(b"\n")
            self._write(stream, f"[distrib-launch] {text}\n".encode())

    @staticmethod
    def _write(stream, data: bytes) -> None:
        try:
            stream.write(data)
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed console must not kill the launcher


class StreamReader(threading.Thread):
    """Reads one worker pipe to EOF: console (prefixed), log file, and a tail of recent lines."""

    def __init__(self, fd: int, target: int, rank: int, console: Console | None, log_path: str | None,
                 progress: bool) -> None:
        super().__init__(name=f"distrib-launch-rank{rank}-{'out' if target == 1 else 'err'}", daemon=True)
        self.fd, self.target, self.console, self.progress = fd, target, console, progress
        self.prefix = f"[rank{rank}]:".encode()
        self.log = open(log_path, "ab", buffering=0) if log_path else None
        self.tail: collections.deque[bytes] = collections.deque(maxlen=TAIL_LINES)
        self.pending = b""
        self.at_line_start = True  # both guarded by console.lock
        self.interrupted = False

    def run(self) -> None:
        try:
            while True:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    data = b""
                if not data:
                    break
                if self.log:
                    self.log.write(data)
                self._feed(data)
            if self.pending:
                self._feed(b"\n")
        finally:
            os.close(self.fd)
            if self.log:
                self.log.close()

    def tail_text(self) -> str:
        return b"".join(self.tail).decode(errors="replace")

    def _feed(self, data: bytes) -> None:
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()
        self.tail.extend(line + b"\n" for line in lines)
        partial = b""
        if len(self.pending) > _MAX_PENDING or (self.progress and b"\r" in self.pending):
            partial, self.pending = self.pending, b""
        if self.console is not None and (lines or partial):
            self.console.emit(self, lines, partial)
