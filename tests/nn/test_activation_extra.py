"""The extra activations (functional and layers) against torch: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.fn_oracle import check_fn

# values away from the kinks, where the one-sided derivatives differ
X = np.random.default_rng(0).uniform(-5, 5, (3, 4, 5))
X = np.where(np.abs(np.abs(X) - 3) < 0.05, X + 0.2, X)
X = np.where(np.abs(np.abs(X) - 0.5) < 0.05, X + 0.2, X)

CASES = [
    ("hardsigmoid", {}),
    ("hardswish", {}),
    ("glu", {"dim": 1}),
    ("glu", {"dim": 0}),
    ("celu", {"alpha": 0.7}),
    ("selu", {}),
    ("tanhshrink", {}),
    ("threshold", {"threshold": 0.3, "value": -2.0}),
    ("softshrink", {"lambd": 0.8}),
    ("hardshrink", {}),
    ("softmin", {"dim": 1}),
    ("rrelu", {"lower": 0.1, "upper": 0.3}),
]


@pytest.mark.parametrize("name, kwargs", CASES)
def test_functional_matches_torch(name, kwargs, torch):
    x = X[:2, :4] if name == "glu" else X
    check_fn(
        lambda t: getattr(F, name)(t, **kwargs), lambda t: getattr(torch.nn.functional, name)(t, **kwargs), torch, x
    )


@pytest.mark.parametrize("channels", [1, 4])
def test_prelu_matches_torch(channels, torch):
    ours, theirs = nn.PReLU(channels, init=0.1), torch.nn.PReLU(channels, init=0.1)
    x = tensor.tensor(X, dtype=tensor.float32, requires_grad=True)
    t = torch.tensor(X, dtype=torch.float32, requires_grad=True)
    out, ref = ours(x), theirs(t)
    assert_close(out, ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    assert_close(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(x.grad, t.grad.numpy())


@pytest.mark.parametrize(
    "name, args",
    [
        ("Hardswish", ()),
        ("Hardsigmoid", ()),
        ("GLU", ()),
        ("CELU", (0.5,)),
        ("SELU", ()),
        ("Tanhshrink", ()),
        ("Threshold", (0.1, 20.0)),
        ("Softshrink", (0.3,)),
        ("Hardshrink", (0.3,)),
        ("Softmin", (2,)),
        ("Softmax2d", ()),
    ],
)
def test_layers_match_torch(name, args, torch):
    x = X[..., :4]
    check_fn(getattr(nn, name)(*args), getattr(torch.nn, name)(*args), torch, x)


def test_rrelu_training_draws_slopes_in_range():
    x = tensor.full((1000,), -1.0)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    assert_close(nn.RReLU(0.1, 0.3).eval()(x), np.full(1000, -0.2, dtype="float32"))


def test_inplace_forms_write_into_the_input():
    for fn in (F.selu_, F.celu_, F.elu_, F.hardtanh_, F.rrelu_):
        x = tensor.tensor([-2.0, 2.0])
        assert fn(x) is x and x.tolist() != [-2.0, 2.0]
    x = tensor.tensor([-1.0, 2.0])
    assert F.threshold_(x, 0.0, 5.0) is x and x.tolist() == [5.0, 2.0]


def test_errors():
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension -1 is size 3"):
        F.glu(tensor.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(tensor.zeros(2, 3), tensor.zeros(2))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(tensor.zeros(2, 3))


@pytest.mark.parametrize("name, args", [("threshold", (0.0, -1.0)), ("softshrink", (0.5,)), ("hardshrink", (0.5,))])
def test_nan_stays_nan_and_passes_the_gradient_as_torch(name, args, torch):
    values = [float("nan"), -2.0, 0.2, 0.5, 2.0]
    x = tensor.tensor(values, requires_grad=True)
    out = getattr(F, name)(x, *args)
    out.sum().backward()
    ref_x = torch.tensor(values, requires_grad=True)
    ref = getattr(torch.nn.functional, name)(ref_x, *args)
    ref.sum().backward()
    assert_close(out, ref.detach().numpy())
    assert_close(x.grad, ref_x.grad.numpy())


@pytest.mark.parametrize("name", ["Hardswish", "Hardsigmoid", "SELU"])
def test_inplace_repr_matches_torch(name, torch):
    assert repr(getattr(nn, name)(inplace=True)) == repr(getattr(torch.nn, name)(inplace=True))
