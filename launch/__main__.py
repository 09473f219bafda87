"""``distrib-launch`` / ``python -m launch``: start and supervise the workers of a distributed job.

    distrib-launch --nproc 2 train.py --epochs 3
    distrib-launch --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 --nproc 4 train.py   # on each node

See ``distrib-launch --help`` for the flags (torchrun's). The exit code is 0 when every
worker succeeded, and otherwise the root-cause worker's exit code (128+signal for a signal).
"""

from __future__ import annotations

import sys

from .agent import run
from .cli import parse_args


def main(argv=None) -> int:
    """The console-script entry point: parse ``argv`` (default ``sys.argv[1:]``), run, exit with its code."""
    args = parse_args(argv)
    raise SystemExit(run(args))


if __name__ == "__main__":
    main(sys.argv[1:])
