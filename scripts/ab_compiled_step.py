"""Compiled vs eager train step of ``scripts/bench_nn.py`` ('mlp' or 'cnn') in ONE process, the two
steps interleaved, timed by CPU time (``time.process_time``): a ratio that a loaded machine
disturbs far less than wall-clock rows in separate processes. For A/B of two source trees, run it
once per tree, alternating, with ``--root`` naming the tree to import::

    .venv/bin/python scripts/ab_compiled_step.py cnn --steps 30 [--root /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def main() -> None:
    """Print the median step times (ms) and their ratio, compiled / eager."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=("mlp", "cnn"))
    parser.add_argument("--steps", type=int, default=30, help="timed steps of each (after 10 warm-up steps)")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    sys.path[:0] = [os.path.join(args.root, "scripts"), args.root]
    import bench_nn  # noqa: PLC0415 - from the tree --root names

    steps = {name: bench_nn.make_step(name, args.model) for name in ("ours", "ours-compiled")}
    for step in steps.values():
        for _ in range(10):
            step()
    times: dict = {name: [] for name in steps}
    for _ in range(args.steps):
        for name, step in steps.items():
            start = time.process_time()
            step()
            times[name].append(time.process_time() - start)
    eager, compiled = (statistics.median(times[name]) * 1e3 for name in ("ours", "ours-compiled"))
    load = os.getloadavg()[0]
    print(
        f"{args.model}: compiled {compiled:.2f} ms, eager {eager:.2f} ms CPU time, "
        f"ratio {compiled / eager:.3f} (load {load:.1f}, root {args.root})"
    )


if __name__ == "__main__":
    main()
