"""The backward engine: Tensor.backward, autograd.backward and autograd.grad.

Covers scalar and explicit-gradient backward, PyTorch's error messages, retain_graph,
accumulation into .grad, backward(inputs=...), autograd.grad options, broadcasting and
dtype reduction of gradients, and graph bookkeeping (grad_fn names, is_leaf, detach).
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close


def _leaf(values, device, dtype=tensor.float32):
    return tensor.tensor(values, dtype=dtype, device=device, requires_grad=True)


# ------------------------------------------------------------ backward basics
def test_backward_on_scalar_output(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    (x * x).sum().backward()
    assert_close(x.grad, tensor.tensor([2.0, 4.0, 6.0]))


def test_backward_on_0d_tensor_leaf_grad_is_0d(device):
    x = _leaf(3.0, device)
    (x * x * x).backward()
    assert x.grad.shape == ()
    assert_close(x.grad, tensor.tensor(27.0))


def test_backward_with_explicit_gradient(device):
    x = _leaf([[1.0, 2.0], [3.0, 4.0]], device)
    y = x * 3
    y.backward(tensor.tensor([[1.0, 0.5], [0.0, -1.0]], device=device))
    assert_close(x.grad, tensor.tensor([[3.0, 1.5], [0.0, -3.0]]))


def test_backward_matches_torch_on_a_small_expression(device, torch):
    values = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
    x = _leaf(values, device, tensor.float64)
    w = _leaf([0.1, -0.2, 0.3], device, tensor.float64)
    ((x * w).tanh().sum(1) ** 2).mean().backward()
    tx = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64, requires_grad=True)
    ((tx * tw).tanh().sum(1) ** 2).mean().backward()
    assert_close(x.grad, tx.grad.numpy())
    assert_close(w.grad, tw.grad.numpy())


def test_backward_through_non_contiguous_input(device):
    base = _leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device)
    xt = base.t()
    assert not xt.is_contiguous()
    (xt * tensor.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device=device)).sum().backward()
    assert_close(base.grad, tensor.tensor([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]))


def test_backward_on_empty_tensor_gives_empty_grad(device):
    x = tensor.zeros(0, 3, device=device, requires_grad=True)
    (x * 2).sum().backward()
    assert_close(x.grad, np.zeros((0, 3), np.float32))


# ------------------------------------------------------------ errors (PyTorch's messages)
def test_non_scalar_backward_without_gradient_raises(device):
    y = _leaf([1.0, 2.0], device) * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()


def test_second_backward_without_retain_graph_raises(device):
    x = _leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_backward_on_tensor_without_grad_raises(device):
    y = tensor.ones(3, device=device).sum()
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        y.backward()


def test_gradient_of_wrong_shape_raises(device):
    y = _leaf([1.0, 2.0], device) * 2
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of \[3\]"):
        y.backward(tensor.ones(3, device=device))


def test_requires_grad_on_int_tensor_raises(device):
    with pytest.raises(
        RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"
    ):
        tensor.tensor([1, 2], device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        tensor.zeros(2, dtype=tensor.int64, device=device, requires_grad=True)


def test_empty_inputs_to_backward_raise(device):
    y = (_leaf([1.0], device) * 2).sum()
    with pytest.raises(RuntimeError, match="'inputs' argument to backward\\(\\) cannot be empty"):
        y.backward(inputs=[])


# ------------------------------------------------------------ retain_graph and accumulation
def test_retain_graph_allows_a_second_backward_and_grads_accumulate(device):
    x = _leaf([1.0, 2.0], device)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, tensor.tensor([4.0, 8.0]))


def test_grad_accumulates_across_two_separate_graphs(device):
    x = _leaf([1.0, -1.0], device)
    (x * 3).sum().backward()
    first = x.grad
    (x * x).sum().backward()
    assert_close(x.grad, tensor.tensor([5.0, 1.0]))
    assert x.grad is first, "accumulation is in place into the existing .grad tensor"


def test_grad_used_twice_in_graph_sums_both_paths(device):
    x = _leaf([2.0], device)
    y = x * x + x.exp() + x
    y.sum().backward()
    assert_close(x.grad, tensor.tensor([4.0 + float(np.exp(np.float32(2.0))) + 1.0]), rtol=1e-6)


def test_autograd_backward_function_with_several_outputs(device):
    x = _leaf([1.0, 2.0], device)
    a, b = (x * 2).sum(), (x * x).sum()
    autograd.backward([a, b])
    assert_close(x.grad, tensor.tensor([4.0, 6.0]))


# ------------------------------------------------------------ backward(inputs=...)
def test_backward_inputs_accumulates_only_into_the_given_leaves(device):
    x, w = _leaf([1.0, 2.0], device), _leaf([3.0, 4.0], device)
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None
    assert_close(w.grad, tensor.tensor([1.0, 2.0]))


def test_backward_inputs_accepts_a_single_tensor(device):
    x, w = _leaf([1.0, 2.0], device), _leaf([3.0, 4.0], device)
    (x * w).sum().backward(inputs=x)
    assert_close(x.grad, tensor.tensor([3.0, 4.0]))
    assert w.grad is None


# ------------------------------------------------------------ autograd.grad
def test_grad_returns_tuple_and_leaves_dot_grad_untouched(device):
    x = _leaf([1.0, 2.0, 3.0], device)
    (g,) = autograd.grad((x ** 2).sum(), x)
    assert_close(g, tensor.tensor([2.0, 4.0, 6.0]))
    assert x.grad is None
    assert not g.requires_grad


def test_grad_allow_unused(device):
    x, unused = _leaf([1.0], device), _leaf([5.0], device)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = autograd.grad(y, [x, unused], allow_unused=True)
    assert_close(gx, tensor.tensor([2.0]))
    assert gu is None


def test_grad_materialize_grads_gives_zeros_for_unused(device):
    x, unused = _leaf([1.0], device), _leaf([5.0, 6.0], device)
    _, gu = autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert_close(gu, tensor.zeros(2))


def test_grad_wrt_input_that_does_not_require_grad_raises(device):
    x = _leaf([1.0], device)
    c = tensor.tensor([1.0], device=device)
    with pytest.raises(
        RuntimeError, match=r"One of the differentiated Tensors \(input 1\) does not require grad"
    ):
        autograd.grad((x * c).sum(), [x, c])


def test_grad_wrt_non_leaf_intermediate(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 3
    y = (h * h).sum()
    gh, gx = autograd.grad(y, [h, x])
    assert_close(gh, tensor.tensor([6.0, 12.0]))
    assert_close(gx, tensor.tensor([18.0, 36.0]))


def test_grad_with_grad_outputs(device):
    x = _leaf([1.0, 2.0], device)
    (g,) = autograd.grad(x * x, x, grad_outputs=tensor.tensor([1.0, 10.0], device=device))
    assert_close(g, tensor.tensor([2.0, 40.0]))


# ------------------------------------------------------------ broadcasting and dtypes
BROADCAST_CASES = [
    # (shape of a, shape of b)
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (3, 1)),
    ((), (2, 3)),
    ((1,), (5,)),
]


@pytest.mark.parametrize(("shape_a", "shape_b"), BROADCAST_CASES)
def test_broadcasting_backward_reduces_grad_to_input_shape(device, torch, shape_a, shape_b):
    rng = np.random.default_rng(0)
    na, nb = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    a, b = _leaf(na, device, tensor.float64), _leaf(nb, device, tensor.float64)
    (a * b + a).sum().backward()
    ta = torch.tensor(na, requires_grad=True)
    tb = torch.tensor(nb, requires_grad=True)
    (ta * tb + ta).sum().backward()
    assert_close(a.grad, ta.grad.numpy())
    assert_close(b.grad, tb.grad.numpy())


MIXED_DTYPE_CASES = [
    (tensor.float32, tensor.float64),
    (tensor.float16, tensor.float32),
    (tensor.float64, tensor.float16),
]


@pytest.mark.parametrize(("dtype_a", "dtype_b"), MIXED_DTYPE_CASES)
def test_grad_dtype_matches_leaf_dtype_in_mixed_dtype_ops(device, dtype_a, dtype_b):
    a = _leaf([1.0, 2.0], device, dtype_a)
    b = _leaf([3.0, 4.0], device, dtype_b)
    (a * b).sum().backward()
    assert a.grad.dtype is dtype_a
    assert b.grad.dtype is dtype_b
    assert_close(a.grad, np.array([3.0, 4.0], dtype_a.numpy))
    assert_close(b.grad, np.array([1.0, 2.0], dtype_b.numpy))


def test_grad_through_int_tensor_operand_keeps_float_leaf_grad(device):
    x = _leaf([1.0, 2.0], device)
    k = tensor.tensor([3, 4], device=device)
    (x * k).sum().backward()
    assert_close(x.grad, tensor.tensor([3.0, 4.0]))


# ------------------------------------------------------------ graph bookkeeping
GRAD_FN_NAMES = [
    (lambda x: x * 2, "MulBackward0"),
    (lambda x: x + x, "AddBackward0"),
    (lambda x: x.sum(), "SumBackward0"),
    (lambda x: x.exp(), "ExpBackward0"),
    (lambda x: x.view(4), "ViewBackward0"),
]


@pytest.mark.parametrize(("fn", "name"), GRAD_FN_NAMES)
def test_grad_fn_names_follow_pytorch(device, fn, name):
    x = tensor.ones(2, 2, device=device, requires_grad=True)
    assert fn(x).grad_fn.name() == name


def test_is_leaf_and_requires_grad_propagation(device):
    x = _leaf([1.0], device)
    c = tensor.tensor([2.0], device=device)
    y = x * c
    assert x.is_leaf and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad
    assert not y.is_leaf and y.requires_grad and y.grad_fn is not None
    z = c * 2
    assert z.is_leaf and not z.requires_grad


def test_results_under_no_grad_are_leaves(device):
    x = _leaf([1.0], device)
    with tensor.no_grad():
        y = x * 2
    assert y.is_leaf and not y.requires_grad


def test_detach_shares_storage_and_has_no_history(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 2
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    assert d.data_ptr() == y.data_ptr()
    d[0] = 100.0
    assert y[0].item() == 100.0


def test_requires_grad_false_on_non_leaf_raises(device):
    y = _leaf([1.0], device) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


def test_retain_grad_keeps_non_leaf_grad(device):
    x = _leaf([1.0, 2.0], device)
    h = x * 3
    h.retain_grad()
    (h * h).sum().backward()
    assert_close(h.grad, tensor.tensor([6.0, 12.0]))
    other = x * 4
    (other * other).sum().backward()
    assert other.grad is None, "non-leaves without retain_grad keep no .grad"


def test_grad_argument_errors_as_torch():
    x = tensor.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        autograd.grad((x * 2).sum(), [])
    with pytest.raises(ValueError, match="allow_unused"):
        autograd.grad((x * 2).sum(), x, allow_unused=False, materialize_grads=True)


def test_casting_to_an_integer_dtype_ends_the_graph():
    x = tensor.tensor([1.5, 2.5], requires_grad=True)
    for y in (x.long(), x.int(), x.bool(), x.to(tensor.int64), x.type(tensor.int32)):
        assert not y.requires_grad and y.grad_fn is None
    assert x.double().requires_grad and x.to(tensor.complex64).requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x.long() * 2).sum().backward()


def test_grad_with_batched_seeds_matches_torch(torch):
    def run(lib, grad):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0], requires_grad=True)
        seeds = (lib.tensor([[1.0, 0.0], [0.5, 2.0], [0.0, 1.0]]), lib.tensor([[1.0], [2.0], [-1.0]]))
        return [g.tolist() for g in grad((a**2, b * a.sum()), (a, b), seeds, is_grads_batched=True)]

    assert run(tensor, autograd.grad) == run(torch, torch.autograd.grad)
    x = tensor.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="is_grads_batched"):
        autograd.grad(x * 2, x, tensor.tensor(1.0), is_grads_batched=True)


def test_gradient_of_a_real_tensor_made_complex_is_real(torch):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        lib.view_as_real(x.to(lib.complex64) * lib.tensor([1 + 2j, 3j])).sum().backward()
        return x.grad.dtype, x.grad.tolist()

    (ours_dtype, ours), (_, theirs) = run(tensor), run(torch)
    assert ours_dtype is tensor.float32 and ours == theirs


def test_grad_accepts_only_inputs_and_warns_when_false(torch):
    for mod in (torch, tensor):
        x = mod.ones(2, requires_grad=True)
        (g,) = mod.autograd.grad((x * 2).sum(), x, only_inputs=True)
        assert g.tolist() == [2.0, 2.0]
        with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
            mod.autograd.grad((x * 2).sum(), x, only_inputs=False)


def test_in_place_changes_through_data_leave_saved_tensors_valid(torch):
    """``.data`` has its own version counter, as PyTorch's: clipping weights through it between
    forward and backward must not fail the saved-tensor check."""
    grads = []
    for lib in (tensor, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (w * w).sum()
        w.data.clamp_(0, 1.5)
        y.backward()
        grads.append(w.grad.tolist())
        assert w._version == 0
    assert grads[0] == grads[1]
