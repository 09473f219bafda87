"""Worker output on the console: ``[rankN]:`` prefixes, whole lines, and readable rank-0 progress bars."""

from __future__ import annotations

import io
import os

import pytest

from launch.output import Console, StreamReader


def _feed(console, rank, chunks, target=1, log=None):
    """Run a reader over a pipe carrying ``chunks`` (each written separately) to EOF."""
    read_fd, write_fd = os.pipe()
    reader = StreamReader(read_fd, target, rank, console, log, progress=rank == 0)
    for chunk in chunks:
        reader._feed(chunk)
    os.close(write_fd)
    reader.run()  # reads EOF: flushes the unfinished line
    return reader


CASES = [  # (chunks from rank 1, console text)
    ([b"a\nb\n"], "[rank1]:a\n[rank1]:b\n"),
    ([b"par", b"tial\n"], "[rank1]:partial\n"),
    ([b"no newline"], "[rank1]:no newline\n"),
    ([b"\n"], "[rank1]:\n"),
    ([b"x\ry\n"], "[rank1]:x\ry\n"),  # not rank 0: \r-updates wait for the newline
]


@pytest.mark.parametrize("chunks,expected", CASES)
def test_lines_are_prefixed_whole(chunks, expected):
    out = io.BytesIO()
    _feed(Console(out, io.BytesIO()), 1, chunks)
    assert out.getvalue().decode() == expected


def test_rank0_progress_bar_passes_through_and_other_ranks_break_it_cleanly():
    out = io.BytesIO()
    console = Console(out, io.BytesIO())
    bar = StreamReader(os.pipe()[0], 1, 0, console, None, progress=True)
    other = StreamReader(os.pipe()[0], 1, 1, console, None, progress=False)
    bar._feed(b"\r 10%|#")
    bar._feed(b"\r 20%|##")
    assert out.getvalue() == b"[rank0]:\r 10%|#\r 20%|##"  # shown at once, one prefix
    other._feed(b"hello\n")
    bar._feed(b"\r 30%|###")
    bar._feed(b"\n")  # the bar closes: its newline is not an empty line
    bar._feed(b"done\n")
    assert out.getvalue().decode().split("\n") == [
        "[rank0]:\r 10%|#\r 20%|##", "[rank1]:hello", "[rank0]:\r 30%|###", "[rank0]:done", ""]


def test_launcher_notices_end_an_unfinished_bar_first():
    out, err = io.BytesIO(), io.BytesIO()
    console = Console(out, err)
    bar = StreamReader(os.pipe()[0], 2, 0, console, None, progress=True)
    bar._feed(b"\r 5%")
    console.notice("stopping")
    assert err.getvalue() == b"[rank0]:\r 5%\n[distrib-launch] stopping\n"


def test_redirected_streams_go_to_the_log_only_and_keep_a_tail(tmp_path):
    log = tmp_path / "stderr.log"
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"".join(b"line %d\n" % i for i in range(100)) + b"Traceback: last")
    os.close(write_fd)
    reader = StreamReader(read_fd, 2, 3, None, str(log), progress=False)
    reader.run()
    assert log.read_bytes().endswith(b"line 99\nTraceback: last")
    tail = reader.tail_text()
    assert tail.endswith("line 99\nTraceback: last\n") and "line 0\n" not in tail
