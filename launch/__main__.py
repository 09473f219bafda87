"""``distrib-launch`` / ``python -m launch``: start and supervise the workers of a distributed job.

    distrib-launch --nproc 2 train.py --epochs 3
    distrib-launch --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --nproc 4 train.py   # on each node

See ``distrib-launch --help`` for the flags (torchrun's). The exit code is 0 when every
worker succeeded, and otherwise the root-cause worker's exit code (128+signal for a signal).
"""

from __future__ import annotations

import sys

from . import _timeline, procs
from .agent import Job, Signals, run_single
from .cli import parse_args
from .output import Console


def run(args, console: Console | None = None) -> int:
    """Run the job described by parsed ``args``; returns the launcher's exit code."""
    console = console or Console()
    job = Job(args, console)
    job.watchdog = procs.Watchdog()  # forked now, before any thread exists
    if not job.keep:
        job.watchdog.remove_on_death(job.base_dir)
    procs.become_subreaper()
    try:
        with Signals() as sigs:
            if args.max_nodes == 1:
                return run_single(job, sigs)
            from .node import run_node  # noqa: PLC0415 - sockets, HMAC and threads only for multi-node jobs

            return run_node(job, sigs)
    finally:
        job.watchdog.close()
        job.cleanup()
        if job.timeline is not None:
            ranks = _timeline.merge_ranks(job.timeline)
            console.notice(f"timeline of ranks {ranks} written to {job.timeline}" if ranks
                           else f"no rank wrote a timeline part for {job.timeline}")


def main(argv=None) -> int:
    """The console-script entry point: parse ``argv`` (default ``sys.argv[1:]``), run, exit with its code."""
    args = parse_args(argv)
    raise SystemExit(run(args))


if __name__ == "__main__":
    main(sys.argv[1:])
