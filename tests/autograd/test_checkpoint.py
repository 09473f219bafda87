"""Activation checkpointing: gradients equal to the plain run (float64, exactly), dropout draws
repeated in the recompute, peak activation memory cut >= 3x on 8 MLP blocks, and the nn helpers."""

from __future__ import annotations

import collections
import contextlib
import tracemalloc

import numpy as np
import pytest

import autograd
import nn
import tensor
from nn.utils.checkpoint import CheckpointWrapper, apply_activation_checkpointing, checkpoint_wrapper
from tests.helpers import assert_close


def _blocks(n: int = 8, width: int = 8, p: float = 0.0, device: str = "cpu", depth: int = 2) -> nn.Sequential:
    """``n`` blocks of ``depth`` linear layers (hidden width ``4 * width``), tanh and dropout between."""
    blocks = []
    for _ in range(n):
        widths = [width] + [4 * width] * (depth - 1) + [width]
        layers = []
        for k in range(depth):
            layers.append(nn.Linear(widths[k], widths[k + 1]))
            if k < depth - 1:
                layers += [nn.Tanh(), nn.Dropout(p)]
        blocks.append(nn.Sequential(*layers))
    return nn.Sequential(*blocks).to(device=device, dtype=tensor.float64)


def _grads(model, x, forward) -> list:
    model.zero_grad()
    x = x.detach().requires_grad_(True)
    tensor.manual_seed(7)
    forward(model, x).pow(2).sum().backward()
    return [x.grad] + [p.grad for p in model.parameters()]


def _plain(model, x):
    return model(x)


def _each_block(model, x):
    for block in model:
        x = autograd.checkpoint(block, x)
    return x


def _sequential(model, x):
    return autograd.checkpoint_sequential(model, 3, x)


def _equal(a, b) -> bool:
    return a.shape == b.shape and np.array_equal(a.cpu().numpy(), b.cpu().numpy())


def _assert_equal_grads(expected, got) -> None:
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert g is not None
        assert _equal(e, g)


@pytest.mark.parametrize("forward", [_each_block, _sequential], ids=["each_block", "sequential"])
def test_gradients_equal_plain_run_exactly(device, forward):
    model = _blocks(device=device)
    x = tensor.randn(5, 8, dtype=tensor.float64, device=device)
    _assert_equal_grads(_grads(model, x, _plain), _grads(model, x, forward))


def test_dropout_draws_the_same_mask_when_recomputed():
    model = _blocks(n=3, p=0.5)
    x = tensor.randn(6, 8, dtype=tensor.float64)
    expected = _grads(model, x, _plain)
    after_plain = tensor.rand(4)
    _assert_equal_grads(expected, _grads(model, x, _each_block))
    # The recompute leaves the generator where the forward left it.
    assert _equal(tensor.rand(4), after_plain)


def test_without_preserve_rng_state_the_recompute_draws_again():
    model = _blocks(n=1, p=0.5)
    x = tensor.randn(6, 8, dtype=tensor.float64)
    expected = _grads(model, x, _plain)
    got = _grads(model, x, lambda m, x: autograd.checkpoint(m, x, preserve_rng_state=False))
    assert not all(_equal(e, g) for e, g in zip(expected, got))


def _peak_bytes(model, x, forward) -> int:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        forward(model, x).sum().backward()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_peak_activation_memory_cut_at_least_3x_on_8_blocks():
    # The peak of forward + backward: the checkpointed run's is the blocks' boundaries plus one
    # block recomputed plus its backward's temporaries (Note [Checkpointing by recompute]).
    model = _blocks(n=8, width=32, depth=4)
    for p in model.parameters():  # gradients exist before: only activations are measured
        p.grad = tensor.zeros_like(p)
    x = tensor.randn(1024, 32, dtype=tensor.float64)
    plain = _peak_bytes(model, x, _plain)
    checkpointed = _peak_bytes(model, x, _each_block)
    assert plain >= 3 * checkpointed, (plain, checkpointed)


def test_parameters_get_gradients_when_no_input_requires_grad():
    model = _blocks(n=2)
    x = tensor.randn(3, 8, dtype=tensor.float64)
    model(x).sum().backward()
    expected = [p.grad for p in model.parameters()]
    model.zero_grad()
    _each_block(model, x).sum().backward()
    _assert_equal_grads(expected, [p.grad for p in model.parameters()])


def test_post_accumulate_grad_hooks_fire_once_per_parameter():
    model = _blocks(n=2)
    fired = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda p: fired.append(id(p)))
    _each_block(model, tensor.randn(3, 8, dtype=tensor.float64)).sum().backward()
    assert sorted(fired) == sorted(id(p) for p in model.parameters())


def test_autograd_grad_and_double_backward():
    x = tensor.randn(4, dtype=tensor.float64, requires_grad=True)
    (g,) = autograd.grad(autograd.checkpoint(lambda t: t.pow(3), x).sum(), x, create_graph=True)
    assert_close(g, 3 * x.detach() ** 2)
    g.sum().backward()
    assert_close(x.grad, 6 * x.detach())


