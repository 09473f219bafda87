"""Recorded graphs and the cyclic garbage collector (Note [Graphs and the cyclic GC]).

A graph must be freed by reference counting alone: no cycles between nodes, outputs and
saved tensors, before or after backward. And a node keeps few containers the collector
has to track, so that a long live graph costs each collection little.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import autograd
import tensor
from autograd.function import Function
from autograd.graph import save_by_reference
from tests.helpers import assert_close


class _SavesOutput(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


def _chain(steps: int):
    """A graph mixing the recording paths: tensor and scalar operands, an op that saves its
    output, views, a reduction and a custom Function that saves its output."""
    x = tensor.ones(2, 3, requires_grad=True)
    c = tensor.full((2, 3), 0.5, requires_grad=True)
    y = x
    for _ in range(steps):
        y = (y * c * 0.5).exp().t().t()
        y = _SavesOutput.apply(y - 1.0)
    return x, c, y.sum()


@pytest.fixture
def no_gc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("backward", [False, True])
def test_recorded_graph_is_freed_without_the_cyclic_collector(no_gc, backward):
    x, c, out = _chain(20)
    node = weakref.ref(out.grad_fn)
    if backward:
        out.backward()
    del out
    assert node() is None  # freed by reference counting alone
    assert gc.collect() == 0
    assert x.grad is not None or not backward


def test_retained_graph_is_freed_without_the_cyclic_collector(no_gc):
    x, _, out = _chain(5)
    (grad,) = autograd.grad(out, x, retain_graph=True)
    out.backward()
    del out
    assert gc.collect() == 0
    assert_close(grad, x.grad)


def _tracked_per_live_op(step, ops: int = 300) -> float:
    """The objects the cyclic collector tracks per op of a live chain ``y = step(y)``, once
    full collections have untracked what they can."""
    y = tensor.ones(4, requires_grad=True)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(ops):
        y = step(y)
    gc.collect()
    gc.collect()  # a tuple is untracked only once the tuples inside it were
    tracked = len(gc.get_objects()) - before
    del y
    return tracked / ops


def test_a_live_graph_leaves_at_most_two_tracked_objects_per_op():
    # Note [Graphs and the cyclic GC]: the node and its one tuple of edges and saved inputs; not
    # the intermediate tensors, their version counters or the node's bookkeeping.
    c = tensor.full((4,), 0.5)
    for name, step, most in [
        ("y * c", lambda y: y * c, 2),
        ("y * 0.5", lambda y: y * 0.5, 2),
        ("y.exp()", lambda y: y.exp(), 3),  # and its saved output's tuple
        ("y.sum(0, keepdim=True)", lambda y: y.sum(0, keepdim=True), 2),
        # The mask needs no gradient: it is saved as itself, one more Tensor per op.
        ("where(y > 0, y, c)", lambda y: tensor.where(y > 0, y, c), 3),
    ]:
        per_op = _tracked_per_live_op(step)
        assert per_op <= most + 0.25, f"{name}: {per_op:.2f} tracked objects per op"


def test_a_tensor_saved_by_reference_is_read_at_backward_time():
    # FSDP swaps the arrays of its full parameters between forward and backward; a graph that
    # saved them by reference reads the array they hold when the derivative runs.
    for by_reference, expected in ((True, 2 * 5.0), (False, 2 * 3.0)):
        x = tensor.tensor([1.5], requires_grad=True)
        y = x * 2  # an intermediate: saved as its array unless marked
        if by_reference:
            save_by_reference(y)
        z = y * y
        y._data = np.array([5.0], dtype=y._data.dtype)
        (gy,) = autograd.grad(z.sum(), [y])
        assert gy.item() == expected, (by_reference, gy.item())


def test_a_compiled_live_graph_leaves_no_tracked_object_per_op():
    # Note [Compiled dispatch and graph]: the compiled Node, its edges and its saved inputs are
    # out of the collector's tracking, so a live chain costs a full collection nothing per op.
    if "autograd.graph" not in tensor._accelerated():
        pytest.skip("autograd.graph runs as plain Python (not built, or DISTRIB_PURE_PYTHON=1)")
    c = tensor.full((4,), 0.5)
    for name, step in [("y * c", lambda y: y * c), ("y * 0.5", lambda y: y * 0.5), ("y.exp()", lambda y: y.exp())]:
        per_op = _tracked_per_live_op(step)
        assert per_op <= 0.05, f"{name}: {per_op:.2f} tracked objects per op"


class _KeepsOutputInCtx(Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2
        ctx.out = y  # a cycle: y -> its node -> ctx -> y
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_cycles_through_hooks_retain_grad_and_ctx_are_collected():
    # An untracked node must not hide such a cycle from the collector: a node with hooks, a
    # retained gradient or a ctx stays (or becomes again) tracked.
    def hook_on_itself(x):
        y = x * 2 + 1
        y.register_hook(lambda g: g * y.shape[0])
        return y

    def retained(x):
        y = x.exp() * 3
        y.retain_grad()
        y.keep = y  # Tensor has a __dict__: any attribute may close the cycle
        return y

    def leaf_hook(x):
        y = x * 3
        x.register_hook(lambda g: g + y.sum())
        return y

    for name, make in [
        ("hook", hook_on_itself),
        ("retain_grad", retained),
        ("leaf hook", leaf_hook),
        ("ctx", lambda x: _KeepsOutputInCtx.apply(x * 1.5)),
    ]:
        x = tensor.ones(3, requires_grad=True)
        y = make(x)
        refs = weakref.ref(y), weakref.ref(y.grad_fn)
        del y, x
        gc.collect()
        assert refs[0]() is None and refs[1]() is None, f"{name}: the cycle was not collected"
