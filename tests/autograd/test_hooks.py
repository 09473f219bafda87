"""Tensor hooks: register_hook on leaves and non-leaves, handle.remove(),
register_post_accumulate_grad_hook and retain_grad interplay."""

from __future__ import annotations

import pytest

import autograd
import tensor
from tests.helpers import assert_close


def _leaf(values, device):
    return tensor.tensor(values, device=device, requires_grad=True)


def test_leaf_hook_sees_grad_and_can_replace_it(device):
    x = _leaf([1.0, 2.0], device)
    seen = []

    def double(g):
        seen.append(g.detach().clone())
        return g * 2

    x.register_hook(double)
    (x * 3).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], tensor.tensor([3.0, 3.0]))
    assert_close(x.grad, tensor.tensor([6.0, 6.0]))


def test_leaf_hook_returning_none_keeps_grad(device):
    x = _leaf([1.0, 2.0], device)
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 3).sum().backward()
    assert calls == [1]
    assert_close(x.grad, tensor.tensor([3.0, 3.0]))


def test_non_leaf_hook_modifies_grad_flowing_upstream(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 2
    h.register_hook(lambda g: g * 10)
    (h * h).sum().backward()
    # d/dh = 2h = [4, 8], times 10 by the hook, times dh/dx = 2.
    assert_close(x.grad, tensor.tensor([80.0, 160.0]))


def test_hooks_run_in_registration_order_and_chain(device):
    x = _leaf([1.0], device)
    order = []
    x.register_hook(lambda g: order.append("first") or g + 1)
    x.register_hook(lambda g: order.append("second") or g * 3)
    (x * 1).sum().backward()
    assert order == ["first", "second"]
    assert_close(x.grad, tensor.tensor([6.0]))


def test_removed_hook_is_not_called(device):
    x = _leaf([1.0], device)
    calls = []
    handle = x.register_hook(lambda g: calls.append(1) or g * 100)
    handle.remove()
    handle.remove()  # idempotent
    (x * 2).sum().backward()
    assert calls == []
    assert_close(x.grad, tensor.tensor([2.0]))


def test_removed_non_leaf_hook_is_not_called(device):
    x = _leaf([1.0], device)
    h = x * 2
    handle = h.register_hook(lambda g: g * 100)
    handle.remove()
    h.sum().backward()
    assert_close(x.grad, tensor.tensor([2.0]))


def test_hook_on_tensor_without_grad_raises(device):
    with pytest.raises(
        RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"
    ):
        tensor.ones(2, device=device).register_hook(lambda g: g)


def test_hooks_also_run_for_autograd_grad(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 2
    h.register_hook(lambda g: g * 0.5)
    (gx,) = autograd.grad(h.sum(), x)
    assert_close(gx, tensor.tensor([1.0, 1.0]))


def test_retain_grad_sees_the_hooked_grad(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 2
    h.register_hook(lambda g: g * 10)
    h.retain_grad()
    h.sum().backward()
    # PyTorch: retain_grad registered after a hook sees the hook's result.
    assert_close(h.grad, tensor.tensor([10.0, 10.0]))


def test_retain_grad_on_leaf_is_a_no_op_and_int_tensor_raises(device):
    x = _leaf([1.0], device)
    x.retain_grad()
    (x * 2).sum().backward()
    assert_close(x.grad, tensor.tensor([2.0]))
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        tensor.ones(1, device=device).retain_grad()


# ------------------------------------------------------------ post-accumulate-grad hooks
def test_post_accumulate_grad_hook_sees_the_accumulated_grad(device):
    x = _leaf([1.0, 2.0], device)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad.detach().clone())))
    (x * 3).sum().backward()
    (x * 1).sum().backward()
    assert [flag for flag, _ in seen] == [True, True]
    assert_close(seen[0][1], tensor.tensor([3.0, 3.0]))
    assert_close(seen[1][1], tensor.tensor([4.0, 4.0]))


