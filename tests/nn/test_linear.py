"""Linear, Bilinear, Identity, Flatten, Unflatten and their functional forms (linear, bilinear,
one_hot): values and gradients against torch, float64 gradcheck, default initialisation bounds,
repr, and the errors for bad shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state, run_both

RNG = np.random.default_rng(3)


def _randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape", [(5, 4), (4,), (2, 3, 4), (0, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(torch, shape, bias):
    ours, theirs = nn.Linear(4, 3, bias=bias), torch.nn.Linear(4, 3, bias=bias)
    copy_state(ours, theirs, torch)
    run_both(ours, theirs, torch, _randn(*shape))


def test_linear_on_transposed_input(device):
    x = tensor.tensor(_randn(4, 6), device=device).T  # non-contiguous (6, 4)
    w = tensor.tensor(_randn(3, 4), device=device, requires_grad=True)
    b = tensor.tensor(_randn(3), device=device, requires_grad=True)
    out = F.linear(x, w, b)
    assert_close(out, x.cpu().numpy() @ w.detach().cpu().numpy().T + b.detach().cpu().numpy(), rtol=1e-5, atol=1e-5)
    out.sum().backward()
    assert_close(w.grad, np.ones((6, 3), np.float32).T @ x.cpu().numpy(), rtol=1e-5, atol=1e-5)
    assert_close(b.grad, np.full(3, 6.0, np.float32))


def test_linear_gradcheck_and_gradgradcheck():
    x = tensor.randn(3, 4, dtype=tensor.float64, requires_grad=True)
    w = tensor.randn(2, 4, dtype=tensor.float64, requires_grad=True)
    b = tensor.randn(2, dtype=tensor.float64, requires_grad=True)
    assert autograd.gradcheck(F.linear, (x, w, b))
    assert autograd.gradgradcheck(F.linear, (x, w, b))
    x3 = tensor.randn(2, 2, 4, dtype=tensor.float64, requires_grad=True)
    assert autograd.gradcheck(lambda a, c: F.linear(a, c), (x3, w))


def test_linear_default_init_bounds():
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform(a=sqrt(5)) gives 1/sqrt(fan_in) too
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert np.abs(b).max() <= bound and abs(b.mean()) < 0.1 * bound
    assert layer.weight.dtype is tensor.float32 and layer.weight.requires_grad


def test_linear_dtype_and_no_bias_registration():
    layer = nn.Linear(3, 2, bias=False, dtype=tensor.float64)
    assert layer.weight.dtype is tensor.float64
    assert layer.bias is None
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    assert "bias" in layer._parameters


@pytest.mark.parametrize("module_args, expected", [
    ((nn.Linear, 4, 3), "Linear(in_features=4, out_features=3, bias=True)"),
    ((nn.Linear, 4, 3, False), "Linear(in_features=4, out_features=3, bias=False)"),
    ((nn.Bilinear, 2, 3, 4), "Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True)"),
    ((nn.Identity,), "Identity()"),
    ((nn.Flatten,), "Flatten(start_dim=1, end_dim=-1)"),
    ((nn.Unflatten, 1, (2, 5)), "Unflatten(dim=1, unflattened_size=(2, 5))"),
])
def test_repr_matches_torch(torch, module_args, expected):
    cls, *args = module_args
    assert repr(cls(*args)) == expected
    assert repr(getattr(torch.nn, cls.__name__)(*args)) == expected


@pytest.mark.parametrize("lead", [(5,), (2, 3), ()])
def test_bilinear_matches_torch(torch, lead):
    ours, theirs = nn.Bilinear(3, 4, 2), torch.nn.Bilinear(3, 4, 2)
    copy_state(ours, theirs, torch)
    run_both(ours, theirs, torch, _randn(*lead, 3), _randn(*lead, 4), rtol=1e-4, atol=1e-5)


def test_bilinear_gradcheck_and_init_bounds():
    x1 = tensor.randn(2, 3, dtype=tensor.float64, requires_grad=True)
    x2 = tensor.randn(2, 4, dtype=tensor.float64, requires_grad=True)
    w = tensor.randn(5, 3, 4, dtype=tensor.float64, requires_grad=True)
    b = tensor.randn(5, dtype=tensor.float64, requires_grad=True)
    assert autograd.gradcheck(F.bilinear, (x1, x2, w, b))
    layer = nn.Bilinear(16, 4, 8)
    assert np.abs(layer.weight.detach().numpy()).max() <= 1 / math.sqrt(16)
    assert np.abs(layer.bias.detach().numpy()).max() <= 1 / math.sqrt(16)


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.linear(tensor.randn(2, 5), tensor.randn(3, 4)), RuntimeError,
     r"mat1 and mat2 shapes cannot be multiplied \(2x5 and 4x3\)"),
    (lambda: F.linear(tensor.randn(2, 4), tensor.randn(3, 4, dtype=tensor.float64)), RuntimeError,
     "same dtype"),
    (lambda: nn.Linear(4, 3)(tensor.randn(7)), RuntimeError, r"\(1x7 and 4x3\)"),
    (lambda: F.bilinear(tensor.randn(2, 3), tensor.randn(2, 5), tensor.randn(1, 3, 4)), RuntimeError,
     "input2 size does not match weight size: got 5 but expected 4"),
    (lambda: F.bilinear(tensor.randn(2, 3), tensor.randn(3, 4), tensor.randn(1, 3, 4)), RuntimeError,
     "batch dimensions do not match"),
    (lambda: nn.Unflatten(1, 5), TypeError, "unflattened_size must be tuple of ints"),
])
def test_bad_arguments_raise(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_identity_flatten_unflatten(device, torch):
    x = tensor.randn(2, 3, 4, 5, device=device)
    assert nn.Identity(54, unused=1)(x) is x
    ref = torch.from_numpy(x.cpu().numpy())
    for args in [(), (0,), (1, 2), (2, -1), (0, -1)]:
        assert_close(nn.Flatten(*args)(x), torch.nn.Flatten(*args)(ref).numpy())
    flat = tensor.randn(2, 12, device=device)
    out = nn.Unflatten(1, (3, 4))(flat)
    assert out.shape == (2, 3, 4)
    assert_close(out, flat.cpu().numpy().reshape(2, 3, 4))
    assert nn.Unflatten(-1, [2, 6])(flat).shape == (2, 2, 6)


@pytest.mark.parametrize("values, num_classes", [([0, 2, 1], -1), ([[1, 0], [3, 3]], 5), ([], 3), (2, 4)])
def test_one_hot_matches_torch(torch, values, num_classes):
    t = tensor.tensor(values, dtype=tensor.int64)
    ref = torch.nn.functional.one_hot(torch.tensor(values, dtype=torch.int64), num_classes)
    assert_close(F.one_hot(t, num_classes), ref.numpy())


@pytest.mark.parametrize("values, num_classes, message", [
    ([0, 3], 3, "Class values must be smaller than num_classes."),
    ([-1, 0], 3, "Class values must be non-negative."),
    ([], -1, "Can not infer total number of classes from empty tensor."),
])
def test_one_hot_errors(values, num_classes, message):
    with pytest.raises(RuntimeError, match=message):
        F.one_hot(tensor.tensor(values, dtype=tensor.int64), num_classes)
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(tensor.tensor([0.0, 1.0]))
