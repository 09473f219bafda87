#!/usr/bin/env python3
"""Issue 20 benchmark: loading a PyTorch state dict, ours (``tensor.load``) vs ``torch.load``.

    .venv/bin/python scripts/bench_serialization.py [--size-mb 1024] [--repeat 5]
    .venv/bin/python scripts/bench.py --only serialization      # the same rows, in the big table

``bench(repeat)`` returns rows ``(workload, ours, peer, peer name, target)`` for scripts/bench.py.
The file is written once by ``torch.save``: a transformer-like state dict (``--size-mb`` of
float32 weights in 4 MiB matrices with small bias vectors, or ``BENCH_SERIALIZATION_MB``), in
the page cache for both readers. Each load is timed to the point where every tensor exists
(with ``mmap=True`` the bytes are only mapped, in both libraries). Ours and torch's alternate;
the median is reported. Saving is an informational row (ours writes and fsyncs atomically), and
so are saving and loading in our own format (against torch's own).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import tensor  # noqa: E402

try:
    import torch
except ImportError:  # the peer is optional
    torch = None

MATRIX = 1024 * 1024  # float32 elements per weight matrix (4 MiB)


def _state_dict(lib, size_mb: int) -> dict:
    layers = max(1, size_mb * 1024 * 1024 // (4 * (MATRIX + 1024)))
    state = {}
    for i in range(layers):
        state[f"layers.{i}.weight"] = lib.ones(1024, 1024)
        state[f"layers.{i}.bias"] = lib.zeros(1024)
    return state


def _median_pair(ours, peer, repeat: int) -> tuple[float, float | None]:
    ours()  # warm-up: page cache, imports
    if peer:
        peer()
    mine, theirs = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - start)
        if peer:
            start = time.perf_counter()
            peer()
            theirs.append(time.perf_counter() - start)
    return statistics.median(mine), statistics.median(theirs) if theirs else None


def bench(repeat: int, *_unused, size_mb: int | None = None) -> list:
    """Rows of this file (extra arguments, as scripts/bench.py passes to groups, are ignored)."""
    size_mb = size_mb or int(os.environ.get("BENCH_SERIALIZATION_MB", "1024"))
    repeat = min(repeat, 5)  # each run reads the whole file
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-serialization-") as tmp:
        path = os.path.join(tmp, "state.pt")
        if torch is not None:
            torch.save(_state_dict(torch, size_mb), path)
        else:
            tensor.save(_state_dict(tensor, size_mb), path, format="torch")
        label = f"{size_mb} MB state dict"
        peer_of = (lambda **kw: (lambda: torch.load(path, weights_only=True, **kw))) if torch else (lambda **kw: None)
        for mmap in (True, False):
            ours, peer = _median_pair(lambda m=mmap: tensor.load(path, mmap=m), peer_of(mmap=mmap), repeat)
            rows.append((f"load {label}, mmap={mmap} (ms)", ours * 1e3, peer * 1e3 if peer else None,
                         "torch", "<= 1.2x"))
        state = tensor.load(path)
        out = os.path.join(tmp, "ours.pt")
        theirs = torch.load(path, weights_only=True) if torch else None
        peer_save = (lambda: torch.save(theirs, out + ".torch")) if torch else None
        ours, peer = _median_pair(lambda: tensor.save(state, out, format="torch"), peer_save, min(repeat, 3))
        rows.append((f"save {label} in torch format (ms)", ours * 1e3, peer * 1e3 if peer else None,
                     "torch", "info"))
        # Our own format (Note [Views in checkpoints] in tensor/serialization.py) against torch's own.
        ours, peer = _median_pair(lambda: tensor.save(state, out), peer_save, min(repeat, 3))
        rows.append((f"save {label} in our format (ms)", ours * 1e3, peer * 1e3 if peer else None, "torch", "info"))
        peer_load = (lambda: torch.load(out + ".torch", weights_only=True)) if torch else None
        ours, peer = _median_pair(lambda: tensor.load(out), peer_load, min(repeat, 3))
        rows.append((f"load {label} in our format (ms)", ours * 1e3, peer * 1e3 if peer else None, "torch", "info"))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size-mb", type=int, default=None, help="state dict size (default 1024)")
    args = parser.parse_args(argv)
    for name, ours, peer, peer_name, target in bench(args.repeat, size_mb=args.size_mb):
        ratio = f"{ours / peer:.3f}" if peer else "n/a"
        peer_text = f"{peer:10.1f}" if peer is not None else "n/a"
        print(f"{name:<52} ours {ours:9.1f}  {peer_name} {peer_text:>10}  ratio {ratio:>6}  target {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