def test_several_outputs_non_tensor_arguments_and_kwargs():
    w = tensor.randn(3, dtype=tensor.float64, requires_grad=True)

    def fn(a, scale, *, shift):
        return (a * w * scale + shift, "tag", (a * w).argmax())

    x = tensor.randn(3, dtype=tensor.float64)
    out, tag, index = autograd.checkpoint(fn, x, 2.0, shift=1.0)
    assert tag == "tag" and not index.requires_grad
    out.sum().backward()
    assert _equal(w.grad, 2.0 * x)


def test_runs_plainly_under_no_grad_and_without_anything_to_differentiate():
    x = tensor.randn(3)
    with autograd.no_grad():
        assert not autograd.checkpoint(lambda t: t * 2, x).requires_grad
    assert autograd.checkpoint(lambda t: t * 2, x).grad_fn is None


def test_refuses_reentrant_and_captured_non_leaves():
    x = tensor.randn(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match="use_reentrant=True"):
        autograd.checkpoint(lambda t: t, x, use_reentrant=True)
    hidden = x * 2
    with pytest.raises(RuntimeError, match="pass it to checkpoint"):
        autograd.checkpoint(lambda t: t * hidden, tensor.randn(3))


@pytest.mark.parametrize("segments", [0, 9])
def test_checkpoint_sequential_refuses_bad_segment_counts(segments):
    with pytest.raises(ValueError, match=f"got {segments}"):
        autograd.checkpoint_sequential(_blocks(), segments, tensor.randn(2, 8, dtype=tensor.float64))


def test_apply_activation_checkpointing_wraps_chosen_submodules_keeps_state_dict_keys():
    model = _blocks(n=3)
    keys = list(model.state_dict())
    x = tensor.randn(4, 8, dtype=tensor.float64)
    expected = _grads(model, x, _plain)
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, nn.Sequential) and len(m) == 4)
    assert all(isinstance(block, CheckpointWrapper) for block in model)
    assert list(model.state_dict()) == keys
    model.load_state_dict(model.state_dict())
    _assert_equal_grads(expected, _grads(model, x, _plain))


def test_checkpoint_wrapper_is_reachable_as_nn_utils_checkpoint():
    assert nn.utils.checkpoint.checkpoint is autograd.checkpoint
    wrapped = checkpoint_wrapper(nn.Linear(2, 3))
    assert wrapped.out_features == 3


def test_tree_outputs_and_non_leaves_inside_tree_arguments(torch):
    x = tensor.tensor([1.0, 2.0], dtype=tensor.float64, requires_grad=True)
    tx = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    point = collections.namedtuple("Point", "s c")
    for lib, leaf, run in ((tensor, x, autograd.checkpoint), (torch, tx, torch.utils.checkpoint.checkpoint)):

        def fn(pair, *, scale):
            return {"s": pair[0].sin() * scale["k"], "rest": point(pair[1].cos(), 3)}

        out = run(fn, (leaf, leaf * 2), scale={"k": leaf.exp()}, use_reentrant=False)
        assert out["rest"].c == 3
        (out["s"].sum() + out["rest"].s.sum()).backward()
    assert_close(x.grad, tx.grad.numpy())


def test_an_input_modified_in_place_after_the_forward_is_refused():
    x = tensor.tensor([1.0, 2.0], dtype=tensor.float64, requires_grad=True)
    hidden = x * 1
    y = autograd.checkpoint(lambda a: a.exp(), hidden, use_reentrant=False)
    hidden.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_torch_keyword_arguments_are_checkpoints_own():
    entered = []

    @contextlib.contextmanager
    def note(name):
        entered.append(name)
        yield

    x = tensor.tensor([1.0, 2.0], dtype=tensor.float64, requires_grad=True)
    y = autograd.checkpoint(
        lambda a: a.sin(), x, use_reentrant=False, context_fn=lambda: (note("forward"), note("recompute")),
        determinism_check="default", debug=False,
    )
    y.sum().backward()
    assert entered == ["forward", "recompute"]
    assert_close(x.grad, x.detach().cos())
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        autograd.checkpoint(lambda a: a, x, determinism_check="strict")


def test_a_recompute_with_other_shapes_is_refused_unless_unchecked():
    calls = []

    def growing(a):
        calls.append(1)
        return a[: len(calls)].sin()

    x = tensor.ones(3, dtype=tensor.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="different metadata"):
        autograd.checkpoint(growing, x).sum().backward()
    calls.clear()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):  # no check: the gradient's own error
        autograd.checkpoint(growing, x, determinism_check="none").sum().backward()


def test_a_second_backward_through_a_checkpoint_raises_torchs_error():
    x = tensor.ones(2, requires_grad=True)
    y = autograd.checkpoint(lambda a: (a * a).sin(), x, use_reentrant=False).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
