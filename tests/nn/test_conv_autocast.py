"""Convolutions under CPU autocast (Note [Autocast convolution]): results and gradients against
torch's CPU autocast."""

from __future__ import annotations

import numpy as np

import nn.functional as F
import tensor


def test_conv_stack_matches_torch_autocast(torch):
    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((4, 3, 20, 20), dtype=np.float32),
        "w1": rng.standard_normal((8, 3, 3, 3), dtype=np.float32) * 0.3,
        "b1": rng.standard_normal(8, dtype=np.float32),
        "w2": rng.standard_normal((6, 4, 3, 3), dtype=np.float32) * 0.3,  # groups=2
        "b2": rng.standard_normal(6, dtype=np.float32),
    }

    def run(lib, functional):
        t = {k: lib.from_numpy(a.copy()).requires_grad_(k != "x") for k, a in arrays.items()}
        with lib.autocast("cpu", dtype=lib.bfloat16):
            hidden = functional.conv2d(t["x"], t["w1"], t["b1"], padding=1).relu()
            out = functional.conv2d(hidden, t["w2"], t["b2"], stride=2, groups=2)
        assert out.dtype is lib.bfloat16
        (out.float() ** 2).mean().backward()
        return out, {k: v.grad for k, v in t.items() if k != "x"}

    ours, our_grads = run(tensor, F)
    theirs, their_grads = run(torch, torch.nn.functional)
    np.testing.assert_allclose(ours.detach().float().numpy(), theirs.detach().float().numpy(), rtol=2e-2, atol=2e-2)
    for name, grad in our_grads.items():
        assert grad.dtype is tensor.float32, name
        expected = their_grads[name].numpy()
        np.testing.assert_allclose(grad.numpy(), expected, rtol=3e-2, atol=3e-2 * np.abs(expected).max(), err_msg=name)
