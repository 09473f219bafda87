"""Issue 14's training-step rows alone: the MLP and CNN train steps of ``scripts/bench.py
--only nn`` with the model under ``tensor.compile``, beside our eager step (target: at most
0.9x eager). Used by ``scripts/bench.py --only nn_compile``, which finishes in minutes where
the whole nn group (torch, the recurrent layers, peak memory) takes much longer.
"""

from __future__ import annotations

from bench_nn import compiled_row, median_step_ms


def bench(repeat: int, paired_times, have_torch: bool):
    """The compiled-vs-eager train-step rows; eager and compiled processes alternate."""
    rounds, steps = 6, max(repeat, 10)
    return [
        compiled_row(model_name, median_step_ms(("ours", "ours-compiled"), model_name, rounds, steps))
        for model_name in ("mlp", "cnn")
    ]
