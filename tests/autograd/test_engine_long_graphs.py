"""The backward engine on long graphs: a chain of 100,000 recorded ops runs backward and is
freed without Python recursion (a recursive walk would exceed the recursion limit set here,
and a recursive deallocation would crash the interpreter)."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close

STEPS = 100_000


@pytest.fixture
def low_recursion_limit():
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    yield
    sys.setrecursionlimit(previous)


def _chain(x, c, steps=STEPS):
    """``x * c ** steps`` as ``steps`` recorded ops, and a weak reference to the first node."""
    y = x * c
    first = weakref.ref(y.grad_fn)
    for _ in range(steps - 1):
        y = y * c
    return y, first


@pytest.mark.slow  # ~2-5 s: 100,000 ops forward and backward
@pytest.mark.usefixtures("low_recursion_limit")
def test_backward_through_a_chain_of_100k_ops_and_freeing_it():
    x = tensor.tensor([1.0, -2.0], dtype=tensor.float64, requires_grad=True)
    c = tensor.tensor([1.00001, 0.99999], dtype=tensor.float64, requires_grad=True)
    gc.disable()  # reference counting alone must free the graph
    try:
        y, first = _chain(x, c)
        y.sum().backward()
        assert first() is not None  # y still holds the chain
        del y
        assert first() is None
    finally:
        gc.enable()
    powers = np.array([1.00001, 0.99999]) ** STEPS
    assert_close(x.grad, tensor.tensor(powers, dtype=tensor.float64), rtol=1e-9, atol=0)
    # d/dc of x * c**n is n * x * c**(n-1)
    expected_c = STEPS * np.array([1.0, -2.0]) * np.array([1.00001, 0.99999]) ** (STEPS - 1)
    assert_close(c.grad, tensor.tensor(expected_c, dtype=tensor.float64), rtol=1e-9, atol=0)


@pytest.mark.usefixtures("low_recursion_limit")
def test_autograd_grad_through_a_long_chain_with_retain_graph():
    x = tensor.tensor([3.0], dtype=tensor.float64, requires_grad=True)
    y, _ = _chain(x, 1.0001, steps=5_000)
    (first,) = autograd.grad(y, x, tensor.ones_like(y), retain_graph=True)
    (second,) = autograd.grad(y, x, tensor.ones_like(y))
    assert_close(first, tensor.tensor([1.0001**5_000], dtype=tensor.float64), rtol=1e-9, atol=0)
    assert_close(second, first, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        autograd.grad(y, x, tensor.ones_like(y))
