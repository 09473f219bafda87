#!/usr/bin/env python3
"""Instructions per recorded op (issue 19), counted by callgrind: stable on a loaded machine.

    .venv/bin/python scripts/callgrind_eager.py                  # every chain, 10 runs of 100 ops
    .venv/bin/python scripts/callgrind_eager.py --chain tensor --runs 20
    .venv/bin/python scripts/callgrind_eager.py --chain tensor --steps 20000 --runs 2 --cache-sim

Each chain is the one of ``scripts/bench.py --only core`` (``_recorded_chain``: a 4-element
tensor that requires grad, ``y = y * c`` ...). The child starts uninstrumented (fast), turns
callgrind's instrumentation on (``callgrind_control``), runs the chain twice as a warm-up, then
``--runs`` times inside ``functools.reduce``, the only C function callgrind counts in
(``--toggle-collect``): the import and the warm-up are not counted. ``--cache-sim`` also counts
the simulated data-cache misses per op (first level, and last level), which a long live chain's
cold memory costs where a short chain reuses hot blocks. Needs valgrind.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import subprocess
import sys

CHAINS = ("nograd", "tensor", "scalar", "pair", "fb", "fb_cgrad", "fb_scalar", "fb_pair")


def _child(chain: str, runs: int, steps: int) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import tensor  # noqa: PLC0415 - the child only

    # "fb*": forward and backward of a chain ("fb_cgrad": c requires grad too).
    x = tensor.ones(4, requires_grad=True)
    c = tensor.full((4,), 1.0001, requires_grad=chain == "fb_cgrad")
    step = chain.removeprefix("fb_")

    def run(_acc=None, _i=None):
        y = x.detach() if chain == "nograd" else x
        for _ in range(steps):
            if step == "scalar":
                y = y * 1.0001
            elif step == "pair":
                y = (y * 0.5).exp()
            else:
                y = y * c
        if chain.startswith("fb"):
            y.sum().backward()

    subprocess.run(["callgrind_control", "--instr=on", str(os.getpid())], capture_output=True, check=True)
    run()
    run()
    functools.reduce(run, range(runs), None)


def instructions_per_op(chain: str, runs: int, steps: int, cache_sim: bool = False) -> tuple[float, ...]:
    """Instructions per op of ``chain`` (per pair of ops for 'pair'), by callgrind; with
    ``cache_sim``, also its first- and last-level data-cache misses (reads and writes) per op."""
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--cache-sim={'yes' if cache_sim else 'no'}",
            "--callgrind-out-file=/dev/null",
            "--instr-atstart=no",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            chain,
            "--runs",
            str(runs),
            "--steps",
            str(steps),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    collected = re.search(r"Collected : *([\d ]+)", out.stderr)
    if collected is None:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{out.stderr[-2000:]}")
    counts = [int(n) / runs / steps for n in collected.group(1).split()]
    if not cache_sim:
        return (counts[0],)
    # Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
    return counts[0], counts[4] + counts[5], counts[7] + counts[8]


def main(argv=None) -> int:
    """Print k instructions per op for each chain."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chain", choices=CHAINS, action="append", help="one chain (repeatable; default all)")
    parser.add_argument("--runs", type=int, default=10, help="counted runs of each chain (default 10)")
    parser.add_argument("--steps", type=int, default=100, help="ops per chain (default 100)")
    parser.add_argument("--cache-sim", action="store_true", help="also count data-cache misses per op (slower)")
    parser.add_argument("--child", choices=CHAINS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.runs, args.steps)
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        parser.error("valgrind (with callgrind_control) is not installed")
    for chain in args.chain or CHAINS:
        counts = instructions_per_op(chain, args.runs, args.steps, args.cache_sim)
        misses = f"  D1 misses {counts[1]:7.1f}/op  LL misses {counts[2]:6.2f}/op" if args.cache_sim else ""
        print(f"{chain:8s} {counts[0] / 1e3:8.2f} k instructions/op{misses}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
