"""Issue 14, dynamic sizes: how often a compiled function compiles as the batch size changes,
beside ``torch.compile``, and what a call at a new batch size costs.

Used by ``scripts/bench.py --only compile_dynamic``. The function is a small MLP block (matmul,
GELU, a row statistic broadcast back, reductions, a mean over the batch) called at batch sizes
3, 5, 7, 64, 9, 33. torch's count is dynamo's unique graphs with its ``eager`` backend (how
often it recompiles does not depend on the backend, and inductor would take minutes here).
"""

from __future__ import annotations

import time

import numpy as np

BATCHES = (3, 5, 7, 64, 9, 33)
FEATURES, HIDDEN = 64, 128


def _block(lib, F, w):
    def block(x):
        h = F.gelu(x @ w)
        return (h - h.amax(1, keepdim=True)).exp().sum(1) + x.mean()

    return block


def _inputs(lib, rng):
    return [lib.tensor(rng.standard_normal((b, FEATURES))) for b in BATCHES]


def _our_captures(dynamic) -> tuple[int, float]:
    import tensor  # noqa: PLC0415
    from nn import functional as F  # noqa: PLC0415

    rng = np.random.default_rng(0)
    fn = _block(tensor, F, tensor.tensor(rng.standard_normal((FEATURES, HIDDEN))))
    compiled = tensor.compile(fn, dynamic=dynamic, options={"cache_size_limit": 64})
    xs = _inputs(tensor, rng)
    compiled(xs[0])
    compiled(xs[1])
    compiled(xs[2])  # the first replay compiles the kernels
    start = time.perf_counter()
    for x in xs[3:]:
        compiled(x)
        compiled(x)  # a loop calls again at that size: the captured graph's kernels run
    return compiled.captures, (time.perf_counter() - start) / len(xs[3:])


def _torch_graphs() -> int:
    import torch  # noqa: PLC0415
    import torch._dynamo  # noqa: PLC0415
    from torch._dynamo.utils import counters  # noqa: PLC0415
    from torch.nn import functional as F  # noqa: PLC0415

    torch._dynamo.reset()
    counters.clear()
    rng = np.random.default_rng(0)
    fn = _block(torch, F, torch.tensor(rng.standard_normal((FEATURES, HIDDEN))))
    compiled = torch.compile(fn, backend="eager")
    for x in _inputs(torch, rng):
        compiled(x)
    return counters["stats"]["unique_graphs"]


def bench(repeat, paired_times, have_torch):
    """Rows: compiles over six batch sizes (ours vs torch.compile), and the time of the first two
    calls at a new batch size, dynamic (replays) vs dynamic=False (a capture, then a replay)."""
    ours, replay = _our_captures(None)
    static, capture = _our_captures(False)
    peer = _torch_graphs() if have_torch else None
    return [
        (f"compiles over batch sizes {BATCHES} (count)", ours, peer, "torch", "<= 1.0x"),
        ("compiles over the same, dynamic=False (count)", static, len(BATCHES), "sizes", "= 1.0x"),
        ("2 calls at a new batch size, dynamic vs static (ms)", replay * 1e3, capture * 1e3, "static", "< 1.0x"),
    ]
