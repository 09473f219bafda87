"""Issue 14's training-step rows alone: the MLP and CNN train steps of ``scripts/bench.py
--only nn`` with the model under ``tensor.compile``, beside our eager step (target: at most
0.9x eager). Used by ``scripts/bench.py --only nn_compile``, which finishes in minutes where
the whole nn group (torch, the recurrent layers, peak memory) takes much longer.
"""

from __future__ import annotations

import numpy as np
from bench_nn import _mlp, compiled_row, make_step, median_step_ms


def _mlp_floor_row(repeat: int, paired_times) -> tuple:
    """The MLP step's floor under ``tensor.compile(model)``: its eight matmuls (the shapes and
    transposed views of the step's forward and backward, through the matmul both paths call)
    plus what runs outside the compiled model (``zero_grad``, the cross-entropy and its
    backward, the SGD-momentum update), against the whole eager step. A compiled step whose own
    elementwise work and bookkeeping were free would take this long."""
    import nn  # noqa: PLC0415
    import tensor  # noqa: PLC0415
    from nn import functional as F  # noqa: PLC0415
    from tensor import _threads  # noqa: PLC0415

    rng = np.random.default_rng(0)
    model = _mlp(tensor, nn)
    params = list(model.parameters())
    w1, w2, w3 = (p.detach().numpy() for p in params[::2])
    x, h1, h2 = (rng.standard_normal((128, n), dtype=np.float32) for n in (784, 512, 512))
    g3, g2, g1 = (rng.standard_normal((128, n), dtype=np.float32) for n in (10, 512, 512))
    grads = [tensor.from_numpy(np.zeros(p.shape, np.float32)) for p in params]
    logits = tensor.from_numpy(rng.standard_normal((128, 10), dtype=np.float32)).requires_grad_()
    y = tensor.from_numpy(rng.integers(0, 10, 128))
    opt = nn.optim.SGD(params, lr=0.01, momentum=0.9)
    matmul = _threads.matmul

    def floor():
        opt.zero_grad()
        for a, b in ((x, w1.T), (h1, w2.T), (h2, w3.T), (g3, w3), (g3.T, h2), (g2, w2), (g2.T, h1), (g1.T, x)):
            matmul(a, b)
        logits.grad = None
        F.cross_entropy(logits, y).backward()
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()

    ours, eager = paired_times(floor, make_step("ours", "mlp"), repeat)
    label = "MLP 784-512-512-10 b128: its 8 matmuls and the work outside the model vs our eager step (ms)"
    return (label, ours * 1e3, eager * 1e3, "eager", "floor of the <= 0.9x row")


def bench(repeat: int, paired_times, have_torch: bool):
    """The compiled-vs-eager train-step rows (eager and compiled processes alternate) and the
    MLP row's floor (in this process)."""
    rounds, steps = 6, max(repeat, 10)
    rows = [
        compiled_row(model_name, median_step_ms(("ours", "ours-compiled"), model_name, rounds, steps))
        for model_name in ("mlp", "cnn")
    ]
    return rows[:1] + [_mlp_floor_row(max(repeat, 30), paired_times)] + rows[1:]
