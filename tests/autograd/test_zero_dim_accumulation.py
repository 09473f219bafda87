"""A 0-d tensor used twice: its two gradients are summed into a 0-d array, not a numpy scalar
(numpy returns a scalar for the sum of two 0-d arrays), so the backward pass can go on."""

from __future__ import annotations

import numpy as np

import tensor


def test_gradients_of_a_reused_scalar_accumulate_as_arrays():
    w = tensor.tensor([0.2, 0.4, 0.6, 0.8], dtype=tensor.float64, requires_grad=True)
    s = w.sum()
    n = s - (w * w).sum() / s  # s feeds two nodes: its gradient is accumulated
    (tensor.ones(2, dtype=tensor.float64) / n).sum().backward()
    total = 2.0
    sq = 1.2
    n_value = total - sq / total
    dn_dw = 1 - (2 * w.detach().numpy() * total - sq) / total**2
    np.testing.assert_allclose(w.grad.numpy(), -2 / n_value**2 * dn_dw)
