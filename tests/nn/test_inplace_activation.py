"""Every module and functional form that takes ``inplace=True`` (activations and dropouts): it
overwrites and returns its input, trains after a Linear layer and on a view with the values and
gradients torch gives (the same as the out-of-place form, for the random dropouts), and refuses
a leaf that requires grad with torch's error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state, to_torch

# Each case takes (nn, nn.functional, x), so that it runs unchanged on ours and on torch's.
DETERMINISTIC = {
    "ReLU": lambda nn, F, x: nn.ReLU(inplace=True)(x),
    "relu": lambda nn, F, x: F.relu(x, inplace=True),
    "relu_": lambda nn, F, x: F.relu_(x),
    "LeakyReLU": lambda nn, F, x: nn.LeakyReLU(0.2, inplace=True)(x),
    "leaky_relu": lambda nn, F, x: F.leaky_relu(x, 0.2, inplace=True),
    "leaky_relu_": lambda nn, F, x: F.leaky_relu_(x, 0.2),
    "SiLU": lambda nn, F, x: nn.SiLU(inplace=True)(x),
    "silu": lambda nn, F, x: F.silu(x, inplace=True),
    "Mish": lambda nn, F, x: nn.Mish(inplace=True)(x),
    "mish": lambda nn, F, x: F.mish(x, inplace=True),
    "ELU": lambda nn, F, x: nn.ELU(0.5, inplace=True)(x),
    "elu": lambda nn, F, x: F.elu(x, 0.5, inplace=True),
    "Hardtanh": lambda nn, F, x: nn.Hardtanh(-2.0, 3.0, inplace=True)(x),
    "hardtanh": lambda nn, F, x: F.hardtanh(x, -2.0, 3.0, inplace=True),
    "ReLU6": lambda nn, F, x: nn.ReLU6(inplace=True)(x),
    "relu6": lambda nn, F, x: F.relu6(x, inplace=True),
    "SELU": lambda nn, F, x: nn.SELU(inplace=True)(x),
    "selu": lambda nn, F, x: F.selu(x, inplace=True),
    "selu_": lambda nn, F, x: F.selu_(x),
    "CELU": lambda nn, F, x: nn.CELU(0.7, inplace=True)(x),
    "celu": lambda nn, F, x: F.celu(x, 0.7, inplace=True),
    "celu_": lambda nn, F, x: F.celu_(x, 0.7),
    "Hardswish": lambda nn, F, x: nn.Hardswish(inplace=True)(x),
    "hardswish": lambda nn, F, x: F.hardswish(x, inplace=True),
    "Hardsigmoid": lambda nn, F, x: nn.Hardsigmoid(inplace=True)(x),
    "hardsigmoid": lambda nn, F, x: F.hardsigmoid(x, inplace=True),
    "Threshold": lambda nn, F, x: nn.Threshold(0.5, -2.0, inplace=True)(x),
    "threshold": lambda nn, F, x: F.threshold(x, 0.5, -2.0, inplace=True),
    "threshold_": lambda nn, F, x: F.threshold_(x, 0.5, -2.0),
}

# The dropouts draw from different generators here and in torch: each case takes an ``inplace``
# flag too, and is compared with its out-of-place form under the same seed. (case, input shape)
RANDOM = {
    "Dropout": (lambda nn, F, x, inplace: nn.Dropout(0.4, inplace)(x), (6, 5)),
    "dropout": (lambda nn, F, x, inplace: F.dropout(x, 0.4, True, inplace), (6, 5)),
    "Dropout1d": (lambda nn, F, x, inplace: nn.Dropout1d(0.4, inplace)(x), (4, 6, 5)),
    "dropout1d": (lambda nn, F, x, inplace: F.dropout1d(x, 0.4, True, inplace), (6, 5)),
    "Dropout2d": (lambda nn, F, x, inplace: nn.Dropout2d(0.4, inplace)(x), (2, 6, 3, 5)),
    "dropout2d": (lambda nn, F, x, inplace: F.dropout2d(x, 0.4, True, inplace), (2, 6, 3, 5)),
    "Dropout3d": (lambda nn, F, x, inplace: nn.Dropout3d(0.4, inplace)(x), (2, 6, 2, 3, 5)),
    "dropout3d": (lambda nn, F, x, inplace: F.dropout3d(x, 0.4, True, inplace), (6, 2, 3, 5)),
    "alpha_dropout": (lambda nn, F, x, inplace: F.alpha_dropout(x, 0.4, True, inplace), (6, 5)),
    "rrelu": (lambda nn, F, x, inplace: F.rrelu(x, 0.1, 0.3, True, inplace), (6, 5)),
}
LEAF_MESSAGE = "a leaf Variable that requires grad is being used in an in-place operation"
RNG = np.random.default_rng(7)


def _inputs(torch, shape):
    """The same random input (wide enough to reach every clamp bound) as ours and torch's leaf."""
    x_np = (4 * RNG.standard_normal(shape)).astype(np.float32)
    return tensor.tensor(x_np, requires_grad=True), to_torch(torch, x_np, requires_grad=True)


