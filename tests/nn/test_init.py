"""nn.init: distributions checked by bounds and statistics (not exact values), gains and fans
against torch, reproducibility through ``generator=``, in-place on parameters (under no_grad),
orthogonality, truncation, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nn
import tensor
from nn import init

N = (300, 400)


def _param(*shape, dtype=tensor.float32):
    return nn.Parameter(tensor.empty(*shape, dtype=dtype))


@pytest.mark.parametrize("nonlinearity, param", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
    ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None), ("conv_transpose2d", None),
])
def test_calculate_gain_matches_torch(torch, nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(torch.nn.init.calculate_gain(nonlinearity, param))


@pytest.mark.parametrize("shape", [(3, 4), (8, 3, 5, 5), (2, 6, 7)])
def test_fan_in_and_fan_out_match_torch(torch, shape):
    assert init._calculate_fan_in_and_fan_out(tensor.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_uniform_and_normal_statistics():
    p = init.uniform_(_param(*N), -2.0, 3.0)
    data = p.detach().numpy()
    assert data.min() >= -2.0 and data.max() < 3.0 and abs(data.mean() - 0.5) < 0.03
    data = init.normal_(_param(*N), 1.5, 0.5).detach().numpy()
    assert abs(data.mean() - 1.5) < 0.01 and abs(data.std() - 0.5) < 0.01


@pytest.mark.parametrize("fn, kwargs, expected_std", [
    (init.xavier_uniform_, {"gain": 2.0}, 2.0 * math.sqrt(2.0 / (400 + 300))),
    (init.xavier_normal_, {}, math.sqrt(2.0 / (400 + 300))),
    (init.kaiming_uniform_, {}, math.sqrt(2.0 / (1 + 0.0)) / math.sqrt(400)),
    (init.kaiming_uniform_, {"a": math.sqrt(5)}, math.sqrt(1 / 3) / math.sqrt(400)),
    (init.kaiming_normal_, {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2.0) / math.sqrt(300)),
    (init.kaiming_normal_, {"a": 0.1, "nonlinearity": "leaky_relu"}, math.sqrt(2.0 / 1.01) / math.sqrt(400)),
    (init.trunc_normal_, {"std": 0.02}, 0.02),
])
def test_scaled_initialisers_have_the_expected_std(fn, kwargs, expected_std):
    data = fn(_param(*N), **kwargs).detach().numpy()
    assert abs(data.std() - expected_std) < 0.02 * expected_std
    assert abs(data.mean()) < 0.02 * expected_std * 3
    if fn in (init.xavier_uniform_, init.kaiming_uniform_):
        assert np.abs(data).max() <= expected_std * math.sqrt(3) * (1 + 1e-6)


def test_trunc_normal_stays_in_bounds():
    data = init.trunc_normal_(_param(1000, 100), mean=1.0, std=2.0, a=0.0, b=2.5).detach().numpy()
    assert data.min() >= 0.0 and data.max() <= 2.5
    # The truncated distribution's mean: mu + sigma * (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)).
    alpha, beta = -0.5, 0.75
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    Phi = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    assert abs(data.mean() - (1.0 + 2.0 * (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)))) < 0.01


@pytest.mark.parametrize("shape, gain", [((6, 6), 1.0), ((4, 9), 2.0), ((9, 4), 0.5), ((4, 2, 3), 1.0)])
def test_orthogonal_rows_or_columns_are_orthonormal(shape, gain):
    flat = init.orthogonal_(_param(*shape, dtype=tensor.float64), gain=gain).detach().numpy().reshape(shape[0], -1)
    small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
    np.testing.assert_allclose(small, gain ** 2 * np.eye(small.shape[0]), atol=1e-10)


def test_constant_zeros_ones_eye_dirac(torch):
    p = _param(3, 4)
    assert (init.constant_(p, 0.25).detach().numpy() == 0.25).all()
    assert (init.zeros_(p).detach().numpy() == 0).all()
    assert (init.ones_(p).detach().numpy() == 1).all()
    np.testing.assert_array_equal(init.eye_(p).detach().numpy(), np.eye(3, 4))
    w = _param(4, 2, 3, 3)
    ref = torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2)
    np.testing.assert_array_equal(init.dirac_(w, groups=2).detach().numpy(), ref.numpy())


def test_initialisers_work_on_parameters_and_keep_them_leaves():
    p = _param(5, 4)
    out = init.kaiming_uniform_(p)
    assert out is p and p.is_leaf and p.requires_grad and p.grad_fn is None


@pytest.mark.parametrize("fn", [
    lambda t, g: init.uniform_(t, generator=g), lambda t, g: init.normal_(t, generator=g),
    lambda t, g: init.xavier_uniform_(t, generator=g), lambda t, g: init.kaiming_normal_(t, generator=g),
    lambda t, g: init.orthogonal_(t, generator=g), lambda t, g: init.trunc_normal_(t, generator=g),
])
def test_generator_makes_draws_reproducible(fn):
    first = fn(tensor.empty(5, 6), tensor.Generator().manual_seed(7)).numpy()
    second = fn(tensor.empty(5, 6), tensor.Generator().manual_seed(7)).numpy()
    other = fn(tensor.empty(5, 6), tensor.Generator().manual_seed(8)).numpy()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, other)


def test_zero_element_kaiming_warns_and_does_nothing():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(tensor.empty(0, 3))


def test_float64_and_device(device):
    t = tensor.empty(20, 30, dtype=tensor.float64, device=device)
    init.xavier_normal_(t)
    assert t.dtype is tensor.float64 and t.device.type == device


@pytest.mark.parametrize("call, error, message", [
    (lambda: init.calculate_gain("swish"), ValueError, "Unsupported nonlinearity swish"),
    (lambda: init.calculate_gain("leaky_relu", "x"), ValueError, "negative_slope x not a valid number"),
    (lambda: init.xavier_uniform_(tensor.empty(5)), ValueError,
     "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"),
    (lambda: init.kaiming_uniform_(tensor.empty(3, 3), mode="fan_avg"), ValueError, "Mode fan_avg not supported"),
    (lambda: init.eye_(tensor.empty(2, 2, 2)), ValueError, "Only tensors with 2 dimensions are supported"),
    (lambda: init.orthogonal_(tensor.empty(3)), ValueError, "Only tensors with 2 or more dimensions are supported"),
    (lambda: init.dirac_(tensor.empty(3, 3)), ValueError, "Only tensors with 3, 4, or 5 dimensions are supported"),
    (lambda: init.trunc_normal_(tensor.empty(3), a=1.0, b=0.0), RuntimeError, "found from=1 > to=0"),  # as torch
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "name", ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
             "kaiming_normal", "orthogonal", "sparse"],
)
def test_the_old_spellings_warn_and_fill_as_torchs(torch, name):
    shape = (3, 4, 3) if name == "dirac" else (6, 4)
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(name, ())
    ours = tensor.empty(shape)
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        assert getattr(init, name)(ours, *args) is ours
    with pytest.warns(FutureWarning):
        getattr(torch.nn.init, name)(torch.empty(shape), *args)
    assert getattr(init, name).__name__ == name
    if name in ("constant", "eye", "dirac"):  # the deterministic ones: torch's values
        theirs = torch.empty(shape)
        with pytest.warns(FutureWarning):
            getattr(torch.nn.init, name)(theirs, *args)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("fill", [init.uniform_, init.normal_, init.trunc_normal_])
def test_initialisers_fill_a_0d_parameter(fill):
    p = nn.Parameter(tensor.full((), 100.0))
    assert fill(p) is p and p.shape == () and abs(float(p)) < 100


def test_uniform_and_normal_reject_bad_arguments():
    with pytest.raises(RuntimeError, match=r"uniform_ expects to return a \[from, to\) range, but found from=2 > to=1"):
        init.uniform_(tensor.empty(3), 2.0, 1.0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        init.normal_(tensor.empty(3), 0.0, -1.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_trunc_normal_low_precision_has_no_bound_outliers(dtype):
    t = init.trunc_normal_(tensor.empty(50000, dtype=getattr(tensor, dtype)), std=0.02)
    values = t.float().numpy()
    assert (np.abs(values) == 2).sum() == 0
    assert abs(values.std() - 0.02) < 0.002


def test_trunc_normal_far_tail_window_stays_inside():
    values = init.trunc_normal_(tensor.empty(200000), mean=5.0, a=-2.0, b=2.0).numpy()
    assert (values == -2).sum() == 0


def test_trunc_normal_argument_errors_like_torch():
    with pytest.raises(RuntimeError):
        init.trunc_normal_(tensor.empty(3), a=2, b=-2)
    with pytest.raises(ZeroDivisionError):
        init.trunc_normal_(tensor.empty(3), std=0)
    with pytest.raises(NotImplementedError):
        init.trunc_normal_(tensor.empty(3, dtype=tensor.int64))
    assert bool((init.trunc_normal_(tensor.empty(3), a=1, b=1) == 1).all())


def test_normal_on_complex_draws_both_parts():
    z = init.normal_(tensor.empty(100000, dtype=tensor.complex64)).numpy()
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
