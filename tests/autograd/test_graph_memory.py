"""Memory a live recorded op holds (issue 19's long chains).

A live chain's per-op cost grows with the bytes each op keeps: Python's allocator gives an
emptied arena back to the OS, so every long chain faults its memory in afresh, and dropping it
touches memory that has left the caches (BENCHMARKS.md, issue 19, "the long chains, measured
like with like"). This bounds the allocator blocks a live ``y = y * c`` keeps, compiled or not.
"""

from __future__ import annotations

import sys
import tracemalloc
import weakref

import numpy as np
import pytest

import tensor

# Today 2.0 blocks, 230 bytes compiled, 3.0 and 257 in plain Python: the Node (120 bytes
# compiled, 128 plain) and its one tuple of edges and saved inputs (104), and in plain Python
# its sequence number (a C integer compiled); not the input's array, which only c's gradient
# would read (9.6 blocks when mul saved it), nor out_meta's tuples, shared per shape (6.7
# blocks before), nor separate next_fns and saved tuples (2.9 blocks, 300 bytes compiled).
_MAX_BLOCKS_PER_OP = {True: 2.25, False: 3.25}
_MAX_BYTES_PER_OP = {True: 240, False: 270}


def _kept_per_live_op(count) -> float:
    """How much ``count()`` grows per op while a chain of live recorded ``y = y * c`` is made."""
    x = tensor.ones(4, requires_grad=True)
    c = tensor.full((4,), 1.0001)
    y = x
    # Counted from the 2,500th op on: by then the chain has emptied CPython's free list of tuples
    # (2,000 per size), whose tuples are neither new allocator blocks nor traced by tracemalloc.
    for _ in range(2500):
        y = y * c
    steps = 2000
    before = count()
    for _ in range(steps):
        y = y * c
    kept = (count() - before) / steps
    assert y.grad_fn is not None  # the chain is still alive here
    return kept


def test_live_recorded_op_keeps_few_allocator_blocks_and_bytes():
    compiled = "autograd.graph" in tensor._accelerated()
    blocks = _kept_per_live_op(sys.getallocatedblocks)
    assert blocks <= _MAX_BLOCKS_PER_OP[compiled], f"a live recorded y * c keeps {blocks:.2f} allocator blocks"
    tracemalloc.start()
    try:
        size = _kept_per_live_op(lambda: tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    assert size <= _MAX_BYTES_PER_OP[compiled], f"a live recorded y * c keeps {size:.2f} allocator bytes"


def test_node_fields_before_and_after_a_backward():
    """The edges (``next_fns``, ``next_edges``, ``needs_input_grad``) share one tuple with the saved
    inputs, and stay after a backward frees those; hooks, retained gradients and a custom
    Function's ctx live apart and still work."""
    x = tensor.tensor([1.0, 2.0], requires_grad=True)
    c = tensor.tensor([3.0, 4.0])
    y = x * 2.0
    z = y * c
    node, first = z.grad_fn, y.grad_fn
    for _ in range(2):  # before and after the backward
        assert node.next_fns == (first, None)
        assert node.next_edges == ((first, 0), None)
        assert node.needs_input_grad == [True, False]
        assert first.next_fns[0] is x and first.next_edges == ((x, 0), None)
        assert node.pre_hooks is None and node.retained is None and node.ctx is None
        if node.freed:
            break
        assert [t.tolist() for t in node.saved if t is not None] == [[3.0, 4.0]]
        z.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        node.saved  # noqa: B018 - the property raises
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 8.0])

    seen = []
    x.grad = None
    y = x * 2.0
    y.retain_grad()
    z = y * c
    handle = z.register_hook(lambda g: seen.append(g.tolist()) or g * 10)
    assert z.grad_fn.pre_hooks is not None and y.grad_fn.retained is not None
    z.sum().backward()
    assert seen == [[1.0, 1.0]]
    np.testing.assert_allclose(y.grad.numpy(), [30.0, 40.0])
    np.testing.assert_allclose(x.grad.numpy(), [60.0, 80.0])
    handle.remove()


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
