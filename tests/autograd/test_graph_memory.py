"""Memory a live recorded op holds (issue 19's long chains).

A live chain's per-op cost grows with the bytes each op keeps: Python's allocator gives an
emptied arena back to the OS, so every long chain faults its memory in afresh, and dropping it
touches memory that has left the caches (BENCHMARKS.md, issue 19, "the long chains, measured
like with like"). This bounds the allocator blocks a live ``y = y * c`` keeps, compiled or not.
"""

from __future__ import annotations

import sys

import tensor

# Today 10 (the Tensor and its attribute values, the ndarray with its shape/strides and data,
# the Node, its saved and next_fns tuples, out_meta's three tuples, the sequence number).
_MAX_BLOCKS_PER_OP = 10.5


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
    assert per_op <= _MAX_BLOCKS_PER_OP, f"a live recorded y * c keeps {per_op:.2f} allocator blocks"