def test_post_accumulate_grad_hooks_fire_in_reverse_creation_order_for_a_chain(device):
    # An MLP-like chain: each layer's weight is used after the previous one's, so
    # gradients become ready last-layer-first (what overlapping all-reduce relies on).
    weights = [tensor.full((3, 3), 0.1 * (i + 1), device=device, requires_grad=True) for i in range(4)]
    order = []
    handles = [w.register_post_accumulate_grad_hook(lambda t, i=i: order.append(i))
               for i, w in enumerate(weights)]
    h = tensor.ones(2, 3, device=device)
    for w in weights:
        h = (h @ w).tanh()
    h.sum().backward()
    assert order == [3, 2, 1, 0]
    handles[2].remove()
    order.clear()
    h = tensor.ones(2, 3, device=device)
    for w in weights:
        h = (h @ w).tanh()
    h.sum().backward()
    assert order == [3, 1, 0]


def test_post_accumulate_grad_hook_errors(device):
    x = _leaf([1.0], device)
    with pytest.raises(
        RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"
    ):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(
        RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"
    ):
        tensor.ones(1, device=device).register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook_not_called_by_autograd_grad(device):
    x = _leaf([1.0], device)
    calls = []
    x.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    autograd.grad((x * 2).sum(), x)
    assert calls == []
    assert x.grad is None


def test_hook_and_retain_grad_on_second_output_of_a_multi_output_node(device):
    from tests.autograd.test_function import SplitHalves

    x = _leaf([1.0, 2.0, 3.0, 4.0], device)
    lo, hi = SplitHalves.apply(x)
    hi.register_hook(lambda g: g * 10)
    hi.retain_grad()
    lo.retain_grad()
    (lo * 2 + hi * 3).sum().backward()
    assert_close(x.grad, tensor.tensor([2.0, 2.0, 30.0, 30.0]))
    assert_close(hi.grad, tensor.tensor([30.0, 30.0]))
    assert_close(lo.grad, tensor.tensor([2.0, 2.0]))


def test_hook_handle_is_a_context_manager():
    x = tensor.ones(2, requires_grad=True)
    calls = []
    with x.register_hook(lambda g: calls.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()  # removed on leaving the block
    assert calls == [1]


def test_leaf_hook_runs_under_autograd_grad_as_torch(torch):
    for mod in (torch, tensor):
        w = mod.tensor([1.0, 2.0], requires_grad=True)
        calls = []
        w.register_hook(lambda g: calls.append(1) or g.clamp(max=1.0))
        (g,) = mod.autograd.grad((w * w * 3).sum(), w)
        assert calls == [1] and g.tolist() == [1.0, 1.0]
        w.grad = None
        (w * w * 3).sum().backward(inputs=[w])  # backward(inputs=) runs it once too
        assert calls == [1, 1] and w.grad.tolist() == [1.0, 1.0]


def test_retain_grad_then_inplace_retains_the_current_values_gradient(torch):
    def run(mod):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward()
        return y.grad.tolist()

    assert run(tensor) == run(torch) == [12.0, 24.0]


@pytest.mark.parametrize("hook, error, message", [
    (lambda g: g.float(), RuntimeError, "changed the type of value"),
    (lambda g: g[:1], RuntimeError, "changed the size of value"),
    (lambda g: 3.0, TypeError, "expected Variable, but hook returned 'float'"),
], ids=["dtype", "shape", "not-a-tensor"])
def test_hook_results_are_validated_as_torch(torch, hook, error, message):
    for mod in (torch, tensor):
        for leaf in (False, True):
            x = mod.ones(2, dtype=mod.float64, requires_grad=True)
            y = x if leaf else x * 2
            y.register_hook(hook)
            with pytest.raises(error, match=message):
                (y * 1).sum().backward()


def test_post_accumulate_grad_hook_must_return_none(torch):
    for mod in (torch, tensor):
        x = mod.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(0.5))
        with pytest.raises(RuntimeError, match="post accumulate grad hooks should return None"):
            (x * 2).sum().backward()