def _linear_pair(torch, features):
    ours, theirs = nn.Linear(features, 5), torch.nn.Linear(features, 5)
    copy_state(ours, theirs, torch)
    return ours, theirs


def _backward_both(out, ref, torch):
    cot = RNG.standard_normal(tuple(ref.shape)).astype(np.float32)
    (out * tensor.tensor(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()


def _assert_same_grads(tensors, ref_tensors):
    for mine, theirs in zip(tensors, ref_tensors):
        assert_close(mine.grad, theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", DETERMINISTIC.values(), ids=DETERMINISTIC.keys())
def test_after_a_linear_layer_matches_torch(torch, case):
    (x, ref_x), (lin, ref_lin) = _inputs(torch, (3, 4)), _linear_pair(torch, 4)
    h, ref_h = lin(x), ref_lin(ref_x)
    out, ref = case(nn, F, h), case(torch.nn, torch.nn.functional, ref_h)
    assert out is h
    assert_close(out, ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    _backward_both(out, ref, torch)
    _assert_same_grads((x, lin.weight, lin.bias), (ref_x, ref_lin.weight, ref_lin.bias))


@pytest.mark.parametrize("case", DETERMINISTIC.values(), ids=DETERMINISTIC.keys())
def test_on_a_view_matches_torch(torch, case):
    (x, ref_x), (lin, ref_lin) = _inputs(torch, (3, 4)), _linear_pair(torch, 4)
    h, ref_h = lin(x), ref_lin(ref_x)
    case(nn, F, h[:, 1:4])
    case(torch.nn, torch.nn.functional, ref_h[:, 1:4])
    assert_close(h, ref_h.detach().numpy(), rtol=1e-5, atol=1e-5)
    _backward_both(h * h, ref_h * ref_h, torch)
    _assert_same_grads((x, lin.weight, lin.bias), (ref_x, ref_lin.weight, ref_lin.bias))


@pytest.mark.parametrize("case, shape", RANDOM.values(), ids=RANDOM.keys())
def test_dropout_after_a_linear_layer_matches_its_out_of_place_form(torch, case, shape):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout2d on (N, C, L), as torch, warns
        grads = []
        for inplace in (True, False):
            tensor.manual_seed(3)
            x = tensor.tensor(np.ones(shape[:-1] + (4,), np.float32), requires_grad=True)
            lin = nn.Linear(4, shape[-1])
            h = lin(x)
            out = case(nn, F, h, inplace)
            assert (out is h) is inplace
            (out * out).sum().backward()
            grads.append((out.detach(), x.grad, lin.weight.grad, lin.bias.grad))
    for mine, expected in zip(*grads):
        assert_close(mine, expected)


@pytest.mark.parametrize("case", DETERMINISTIC.values(), ids=DETERMINISTIC.keys())
def test_leaf_that_requires_grad_is_refused_as_torch(torch, case):
    x, ref_x = _inputs(torch, (3, 4))
    with pytest.raises(RuntimeError, match=LEAF_MESSAGE):
        case(torch.nn, torch.nn.functional, ref_x)
    with pytest.raises(RuntimeError, match=LEAF_MESSAGE):
        case(nn, F, x)
    with autograd.no_grad():  # not recording: allowed, as torch
        assert case(nn, F, x) is x


@pytest.mark.parametrize("case, shape", RANDOM.values(), ids=RANDOM.keys())
def test_dropout_on_a_leaf_that_requires_grad_is_refused_as_torch(torch, case, shape):
    x, ref_x = _inputs(torch, shape)
    with pytest.raises(RuntimeError, match=LEAF_MESSAGE):
        case(torch.nn, torch.nn.functional, ref_x, True)
    with pytest.raises(RuntimeError, match=LEAF_MESSAGE):
        case(nn, F, x, True)
    assert case(nn, F, x, False) is not x


def test_leaky_relu_and_elu_in_place_with_a_negative_slope_give_the_out_of_place_gradient():
    # PyTorch refuses these at backward (its in-place rules read the result); ours read a copy of
    # the input (Note [In-place activations]), so they give the out-of-place gradient.
    x = tensor.tensor([-2.0, -0.5, 0.5, 2.0], requires_grad=True)
    for fn in (lambda t, inplace: F.leaky_relu(t, -0.3, inplace), lambda t, inplace: F.elu(t, -0.7, inplace)):
        grads = []
        for inplace in (True, False):
            x.grad = None
            fn(x * 1, inplace).sum().backward()
            grads.append(x.grad)
        assert_close(grads[0], grads[1])
