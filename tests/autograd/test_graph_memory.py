"""Memory a live recorded op holds (issue 19's long chains).

A live chain's per-op cost grows with the bytes each op keeps: Python's allocator gives an
emptied arena back to the OS, so every long chain faults its memory in afresh, and dropping it
touches memory that has left the caches (BENCHMARKS.md, issue 19, "the long chains, measured
like with like"). This bounds the allocator blocks a live ``y = y * c`` keeps, compiled or not.
"""

from __future__ import annotations

import sys
import weakref

import numpy as np
import pytest

import tensor

# Today 2.9 compiled, 3.9 in plain Python: the Node, its saved and next_fns tuples, and in plain
# Python its sequence number (a C integer compiled); not the input's array, which only c's
# gradient would read (9.6 when mul saved it), nor out_meta's tuples, shared per shape (6.7
# blocks before).
_MAX_BLOCKS_PER_OP = {True: 3.5, False: 4.5}


def test_live_recorded_op_keeps_few_allocator_blocks():
    x = tensor.ones(4, requires_grad=True)
    c = tensor.full((4,), 1.0001)
    y = x
    for _ in range(100):  # warm the dispatcher's caches
        y = y * c
    del y
    steps = 2000
    before = sys.getallocatedblocks()
    y = x
    for _ in range(steps):
        y = y * c
    per_op = (sys.getallocatedblocks() - before) / steps
    assert y.grad_fn is not None
    bound = _MAX_BLOCKS_PER_OP["autograd.graph" in tensor._accelerated()]
    assert per_op <= bound, f"a live recorded y * c keeps {per_op:.2f} allocator blocks"


@pytest.mark.parametrize("c_requires_grad", [False, True])
def test_mul_and_div_keep_an_input_only_for_the_gradient_that_reads_it(c_requires_grad):
    """As PyTorch's: ``y * c`` saves ``y`` only when ``c`` requires grad (its gradient alone reads
    it), and ``y / c`` the same; the gradients are right either way."""
    x = tensor.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = tensor.tensor([0.5, 4.0, -2.0], requires_grad=c_requires_grad)
    for op, grad_x, grad_c in (
        (lambda y: y * c, lambda y, cv: cv, lambda y, cv: y),
        (lambda y: y / c, lambda y, cv: 1 / cv, lambda y, cv: -y / cv**2),
    ):
        y = x * 3.0
        array = weakref.ref(y._data)
        y_values = y.detach().numpy().copy()
        out = op(y)
        del y
        assert (array() is None) is not c_requires_grad, "y's array kept only for c's gradient"
        x.grad = c.grad = None
        out.sum().backward()
        cv = c.detach().numpy()
        np.testing.assert_allclose(x.grad.numpy(), 3.0 * grad_x(y_values, cv), rtol=1e-6)
        if c_requires_grad:
            np.testing.assert_allclose(c.grad.numpy(), grad_c(y_values, cv), rtol=1e-6)
        else:
            assert c.grad is None
