"""RMSNorm, InstanceNorm1d-3d and LocalResponseNorm against torch: values, gradients, running
statistics."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.fn_oracle import check_fn
from tests.nn.oracle import copy_state, run_both

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("shape, normalized, eps", [((3, 4, 5), (5,), None), ((2, 3, 4), (3, 4), 1e-3)])
def test_rms_norm_matches_torch(shape, normalized, eps, torch):
    weight = RNG.standard_normal(normalized)
    check_fn(
        lambda x, w: F.rms_norm(x, normalized, w, eps),
        lambda x, w: torch.nn.functional.rms_norm(x, normalized, w, eps),
        torch,
        RNG.standard_normal(shape),
        weight,
    )
    ours, theirs = nn.RMSNorm(normalized, eps), torch.nn.RMSNorm(normalized, eps)
    run_both(ours, theirs, torch, RNG.standard_normal(shape).astype("float32"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name, shape",
    [
        ("InstanceNorm1d", (2, 3, 6)),
        ("InstanceNorm1d", (3, 6)),
        ("InstanceNorm2d", (2, 3, 4, 5)),
        ("InstanceNorm3d", (2, 3, 2, 3, 4)),
    ],
)
@pytest.mark.parametrize("options", [{}, {"affine": True, "track_running_stats": True, "momentum": 0.3}])
def test_instance_norm_matches_torch(name, shape, options, torch):
    ours, theirs = getattr(nn, name)(3, **options), getattr(torch.nn, name)(3, **options)
    copy_state(ours, theirs, torch)
    x = RNG.standard_normal(shape).astype("float32")
    run_both(ours, theirs, torch, x, rtol=1e-4, atol=1e-5)
    for key, value in theirs.state_dict().items():
        assert_close(ours.state_dict()[key], value.numpy(), rtol=1e-5, atol=1e-6)
    ours.eval()
    theirs.eval()
    assert_close(ours(tensor.tensor(x)), theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape, size", [((2, 6, 5), 3), ((2, 5, 3, 4), 2), ((1, 4, 2, 3, 2), 5)])
def test_local_response_norm_matches_torch(shape, size, torch):
    check_fn(
        nn.LocalResponseNorm(size, alpha=0.1, beta=0.6, k=2.0),
        torch.nn.LocalResponseNorm(size, alpha=0.1, beta=0.6, k=2.0),
        torch,
        RNG.standard_normal(shape),
    )


def test_errors():
    with pytest.raises(RuntimeError, match="expected input with shape"):
        F.rms_norm(tensor.zeros(2, 3), (4,))
    with pytest.raises(ValueError, match="expected 4D or 5D input"):
        nn.InstanceNorm3d(3)(tensor.zeros(2, 3))
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        F.local_response_norm(tensor.zeros(2, 3), 2)


@pytest.mark.parametrize("make", [lambda L: L.InstanceNorm1d(3, affine=True, bias=False),
                                  lambda L: L.SyncBatchNorm(3, bias=False)], ids=["InstanceNorm1d", "SyncBatchNorm"])
def test_affine_without_bias(make):
    module = make(nn)
    assert module.bias is None and [name for name, _ in module.named_parameters()] == ["weight"]
    x = tensor.arange(12.0).reshape(1, 3, 4)
    out = module(x)
    assert out.shape == (1, 3, 4) and abs(out.mean().item()) < 1e-6  # normalized, no shift


def test_instance_norm_with_momentum_none_keeps_the_running_stats(torch):
    x = RNG.standard_normal((2, 3, 5)).astype("float32") + 1
    ours = nn.InstanceNorm1d(3, track_running_stats=True, momentum=None)
    theirs = torch.nn.InstanceNorm1d(3, track_running_stats=True, momentum=None)
    ours(tensor.tensor(x))
    theirs(torch.from_numpy(x))
    assert_close(ours.running_mean, theirs.running_mean.numpy())
    assert_close(ours.running_var, theirs.running_var.numpy())


@pytest.mark.parametrize("options", [{}, {"affine": True}, {"affine": True, "bias": False}])
def test_instance_norm_repr_shows_bias(options, torch):
    assert repr(nn.InstanceNorm2d(3, **options)) == repr(torch.nn.InstanceNorm2d(3, **options))


def test_instance_norm_channel_mismatch():
    with pytest.raises(ValueError, match="to match num_features"):
        nn.InstanceNorm1d(3, affine=True)(tensor.ones(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(3)(tensor.ones(2, 4, 5))


@pytest.mark.parametrize(
    "x",
    [
        [[300.0, -200.0, 100.0, 250.0]],  # the squares overflow float16
        [[1e-3, -2e-3, 3e-3, 5e-4]],  # float16's own epsilon would swamp the mean square
    ],
)
@pytest.mark.parametrize("with_weight", [False, True])
def test_rms_norm_float16_computes_in_float32(x, with_weight, torch):
    x = np.array(x, dtype="float16")
    w = np.array([0.5, -1.0, 2.0, 1.5], dtype="float16") if with_weight else None
    ours = F.rms_norm(tensor.tensor(x), (4,), None if w is None else tensor.tensor(w))
    theirs = torch.nn.functional.rms_norm(torch.from_numpy(x), (4,), None if w is None else torch.from_numpy(w))
    assert_close(ours, theirs.numpy(), rtol=1e-3, atol=1e-3)


def test_rms_norm_float16_gradient_is_finite(torch):
    x = np.array([[1e-2, -2e-2, 3e-2, 5e-3]], dtype="float16")
    ours = tensor.tensor(x, requires_grad=True)
    F.rms_norm(ours, (4,), eps=1e-6).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    torch.nn.functional.rms_norm(theirs, (4,), eps=1e-6).sum().backward()
    assert_close(ours.grad, theirs.grad.numpy(), rtol=2e-3, atol=1e-2)


def test_local_response_norm_float16_sums_the_window_in_float32(torch):
    x = np.array([[[-178.0], [-186.0], [1.0]]], dtype="float16")
    ours = F.local_response_norm(tensor.tensor(x), 2)
    theirs = torch.nn.functional.local_response_norm(torch.from_numpy(x), 2)
    assert_close(ours, theirs.numpy(), rtol=2e-3, atol=1e-3)


def test_rms_norm_forward_takes_x_by_name():
    assert nn.RMSNorm(4)(x=tensor.ones(2, 4)).shape == (2, 4)
