"""Issue 14's training-step rows alone: the MLP and CNN train steps of ``scripts/bench.py
--only nn`` with the model and its loss under ``tensor.compile`` (Note [Compiled loss] in
``bench_nn.py``), and with the model alone compiled, beside our eager step (target: at most
0.9x eager), plus the MLP rows' floor. Used by ``scripts/bench.py --only nn_compile``, which
finishes in a minute or two where the whole nn group (torch, the recurrent layers, peak memory)
takes much longer. The steps take turns inside each of several processes (Note [Interleaved
compiled rows]).
"""

from __future__ import annotations

from bench_nn import compiled_rows


def bench(repeat: int, paired_times, have_torch: bool):
    """The compiled-vs-eager train-step rows and the MLP rows' floor."""
    rounds, steps = 6, max(repeat, 10)
    return compiled_rows("mlp", rounds, steps, floor=True) + compiled_rows("cnn", rounds, steps)
