"""register_full_backward_hook / _pre_hook against torch: what the hooks see, replacing
gradients, removal, and inputs without gradients."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state

X = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")


def _record(lib, module, seen, replace=None):
    def hook(mod, grad_input, grad_output):
        seen.append(
            (
                "full",
                [
                    None if g is None else np.array(g.detach().numpy() if lib == "torch" else g.numpy())
                    for g in grad_input
                ],
                [np.array(g.detach().numpy() if lib == "torch" else g.numpy()) for g in grad_output],
            )
        )
        return replace(grad_input) if replace else None

    def pre_hook(mod, grad_output):
        seen.append(("pre", [np.array(g.detach().numpy() if lib == "torch" else g.numpy()) for g in grad_output]))
        return (grad_output[0] * 2,)

    return module.register_full_backward_hook(hook), module.register_full_backward_pre_hook(pre_hook)


@pytest.mark.parametrize("input_grad", [True, False])
def test_hooks_see_what_torch_hooks_see(input_grad, torch):
    ours, theirs = nn.Linear(4, 2), torch.nn.Linear(4, 2)
    copy_state(ours, theirs, torch)
    ours_seen, torch_seen = [], []
    _record("ours", ours, ours_seen, replace=lambda g: tuple(None if x is None else x * 3 for x in g))
    _record("torch", theirs, torch_seen, replace=lambda g: tuple(None if x is None else x * 3 for x in g))
    x = tensor.tensor(X, requires_grad=input_grad)
    t = torch.tensor(X, requires_grad=input_grad)
    (ours(x) ** 2).sum().backward()
    (theirs(t) ** 2).sum().backward()
    assert [s[0] for s in ours_seen] == [s[0] for s in torch_seen] == ["pre", "full"]
    for mine, theirs_seen in zip(ours_seen, torch_seen):
        for a, b in zip(mine[1:], theirs_seen[1:]):
            assert len(a) == len(b)
            for u, v in zip(a, b):
                assert (u is None) == (v is None)
                if u is not None:
                    assert_close(u, v, rtol=1e-5, atol=1e-6)
    if input_grad:
        assert_close(x.grad, t.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_removed_hooks_do_not_run():
    layer = nn.Linear(4, 2)
    calls = []
    handle = layer.register_full_backward_hook(lambda m, gi, go: calls.append(1))
    layer(tensor.tensor(X, requires_grad=True)).sum().backward()
    handle.remove()
    layer(tensor.tensor(X, requires_grad=True)).sum().backward()
    assert calls == [1]


def test_a_hook_returning_the_wrong_number_of_grads_raises():
    layer = nn.Linear(4, 2)
    layer.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input"):
        layer(tensor.tensor(X, requires_grad=True)).sum().backward()


def _backward_hook_order(lib, lib_nn):
    log = []
    m = lib_nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: log.append("hook"))
    m.register_full_backward_hook(lambda mod, gi, go: log.append("prepended hook"), prepend=True)
    m.register_full_backward_pre_hook(lambda mod, go: log.append("pre"))
    m.register_full_backward_pre_hook(lambda mod, go: log.append("prepended pre"), prepend=True)
    module_hooks = lib_nn.modules.module
    handles = [module_hooks.register_module_full_backward_hook(lambda mod, gi, go: log.append("global hook")),
               module_hooks.register_module_full_backward_pre_hook(lambda mod, go: log.append("global pre"))]
    m(lib.ones(1, 2, requires_grad=True)).sum().backward()
    for handle in handles:
        handle.remove()
    return log


def test_prepend_and_global_backward_hooks_match_torch(torch):
    assert _backward_hook_order(tensor, nn) == _backward_hook_order(torch, torch.nn)


class _TwoOutputs(nn.Module):
    def forward(self, a):
        return a * 2, a * 3


class _ListOutput(nn.Module):
    def forward(self, a):
        return [a * 2]


def test_unused_output_gets_none_grad_output():
    seen = []
    m = _TwoOutputs()
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(go))
    m(tensor.ones(2, requires_grad=True))[0].sum().backward()
    assert seen[0][0].tolist() == [1.0, 1.0] and seen[0][1] is None


def test_hooks_do_not_run_for_a_list_output():
    seen = []
    m = _ListOutput()
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(go))
    x = tensor.ones(2, requires_grad=True)
    with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of Tensors"):
        out = m(x)
    out[0].sum().backward()
    assert seen == [] and x.grad.tolist() == [2.0, 2.0]


def test_legacy_backward_hook_runs_as_a_full_hook_and_refuses_a_mix():
    seen = []
    relu = nn.ReLU()
    relu.register_backward_hook(lambda mod, gi, go: seen.append((len(gi), len(go))))
    with pytest.warns(FutureWarning, match="non-full backward hook"):
        out = relu(tensor.ones(2, requires_grad=True))
    out.sum().backward()
    assert seen == [(1, 1)]
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        relu.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        full = nn.ReLU()
        full.register_full_backward_hook(lambda *a: None)
        full.register_backward_hook(lambda *a: None)
