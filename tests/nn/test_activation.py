"""Activations (modules and functional forms), ``tensor.erf``/``erfc`` and the fused softmax and
log_softmax: values and gradients against torch (and math.erf), float64 gradcheck and
gradgradcheck, non-contiguous / empty / 0-d inputs, repr, and errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(5)

# (our module, torch module name, constructor args, functional form taking (x))
MODULE_CASES = [
    (nn.ReLU, "ReLU", (), F.relu),
    (nn.LeakyReLU, "LeakyReLU", (0.2,), lambda x: F.leaky_relu(x, 0.2)),
    (nn.GELU, "GELU", (), F.gelu),
    (nn.GELU, "GELU", ("tanh",), lambda x: F.gelu(x, approximate="tanh")),
    (nn.SiLU, "SiLU", (), F.silu),
    (nn.Tanh, "Tanh", (), F.tanh),
    (nn.Sigmoid, "Sigmoid", (), F.sigmoid),
    (nn.Softmax, "Softmax", (1,), lambda x: F.softmax(x, 1)),
    (nn.LogSoftmax, "LogSoftmax", (-1,), lambda x: F.log_softmax(x, -1)),
    (nn.Softplus, "Softplus", (2.0, 3.0), lambda x: F.softplus(x, 2.0, 3.0)),
    (nn.ELU, "ELU", (0.5,), lambda x: F.elu(x, 0.5)),
    (nn.Hardtanh, "Hardtanh", (-0.5, 0.7), lambda x: F.hardtanh(x, -0.5, 0.7)),
    (nn.ReLU6, "ReLU6", (), F.relu6),
    (nn.Mish, "Mish", (), F.mish),
    (nn.LogSigmoid, "LogSigmoid", (), F.logsigmoid),
    (nn.Softsign, "Softsign", (), F.softsign),
]
IDS = [f"{c[1]}{c[2]}" for c in MODULE_CASES]


def _inputs(shape, dtype=np.float32):
    # Stay away from the kinks at 0 (and at the clamp bounds) where one-sided gradients differ.
    x = RNG.uniform(0.1, 4.0, shape) * RNG.choice([-1.0, 1.0], shape)
    return x.astype(dtype)


@pytest.mark.parametrize("ours, torch_name, args, fn", MODULE_CASES, ids=IDS)
@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4), (0, 3)])
def test_module_and_functional_match_torch(torch, ours, torch_name, args, fn, shape):
    x_np = _inputs(shape)
    x = tensor.tensor(x_np, requires_grad=True)
    ref_x = torch.from_numpy(x_np.copy()).requires_grad_(True)
    out, ref = ours(*args)(x), getattr(torch.nn, torch_name)(*args)(ref_x)
    assert_close(out, ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert_close(fn(x), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    cot = RNG.standard_normal(shape).astype(np.float32)
    (out * tensor.tensor(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()
    assert_close(x.grad, ref_x.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("ours, torch_name, args, fn", MODULE_CASES, ids=IDS)
def test_repr_matches_torch(torch, ours, torch_name, args, fn):
    assert repr(ours(*args)) == repr(getattr(torch.nn, torch_name)(*args))


@pytest.mark.parametrize("ours, torch_name, args, fn", MODULE_CASES, ids=IDS)
def test_functional_gradcheck(ours, torch_name, args, fn):
    x = tensor.tensor(_inputs((2, 3), np.float64), requires_grad=True)
    assert autograd.gradcheck(fn, (x,))


@pytest.mark.parametrize("fn", [F.gelu, lambda x: F.gelu(x, approximate="tanh"), F.silu, F.mish,
                                lambda x: F.leaky_relu(x, 0.2), lambda x: F.elu(x, 0.5),
                                lambda x: F.hardtanh(x, -2.0, 3.0),
                                lambda x: F.softmax(x, 0), lambda x: F.log_softmax(x, 1), tensor.erf,
                                tensor.erfc])
def test_gradgradcheck(fn):
    x = tensor.tensor(_inputs((2, 3), np.float64), requires_grad=True)
    assert autograd.gradgradcheck(fn, (x,))


def test_activations_on_transposed_and_0d_inputs(device, torch):
    x_np = _inputs((4, 3))
    x = tensor.tensor(x_np, device=device).T
    ref = torch.from_numpy(x_np).T
    assert_close(F.gelu(x), torch.nn.functional.gelu(ref).numpy(), rtol=1e-5, atol=1e-6)
    assert_close(F.softmax(x, 0), torch.softmax(ref, 0).numpy(), rtol=1e-5, atol=1e-6)
    assert_close(F.leaky_relu(x), torch.nn.functional.leaky_relu(ref).numpy())
    scalar = tensor.tensor(1.5, device=device)
    assert_close(F.softmax(scalar, 0), np.float32(1.0))
    assert_close(F.log_softmax(scalar, 0), np.float32(0.0))
    assert_close(F.gelu(scalar), torch.nn.functional.gelu(torch.tensor(1.5)).numpy())


def test_softmax_is_stable_for_large_logits(device):
    x = tensor.tensor([[1000.0, 1000.0, -1000.0], [-1e4, 0.0, 1e4]], device=device)
    assert_close(F.softmax(x, 1), np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], np.float32))
    assert_close(F.log_softmax(x, 1)[0], np.array([-math.log(2), -math.log(2), -2000.0 - math.log(2)], np.float32),
                 rtol=1e-6)


def test_softmax_dim_none_warns_and_uses_legacy_dim(torch):
    x_np = _inputs((2, 3))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = nn.Softmax()(tensor.tensor(x_np))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.Softmax()(torch.from_numpy(x_np))
    assert_close(out, ref.numpy())
    with pytest.warns(UserWarning, match="log_softmax"):
        assert F.log_softmax(tensor.tensor(_inputs((3,)))).shape == (3,)


def test_softmax_dtype_argument(torch):
    x_np = _inputs((2, 3))
    out = F.softmax(tensor.tensor(x_np), 1, dtype=tensor.float64)
    assert_close(out, torch.softmax(torch.from_numpy(x_np), 1, dtype=torch.float64).numpy())


def test_erf_matches_math_erf_to_float64_precision():
    x = np.concatenate([np.linspace(-7, 7, 20001), [0.0, -0.0, 1e-300, 27.9, 40.0]])
    expected = np.array([math.erf(v) for v in x])
    assert np.abs(tensor.erf(tensor.tensor(x)).numpy() - expected).max() < 1e-15
    expected_c = np.array([math.erfc(v) for v in x])
    rel = np.abs(tensor.erfc(tensor.tensor(x)).numpy() - expected_c) / np.maximum(expected_c, 1e-300)
    assert rel.max() < 1e-13


@pytest.mark.parametrize("dtype", [tensor.float32, tensor.float16])
def test_erf_low_precision_error_is_below_2e7(dtype):
    x = np.linspace(-6, 6, 100001).astype(dtype.numpy)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)])
    out = tensor.erf(tensor.tensor(x))
    assert out.dtype is dtype
    tolerance = 2e-7 if dtype is tensor.float32 else 1e-3  # float16 itself rounds at ~5e-4
    assert np.abs(out.numpy().astype(np.float64) - expected).max() < tolerance


def test_erf_special_values_and_integers(device):
    out = tensor.erf(tensor.tensor([float("nan"), float("inf"), -float("inf"), 0.0], device=device))
    assert_close(out, np.array([np.nan, 1.0, -1.0, 0.0], np.float32))
    assert tensor.erf(tensor.tensor([0, 1])).dtype is tensor.float32
    assert tensor.erf(tensor.empty(0, 3, device=device)).shape == (0, 3)
    for dtype in (tensor.float64, tensor.float32):  # 0-d inputs take both kernels
        scalar = tensor.tensor(0.5, dtype=dtype, device=device)
        assert abs(tensor.erf(scalar).item() - math.erf(0.5)) < 1e-7
        assert tensor.erf(scalar).shape == () and F.gelu(scalar).shape == ()


def test_inplace_forms_overwrite_the_input():
    x = tensor.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x
    assert_close(x, np.array([0.0, 2.0], np.float32))
    y = tensor.tensor([-1.0, 2.0])
    nn.LeakyReLU(0.5, inplace=True)(y)
    assert_close(y, np.array([-0.5, 2.0], np.float32))
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"


@pytest.mark.parametrize("name, args", [("leaky_relu", (0.3,)), ("elu", (0.5,)), ("hardtanh", (-1.0, 1.0)),
                                        ("relu6", ()), ("silu", ()), ("mish", ()), ("softplus", ()),
                                        ("softplus", (2.0, 3.0)), ("logsigmoid", ())])
def test_gradient_at_the_kinks_matches_torch(torch, name, args):
    # At 0 leaky_relu takes the slope; hardtanh and relu6 are flat at their bounds (unlike clamp);
    # softplus and logsigmoid have the derivative sigmoid(0) = 0.5 there; softplus(x, 2, 3) is
    # linear from x = 1.5.
    values = [-1.0, 0.0, 1.0, 1.5, 6.0, -100.0, 100.0, float("inf"), -float("inf")]
    x = tensor.tensor(values, requires_grad=True)
    getattr(F, name)(x, *args).sum().backward()
    ref = torch.tensor(values, requires_grad=True)
    getattr(torch.nn.functional, name)(ref, *args).sum().backward()
    assert_close(x.grad, ref.grad.numpy())


def test_mish_second_and_third_derivatives_at_zero_match_torch(torch):
    # mish's derivative rule rebuilds softplus; built as relu(x) + log1p(exp(-|x|)), its own
    # derivative at 0 came out 0, not sigmoid(0) = 0.5, and mish''(0) was halved.
    values = [-30.0, -1.0, 0.0, 0.5, 30.0]
    derivatives = []
    for lib, mish in ((tensor, F.mish), (torch, torch.nn.functional.mish)):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(mish(x).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = lib.autograd.grad(gg.sum(), x)
        derivatives.append([d.detach().numpy() for d in (g, gg, ggg)])
    for ours, theirs in zip(*derivatives):
        assert_close(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, args", [("hardtanh", (0.0, 1.0)), ("hardtanh", (0.5, 2.7)), ("relu6", ())])
@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_hardtanh_and_relu6_keep_an_integer_dtype_as_torch(torch, name, args, dtype):
    values = [1, 7, 0, 3] if dtype == "uint8" else [1, 7, -2, 3]
    out = getattr(F, name)(tensor.tensor(values, dtype=getattr(tensor, dtype)), *args)
    ref = getattr(torch.nn.functional, name)(torch.tensor(values, dtype=getattr(torch, dtype)), *args)
    assert out.dtype == getattr(tensor, dtype) and out.tolist() == ref.tolist()


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.hardtanh(tensor.ones(2), 1.0, 0.0), ValueError, "min_val cannot be greater than max_val"),
    (lambda: F.hardtanh(tensor.tensor([True])), RuntimeError, "Bool inputs not supported for hardtanh"),
    (lambda: F.hardtanh(tensor.tensor([1], dtype=tensor.uint8)), RuntimeError,
     "cannot do hardtanh on an unsigned type with negative limits"),
    (lambda: F.gelu(tensor.randn(3), approximate="fast"), RuntimeError, "approximate argument must be"),
    (lambda: nn.GELU("exact")(tensor.randn(3)), RuntimeError, "'exact'"),
    (lambda: F.softmax(tensor.randn(2, 3), 2), IndexError, "Dimension out of range"),
    (lambda: F.log_softmax(tensor.randn(2, 3), -3), IndexError, r"got -3"),
    (lambda: nn.Hardtanh(1.0, 0.0), ValueError, r"max_val \(0.0\) must be greater than min_val \(1.0\)"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


BFLOAT16_ACTIVATIONS = [
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}), ("elu", {}), ("selu", {}),
    ("celu", {}), ("hardtanh", {}), ("relu6", {}), ("leaky_relu", {}), ("hardsigmoid", {}), ("hardswish", {}),
    ("rrelu", {"training": False}), ("softmin", {"dim": -1}), ("softplus", {}),
]


@pytest.mark.parametrize("name, kwargs", BFLOAT16_ACTIVATIONS, ids=[f"{n}{k}" for n, k in BFLOAT16_ACTIVATIONS])
def test_bfloat16_activations_keep_bfloat16_like_torch(torch, name, kwargs):
    x = RNG.uniform(-4.0, 4.0, (3, 8)).astype(np.float32)
    ours_in = tensor.tensor(x).bfloat16().requires_grad_()
    theirs_in = torch.tensor(x).bfloat16().requires_grad_()
    ours = getattr(F, name)(ours_in, **kwargs)
    theirs = getattr(torch.nn.functional, name)(theirs_in, **kwargs)
    assert ours.dtype is tensor.bfloat16 and theirs.dtype == torch.bfloat16
    assert_close(ours.float(), theirs.float().detach().numpy(), rtol=1e-2, atol=1e-2)
    ours.float().sum().backward()
    theirs.float().sum().backward()
    assert ours_in.grad.dtype is tensor.bfloat16
    assert_close(ours_in.grad.float(), theirs_in.grad.float().numpy(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "hardsigmoid", "hardswish"])
def test_hard_activation_gradients_select_as_torch(name, torch):
    """At the bounds, at NaN, and with an inf gradient at a flat unit: PyTorch's backward selects."""
    nan, inf = float("nan"), float("inf")
    got = []
    for lib, fns in ((tensor, F), (torch, torch.nn.functional)):
        fn = getattr(fns, name)
        x = lib.tensor([-5.0, -3.0, -1.5, 0.0, 1.0, 2.9, 3.0, 5.0, 6.0, nan], requires_grad=True)
        y = fn(x)
        y.backward(lib.ones(10))
        z = lib.tensor([-5.0, 7.0, 0.5], requires_grad=True)
        fn(z).backward(lib.tensor([inf, inf, 1.0]))
        got.append([y.detach().numpy(), x.grad.numpy(), z.grad.numpy()])
    for ours, theirs in zip(*got):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_softplus_of_half_precision_is_computed_in_float32_as_torch(dtype, torch):
    """exp(15) overflows float16: softplus(15) was inf (torch 15)."""
    values = [-30.0, -3.0, 0.0, 3.0, 11.0, 15.0, 19.0, 25.0]
    got = []
    for lib, fns in ((tensor, F), (torch, torch.nn.functional)):
        x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
        y = fns.softplus(x)
        y.sum().backward()
        got.append((str(y.dtype).split(".")[-1], y.detach().float().numpy(), x.grad.float().numpy()))
    assert got[0][0] == got[1][0] == dtype
    np.testing.assert_array_equal(got[0][1], got[1][1])
    np.testing.assert_array_equal(got[0][2], got[1][2])
