"""tensor.random (torch.random): the seeding functions and fork_rng, on each device."""

from __future__ import annotations

import pytest

import tensor


def test_fork_rng_puts_the_states_back(device):
    tensor.manual_seed(0)
    with tensor.random.fork_rng(device_type="cuda" if device != "cpu" else None):
        inside = (tensor.rand(3).tolist(), tensor.rand(3, device=device).tolist())
    after = (tensor.rand(3).tolist(), tensor.rand(3, device=device).tolist())
    assert inside == after  # the block's draws happen again after it
    tensor.manual_seed(0)
    with tensor.random.fork_rng(enabled=False):
        tensor.rand(3)
    assert tensor.rand(3).tolist() != inside[0]  # disabled: the block's draws stay drawn


def test_names_and_errors():
    assert tensor.random.manual_seed is tensor.manual_seed and tensor.random.initial_seed() == tensor.initial_seed()
    with pytest.raises(RuntimeError, match="no generators for device type 'xla'"):
        with tensor.random.fork_rng(device_type="xla"):
            pass


def test_fork_rng_as_torch(torch):
    def story(lib):
        lib.manual_seed(5)
        with lib.random.fork_rng():
            lib.rand(2)
        return lib.random.initial_seed(), lib.random.get_rng_state().shape == lib.get_rng_state().shape

    assert story(tensor) == story(torch)
