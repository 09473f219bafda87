"""Optimizer updates of large parameters are split into element blocks across the intra-op
threads (``nn.optim._update_helpers.for_blocks``): the result must be bitwise the same as one
thread's, for every update formula that takes that path."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor


def _train(make_opt, threads: int, steps: int = 3) -> list[np.ndarray]:
    before = tensor.get_num_threads()
    tensor.set_num_threads(threads)
    try:
        rng = np.random.default_rng(0)
        params = [nn.Parameter(tensor.from_numpy(rng.standard_normal((300, 300)).astype(np.float32))),
                  nn.Parameter(tensor.from_numpy(rng.standard_normal(7).astype(np.float32)))]
        opt = make_opt(params)
        for _ in range(steps):
            for p in params:
                p.grad = tensor.from_numpy(rng.standard_normal(p.shape).astype(np.float32))
            opt.step()
        return [p.detach().numpy().copy() for p in params]
    finally:
        tensor.set_num_threads(before)


@pytest.mark.parametrize("make_opt", [
    lambda ps: nn.optim.SGD(ps, lr=0.1),
    lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, maximize=True),
    lambda ps: nn.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.5),
    lambda ps: nn.optim.Adam(ps, lr=0.01, weight_decay=0.1),
    lambda ps: nn.optim.Adam(ps, lr=0.01, amsgrad=True, maximize=True),
    lambda ps: nn.optim.AdamW(ps, lr=0.01),
], ids=["sgd", "momentum-wd", "nesterov-maximize", "dampening", "adam-wd", "adam-amsgrad", "adamw"])
def test_a_blocked_update_equals_the_single_thread_one(make_opt):
    for split, whole in zip(_train(make_opt, 2), _train(make_opt, 1)):
        np.testing.assert_array_equal(split, whole)
