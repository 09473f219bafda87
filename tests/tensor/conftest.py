"""Fixtures of the tensor tests."""

from __future__ import annotations

import pytest

import tensor


@pytest.fixture(scope="module")
def torch_one_thread():
    """torch (the oracle), limited to one intra-op thread while the module runs (None without
    torch). On the shared 2-core machine its OpenMP threads wait for each other: a small RNN's
    forward and backward took 20x longer with 2 threads at load average 9 (1.6 s against 0.08 s)."""
    try:
        import torch
    except ImportError:
        yield None
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield torch
    finally:
        torch.set_num_threads(threads)


@pytest.fixture
def two_threads():
    """Two intra-op threads while the test runs (the number before, after it)."""
    before = tensor.get_num_threads()
    tensor.set_num_threads(2)
    yield
    tensor.set_num_threads(before)
