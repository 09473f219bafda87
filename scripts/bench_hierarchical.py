"""Hierarchical vs flat all_reduce, two hosts of two ranks each (two network namespaces joined by a veth).

Usage: ``sudo .venv/bin/python scripts/bench_hierarchical.py [--repeat N] [--rounds R]``
(= ``scripts/bench.py --only hierarchical``). Needs root for ``ip netns``; without it the
group has no rows. Each round runs the 2x2 job (``tests/distrib/_hierarchical_worker.py``,
float32 all_reduce, median over iterations of rank 0's times) once hierarchical and once with
``DISTRIB_HIERARCHICAL=0`` (the flat TCP ring / direct exchange), seconds apart; each
side's time is the median over rounds, the ratio the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.distrib._hierarchical_worker import BENCH_SIZES, run_2x2  # noqa: E402
from tests.launch.conftest import NetnsPair, clean_env, netns_skip_reason  # noqa: E402


def measure(repeat: int, rounds: int) -> dict[str, tuple[float, float, float]]:
    """``{size: (hierarchical ms, flat ms, median per-round ratio)}``."""
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in BENCH_SIZES}
    net = NetnsPair()
    try:
        for _ in range(rounds):
            hier = run_2x2(net, "bench", clean_env(), repeat, timeout=600)[0]["ms"]
            flat = run_2x2(net, "bench", clean_env(DISTRIB_HIERARCHICAL="0"), repeat, timeout=600)[0]["ms"]
            for label in BENCH_SIZES:
                runs[label].append((hier[label], flat[label]))
    finally:
        net.close()
    return {
        label: (
            statistics.median(h for h, _ in pairs),
            statistics.median(f for _, f in pairs),
            statistics.median(h / f for h, f in pairs),
        )
        for label, pairs in runs.items()
    }


def bench(repeat: int, paired_times=None, have_torch: bool = False, rounds: int = 3) -> list:
    """Rows ``(name, hierarchical ms, flat ms, "flat", target)`` for ``scripts/bench.py``."""
    reason = netns_skip_reason()
    if reason is not None:
        print(f"hierarchical: skipped ({reason})", file=sys.stderr)
        return []
    return [
        (f"all_reduce {label} f32, 2 hosts x 2 ranks, hierarchical", hier, flat, "flat", f"< 1.0x ({ratio:.2f}x)")
        for label, (hier, flat, ratio) in measure(repeat, rounds).items()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=10, help="timed all_reduces per size (x4 below 16 MB)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating hierarchical/flat job pairs")
    args = parser.parse_args()
    for name, hier, flat, _, target in bench(args.repeat, rounds=args.rounds):
        print(f"{name:<52} {hier:10.3f} ms  flat {flat:10.3f} ms  ratio {hier / flat:5.2f}x  target {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
