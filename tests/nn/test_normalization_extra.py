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
