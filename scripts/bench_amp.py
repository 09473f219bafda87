"""Issue 16 workload: a CNN train step under autocast(bfloat16) + GradScaler vs the float32 step,
ours and torch's, on the CPU.

Used by ``scripts/bench.py --only amp``. The CNN is ``bench_nn``'s (two convs, max pooling, a
linear head) on a batch of 64 28x28 images; a step is forward (in the autocast region), cross
entropy, scaled backward, ``scaler.step`` (the on-device inf check, one sync) and ``update``,
with SGD and momentum. numpy has no bfloat16 GEMM, so every GEMM under bfloat16 autocast runs as
float32 sgemm: the linear layer's on bfloat16 operands widened by the backend seam, its product
rounded back (Note [Low-precision floats] in tensor/_dtype.py); each convolution on its input,
weight and bias rounded to bfloat16 once and kept in float32, its output rounded once, its
backward in float32 (Note [Autocast convolution] in nn/functional/conv.py).
"""

from __future__ import annotations

import numpy as np
from bench_nn import _cnn


def _step(lib, nn_mod, functional, amp: bool):
    lib.manual_seed(0)
    model = _cnn(lib, nn_mod)
    optimizer = (nn_mod.optim if hasattr(nn_mod, "optim") else lib.optim).SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = lib.amp.GradScaler("cpu", enabled=amp)
    rng = np.random.default_rng(0)
    x = lib.from_numpy(rng.standard_normal((64, 1, 28, 28), dtype=np.float32))
    y = lib.from_numpy(rng.integers(0, 10, 64))

    def step():
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=amp):
            loss = functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return step


def bench(repeat: int, paired_times, have_torch: bool) -> list:
    """Rows: our amp step vs our float32 step (target <= 1.3x), torch's likewise, ours vs torch."""
    import nn  # noqa: PLC0415 - the benchmark driver imports its groups lazily
    import nn.functional as F  # noqa: PLC0415
    import tensor  # noqa: PLC0415

    ours_amp, ours_fp32 = paired_times(_step(tensor, nn, F, True), _step(tensor, nn, F, False), repeat)
    rows = [
        ("CNN step, autocast(bf16)+GradScaler vs float32 (ms)", ours_amp * 1e3, ours_fp32 * 1e3, "ours-f32", "<= 1.3x")
    ]
    if have_torch:
        import torch  # noqa: PLC0415

        torch_amp, torch_fp32 = paired_times(
            _step(torch, torch.nn, torch.nn.functional, True),
            _step(torch, torch.nn, torch.nn.functional, False),
            repeat,
        )
        rows.append(
            (
                "torch CNN step, autocast(bf16)+GradScaler vs float32 (ms)",
                torch_amp * 1e3,
                torch_fp32 * 1e3,
                "torch-f32",
                "info",
            )
        )
        rows.append(("CNN step, autocast(bf16)+GradScaler (ms)", ours_amp * 1e3, torch_amp * 1e3, "torch", "info"))
    return rows
