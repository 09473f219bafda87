"""Memory orders of a joint graph's values as eager code stores them (Note [Eager layouts]).

Note [Eager layouts]
    Eager convolution returns a view of its im2col matmul with the batch dim innermost
    (``nn/functional/conv.py``), and the ops after it keep that memory order: NumPy's
    elementwise ops allocate like their input (``order="K"``), pooling stores its results
    and gradients like its input (``tensor/ops/pool.py``), and the convolution's backward
    reshapes the gradient back to the matmul's layout for free. A fused kernel that wrote
    its output C-contiguous broke the chain: pooling's scan and scatter then walked memory
    across rows (2-4x slower) and the backward's kernels wrote transposed copies.

    The joint graph of a training step is run eagerly once when it is built (``aot.py``);
    ``record`` keeps the memory order of every dense value of that run in
    ``Graph.layouts``. The emitter then loops over a kernel's output in its eager order and
    allocates it with the eager strides (``out_order``), and runs a reduction's loops in its
    source's eager order, so a fused kernel reads and writes what its eager counterparts
    do, in the order they do. Orders are only a speed hint: a kernel indexes its inputs by
    their strides, so any layout at run time gives the same values. Graphs not run eagerly
    at build time (inference) have no layouts and keep C order.
"""

from __future__ import annotations

__all__ = ["memory_order", "record"]


def memory_order(array) -> tuple:
    """The axes of ``array`` from the largest stride to the smallest (ties in axis order)."""
    return tuple(sorted(range(array.ndim), key=lambda d: -abs(array.strides[d])))


def record(graph, env) -> None:
    """Store in ``graph.layouts`` the memory order of each dense value of ``env`` (node id ->
    Tensor, from an eager run of ``graph``): arrays of two or more dims that are C-contiguous
    once their axes are put in that order."""
    layouts = {}
    for node_id, value in enumerate(env):
        array = getattr(value, "_data", None)
        if getattr(array, "ndim", 0) < 2:
            continue
        order = memory_order(array)
        if array.transpose(order).flags.c_contiguous:
            layouts[node_id] = order
    graph.layouts = layouts
