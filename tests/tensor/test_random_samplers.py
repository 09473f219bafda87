"""The distributions of ``multinomial`` and ``randperm``, which draw on the tensor's device
(issue 13: inverse CDF and an exponential race instead of numpy's ``choice``), and a
generator's state round trip, on every device."""

from __future__ import annotations

import numpy as np
import pytest

import tensor


def test_multinomial_with_replacement_follows_the_weights(device):
    tensor.manual_seed(0)
    w = tensor.tensor([[1.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 5.0]], device=device)
    draws = tensor.multinomial(w, 8000, replacement=True).cpu().numpy()
    for row, weights in zip(draws, w.cpu().numpy()):
        freq = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.03)


def test_multinomial_without_replacement_is_sequential_sampling(device):
    # P(first = i) = w_i / sum(w); P(second = j | first = i) = w_j / (sum(w) - w_i)
    tensor.manual_seed(1)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    pairs = tensor.multinomial(tensor.tensor(np.tile(w, (4000, 1)), device=device), 2).cpu().numpy()
    assert (pairs[:, 0] != pairs[:, 1]).all()
    np.testing.assert_allclose(np.bincount(pairs[:, 0], minlength=4) / len(pairs), w / w.sum(), atol=0.03)
    second_given_3 = pairs[pairs[:, 0] == 3, 1]
    np.testing.assert_allclose(np.bincount(second_given_3, minlength=4)[:3] / second_given_3.size,
                               w[:3] / w[:3].sum(), atol=0.05)


def test_randperm_is_uniform(device):
    tensor.manual_seed(2)
    firsts = np.array([tensor.randperm(4, device=device)[0].item() for _ in range(2000)])
    np.testing.assert_allclose(np.bincount(firsts, minlength=4) / firsts.size, np.full(4, 0.25), atol=0.04)


def test_a_generator_state_round_trips(device):
    g = tensor.Generator(device).manual_seed(5)
    tensor.rand(3, generator=g, device=device)
    state = g.get_state()
    assert state.device.type == "cpu" and state.dtype == tensor.uint8
    first = tensor.randn(6, generator=g, device=device).tolist()
    g.manual_seed(9)
    assert g.set_state(state) is g and g.initial_seed() == 5
    assert tensor.randn(6, generator=g, device=device).tolist() == first


@pytest.mark.parametrize("state", [tensor.zeros(4, dtype=tensor.uint8), tensor.tensor([1, 2, 10], dtype=tensor.uint8)])
def test_set_state_refuses_what_is_not_a_state(state):
    with pytest.raises(RuntimeError, match=r"set_state\(\): not a generator state"):
        tensor.Generator().set_state(state)
