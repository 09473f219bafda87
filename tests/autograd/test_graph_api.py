"""The Node API (``grad_fn.next_functions``, ``register_hook``, ``register_prehook``, ``metadata``)
and the hooks of ``autograd.graph``: saved-tensor hooks, multi-grad hooks, gradient edges."""

from __future__ import annotations

import pytest

import autograd
import tensor
from autograd.graph import (
    disable_saved_tensors_hooks,
    get_gradient_edge,
    increment_version,
    save_on_cpu,
    saved_tensors_hooks,
)


def test_next_functions_as_torch(torch):
    def run(mod):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * mod.ones(2)
        z = y * x
        (acc, nr), (none, none_nr) = y.grad_fn.next_functions
        assert acc.variable is x and acc.name() == "torch::autograd::AccumulateGrad" and acc.next_functions == ()
        assert (x * 3).grad_fn.next_functions[0][0] is acc  # one per leaf while it is held
        assert z.grad_fn.next_functions[0] == (y.grad_fn, 0)
        return nr, none, none_nr, y.grad_fn.metadata

    assert run(tensor) == run(torch) == (0, None, 0, {})


def test_node_prehook_takes_and_returns_a_tuple(torch):
    def run(mod):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        seen = []
        y.grad_fn.register_prehook(lambda go: seen.append(type(go).__name__) or (go[0] * 10,))
        y.sum().backward()
        return seen, x.grad.tolist()

    assert run(tensor) == run(torch) == (["tuple"], [20.0, 40.0])


def test_node_post_hook_sees_and_can_replace_grad_inputs(torch):
    def run(mod):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        w = mod.tensor([3.0, 4.0])
        y = x * w
        seen = []

        def hook(grad_inputs, grad_outputs):
            seen.append((grad_inputs[0].tolist(), grad_inputs[1], grad_outputs[0].tolist()))
            return (grad_inputs[0] * 2, None)

        handle = y.grad_fn.register_hook(hook)
        y.sum().backward(retain_graph=True)
        handle.remove()
        y.sum().backward()
        return seen, x.grad.tolist()

    assert run(tensor) == run(torch) == ([([3.0, 4.0], None, [1.0, 1.0])], [9.0, 12.0])


@pytest.mark.parametrize("kind", ["prehook", "hook"])
def test_node_hook_results_are_validated_as_torch(torch, kind):
    for mod in (torch, tensor):
        for result, error in (((None, None, None), RuntimeError), ([None], TypeError)):
            y = mod.ones(2, requires_grad=True) * mod.ones(2, requires_grad=True)
            if kind == "prehook":
                y.grad_fn.register_prehook(lambda go, result=result: result)
            else:
                y.grad_fn.register_hook(lambda gi, go, result=result: result)
            with pytest.raises(error):
                y.sum().backward()


def test_saved_tensors_hooks_pack_and_unpack_what_backward_reads(torch):
    def run(mod):
        x = mod.tensor([1.0, 2.0], requires_grad=True)
        log = []

        def pack(t):
            log.append("pack")
            return t.detach() * 1

        def unpack(t):
            log.append("unpack")
            return t

        with mod.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = x * 2
            z = (y * y).exp()
        packs = log.count("pack")
        z.sum().backward()
        return x.grad.tolist(), packs, log.count("unpack") == packs

    ours, theirs = run(tensor), run(torch)
    assert ours[0] == pytest.approx(theirs[0]) and ours[2] and theirs[2]
    assert ours[1] >= 2  # y (twice, or once) and exp's output


def test_saved_tensors_hooks_keep_double_backward_and_version_checks():
    x = tensor.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        h = x * 1
        y = (h * h * h).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    (gg,) = autograd.grad(g.sum(), x)
    assert g.tolist() == [3.0, 12.0] and gg.tolist() == [6.0, 12.0]
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = (h * h).sum()
    increment_version(h)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_unpack_hook_must_return_a_tensor(torch):
    for mod in (torch, tensor):
        x = mod.ones(2, requires_grad=True)
        with mod.autograd.graph.saved_tensors_hooks(lambda t: 3, lambda t: 4):
            y = x * x
        with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
            y.sum().backward()


def test_save_on_cpu_and_disable_saved_tensors_hooks(torch):
    x = tensor.tensor([1.0, 2.0], requires_grad=True)
    with save_on_cpu():
        y = (x * x).exp().sum()
    y.backward()
    assert x.grad.tolist() == pytest.approx([2 * 2.718281828, 4 * 54.59815])
    for mod in (torch, tensor):
        graph = mod.autograd.graph
        with graph.disable_saved_tensors_hooks("not here"):
            with pytest.raises(RuntimeError, match="not here"), graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            with pytest.raises(RuntimeError, match="not here"), graph.disable_saved_tensors_hooks("not here"):
                pass
    with disable_saved_tensors_hooks("x"):
        assert ((x * x).sum() * 1).requires_grad  # recording itself is not affected


def test_register_multi_grad_hook_as_torch(torch):
    def run(mod):
        a = mod.ones(2, requires_grad=True)
        b = mod.ones(2, requires_grad=True)
        seen = []
        handle = mod.autograd.graph.register_multi_grad_hook(
            (a, b), lambda grads: seen.append([None if g is None else g.tolist() for g in grads]))
        (a * 2).sum().backward()
        (a * 2 + b).sum().backward()
        handle.remove()
        (a * 2 + b).sum().backward()
        any_seen = []
        mod.autograd.graph.register_multi_grad_hook((a, b), lambda g: any_seen.append(g.tolist()), mode="any")
        (a * 2 + b * 2).sum().backward()
        with pytest.raises(ValueError, match="mode"):
            mod.autograd.graph.register_multi_grad_hook((a, b), print, mode="some")
        return seen, any_seen

    assert run(tensor) == run(torch) == ([[[2.0, 2.0], None], [[2.0, 2.0], [1.0, 1.0]]], [[2.0, 2.0]])


def test_get_gradient_edge(torch):
    x = tensor.ones(2, requires_grad=True)
    y = x * 2
    assert get_gradient_edge(y) == (y.grad_fn, 0, None)
    assert get_gradient_edge(x).node.variable is x
    for mod in (torch, tensor):
        with pytest.raises(RuntimeError, match="does not require gradients"):
            mod.autograd.graph.get_gradient_edge(mod.ones(2))
