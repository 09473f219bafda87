"""``autograd.engine.queue_callback``: run code at the end of the current backward pass
(after every leaf's gradient was accumulated), as DDP does to wait for its all-reduces."""

from __future__ import annotations

import pytest

import tensor
from autograd import engine


def _leaves(n=3):
    return [tensor.tensor([float(i + 1)], requires_grad=True) for i in range(n)]


def test_callback_runs_once_after_every_leaf_is_accumulated():
    leaves = _leaves()
    events = []

    def on_grad(leaf):
        events.append(("grad", float(leaf.grad.item())))
        if len(events) == 1:
            engine.queue_callback(lambda: events.append(("end", [lf.grad is not None for lf in leaves])))

    for leaf in leaves:
        leaf.register_post_accumulate_grad_hook(on_grad)
    (leaves[0] * leaves[1] * leaves[2]).sum().backward()
    assert [e[0] for e in events] == ["grad", "grad", "grad", "end"]
    assert events[-1] == ("end", [True, True, True])


def test_callback_queued_by_a_callback_runs_in_the_same_pass():
    x = tensor.tensor([2.0], requires_grad=True)
    order = []
    x.register_hook(lambda g: engine.queue_callback(lambda: (order.append(1), engine.queue_callback(
        lambda: order.append(2)))))
    (x * 3).sum().backward()
    assert order == [1, 2]


def test_nested_backward_in_a_hook_runs_its_own_callbacks_first():
    outer, inner = tensor.tensor([1.0], requires_grad=True), tensor.tensor([5.0], requires_grad=True)
    order = []

    def hook(leaf):
        engine.queue_callback(lambda: order.append("outer"))
        inner.register_post_accumulate_grad_hook(lambda _: engine.queue_callback(lambda: order.append("inner")))
        with tensor.enable_grad():  # backward runs its hooks with recording off
            (inner * 2).sum().backward()
        order.append("inner backward returned")

    outer.register_post_accumulate_grad_hook(hook)
    (outer * 2).sum().backward()
    assert order == ["inner", "inner backward returned", "outer"]


def test_queue_callback_outside_backward_is_an_error():
    with pytest.raises(RuntimeError, match="queue_callback can only be called during the backward pass"):
        engine.queue_callback(lambda: None)


def test_an_error_in_a_callback_propagates_and_the_next_backward_is_clean():
    x = tensor.tensor([1.0], requires_grad=True)

    def fail():
        raise ValueError("callback failed")

    handle = x.register_post_accumulate_grad_hook(lambda _: engine.queue_callback(fail))
    with pytest.raises(ValueError, match="callback failed"):
        (x * 2).sum().backward()
    handle.remove()
    ran = []
    x.register_post_accumulate_grad_hook(lambda _: engine.queue_callback(lambda: ran.append(True)))
    (x * 2).sum().backward()
    assert ran == [True]
    with pytest.raises(RuntimeError, match="only be called during the backward pass"):
        engine.queue_callback(lambda: None)
