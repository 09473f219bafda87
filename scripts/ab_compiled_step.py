"""Compiled vs eager train step of ``scripts/bench_nn.py`` ('mlp' or 'cnn') in ONE process, the two
steps interleaved, timed by CPU time (``time.process_time``): a ratio that a loaded machine
disturbs far less than wall-clock rows in separate processes. For A/B of two source trees, run it
once per tree, alternating, with ``--root`` naming the tree to import::

    .venv/bin/python scripts/ab_compiled_step.py cnn --steps 30 [--root /path/to/other/checkout]

'gelu' is the GELU-tanh MLP block of ``scripts/bench_compile_blocks.py`` (issue 14's <= 0.6x
row), timed by wall clock instead: its split regions keep both threads busy, so its CPU time
is not its duration.
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
    parser.add_argument("model", choices=("mlp", "cnn", "gelu"))
    parser.add_argument("--steps", type=int, default=30, help="timed steps of each (after 10 warm-up steps)")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = parser.parse_args()
    sys.path[:0] = [os.path.join(args.root, "scripts"), args.root]
    steps = _gelu_steps() if args.model == "gelu" else _train_steps(args.model)
    wall = args.model == "gelu"
    clock = time.perf_counter if wall else time.process_time
    for step in steps.values():
        for _ in range(10):
            step()
    times: dict = {name: [] for name in steps}
    for _ in range(args.steps):
        for name, step in steps.items():
            start = clock()
            step()
            times[name].append(clock() - start)
    eager, compiled = (statistics.median(times[name]) * 1e3 for name in ("ours", "ours-compiled"))
    load = os.getloadavg()[0]
    print(
        f"{args.model}: compiled {compiled:.2f} ms, eager {eager:.2f} ms {'wall' if wall else 'CPU'} time, "
        f"ratio {compiled / eager:.3f} (load {load:.1f}, root {args.root})"
    )


def _train_steps(model: str) -> dict:
    import bench_nn  # noqa: PLC0415 - from the tree --root names

    return {name: bench_nn.make_step(name, model) for name in ("ours", "ours-compiled")}


def _gelu_steps() -> dict:
    import bench_compile_blocks as blocks  # noqa: PLC0415 - from the tree --root names

    import tensor  # noqa: PLC0415
    from nn import functional as F  # noqa: PLC0415

    fn, x, params = blocks._mlp_block(tensor, F)
    return {"ours": blocks._step(fn, x, params), "ours-compiled": blocks._step(tensor.compile(fn), x, params)}


if __name__ == "__main__":
    main()
