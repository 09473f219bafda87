"""Recorded graphs and the cyclic garbage collector (Note [Graphs and the cyclic GC]).

A graph must be freed by reference counting alone: no cycles between nodes, outputs and
saved tensors, before or after backward. And a node keeps few containers the collector
has to track, so that a long live graph costs each collection little.
"""

from __future__ import annotations

import gc
import weakref

import pytest

import autograd
import tensor
from autograd.function import Function
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


def _tracked_containers(node) -> list:
    return [o for o in gc.get_referents(node)
            if gc.is_tracked(o) and isinstance(o, (tuple, list, dict, set))]


def test_a_node_keeps_at_most_three_tracked_containers():
    x = tensor.ones(4, requires_grad=True)
    c = tensor.full((4,), 0.5)
    y = x
    nodes = []
    for _ in range(10):
        y = y * c
        nodes.append(y.grad_fn)
        y = (y * 2.0).exp()
        nodes.append(y.grad_fn)
    gc.collect()  # untracks the tuples that hold only atomic values
    for node in nodes:
        assert not gc.is_tracked(node.next_nrs) and not gc.is_tracked(node._saved_versions)
        # next_fns, _saved, and out_meta until a later collection sees its inner tuple untracked
        assert len(_tracked_containers(node)) <= 3, _tracked_containers(node)
