"""tensor.autocast (op lists, casts, cache, autograd) and tensor.amp.GradScaler, against torch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nn.functional as F
import tensor
from tensor import _autocast, _dispatch
from tensor.ops.registry import OPS
from tests.conftest import CUDA_SKIP_REASON


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# (name, our call, torch call) on float32 operands made from the same arrays
CASES = [
    ("matmul", lambda t, a, b: a @ b),
    ("linear", lambda t, a, b: (F if t is tensor else t.nn.functional).linear(a, b.mT)),
    ("bmm", lambda t, a, b: t.bmm(a.unsqueeze(0), b.unsqueeze(0))),
    (
        "conv2d",
        lambda t, a, b: (F if t is tensor else t.nn.functional).conv2d(
            a.reshape(1, 1, 4, 4), b.reshape(1, 1, 4, 2)[..., :2, :]
        ),
    ),
    (
        "conv2d with bias, twice",  # the bias is cast with the GEMM; the second conv takes bf16 input
        lambda t, a, b: (F if t is tensor else t.nn.functional).conv2d(
            (F if t is tensor else t.nn.functional).conv2d(a.reshape(1, 1, 4, 4), b.reshape(2, 1, 2, 2), b[0]),
            b.reshape(1, 2, 2, 2),
            b[1, :1],
        ),
    ),
    (
        "cross_entropy",
        lambda t, a, b: (F if t is tensor else t.nn.functional).cross_entropy(a @ b, t.tensor([0, 1, 1, 0])),
    ),
    ("sum", lambda t, a, b: (a @ b).sum()),
    ("softmax", lambda t, a, b: (a @ b).softmax(-1)),
    ("log_softmax", lambda t, a, b: (a @ b).log_softmax(-1)),
    ("exp", lambda t, a, b: (a @ b).exp()),
    ("cat", lambda t, a, b: t.cat([a @ b, b[:1]])),
    ("add", lambda t, a, b: (a @ b) + a[:, :2]),
    ("float64 matmul", lambda t, a, b: a.double() @ b.double()),
    ("prod", lambda t, a, b: (a @ b).prod()),
]


@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_cpu_result_dtypes_and_values_match_torch(torch, name, fn):
    a, b = _rand(4, 4), _rand(4, 2, seed=1)
    with tensor.autocast("cpu"):
        ours = fn(tensor, tensor.from_numpy(a), tensor.from_numpy(b))
    with torch.autocast("cpu"):
        theirs = fn(torch, torch.from_numpy(a), torch.from_numpy(b))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), name
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2e-2, atol=2e-2)


def test_regions_nest_restore_and_leave_the_hot_path_alone():
    assert _dispatch.autocast is None and not tensor.is_autocast_enabled("cpu")
    with tensor.autocast("cpu", dtype=tensor.float16):
        assert tensor.get_autocast_dtype("cpu") is tensor.float16
        with tensor.autocast("cpu", enabled=False):
            assert not tensor.is_autocast_enabled("cpu")
            assert (tensor.ones(2, 2) @ tensor.ones(2, 2)).dtype is tensor.float32
        assert (tensor.ones(2, 2) @ tensor.ones(2, 2)).dtype is tensor.float16
    assert _dispatch.autocast is None and tensor.get_autocast_dtype("cpu") is tensor.bfloat16

    @tensor.amp.autocast("cpu")
    def run():
        return tensor.ones(2, 2) @ tensor.ones(2, 2)

    assert run().dtype is tensor.bfloat16
    assert not tensor.is_autocast_enabled("cuda")


def test_bad_arguments_raise_like_torch():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        tensor.autocast("xpu")
    with pytest.raises(TypeError, match="CuPy has no bfloat16"):
        tensor.autocast("cuda", dtype=tensor.bfloat16)
    with pytest.raises(TypeError, match="got float64"):
        tensor.autocast("cpu", dtype=tensor.float64)


def test_policy_lists_name_existing_ops():
    for device_type, table in _autocast.POLICIES.items():
        assert set(table) <= set(OPS), (device_type, set(table) - set(OPS))


def test_leaf_weight_casts_are_cached_per_region():
    w = tensor.ones(3, 3, requires_grad=True)
    x = tensor.ones(2, 3)
    with tensor.autocast("cpu"):
        first, second = F.linear(x, w), F.linear(x * 2, w)
        cached = _autocast._state.cache[id(w)][1]
        assert cached.dtype is tensor.bfloat16
        (first.sum() + second.sum()).float().backward()
    assert not _autocast._state.cache
    assert w.grad.dtype is tensor.float32
    np.testing.assert_allclose(w.grad.numpy(), np.full((3, 3), 6.0))
    with tensor.autocast("cpu", cache_enabled=False):
        F.linear(x, w)
        assert not _autocast._state.cache


def test_gradients_match_a_float32_model_within_bfloat16_tolerance():
    x = tensor.from_numpy(_rand(8, 6))
    weights = [tensor.from_numpy(_rand(6, 5, seed=s)).requires_grad_() for s in (1, 2)]
    target = tensor.tensor([0, 1, 2, 3, 4, 0, 1, 2])

    def loss():
        hidden = (x @ weights[0]).relu()
        return F.cross_entropy(hidden @ weights[1][:5], target)

    loss().backward()
    reference = [w.grad.numpy().copy() for w in weights]
    for w in weights:
        w.grad = None
    with tensor.autocast("cpu"):
        mixed = loss()
    mixed.backward()
    for w, ref in zip(weights, reference):
        assert w.grad.dtype is tensor.float32
        np.testing.assert_allclose(w.grad.numpy(), ref, rtol=3e-2, atol=3e-2 * np.abs(ref).max())


# ---------------------------------------------------------------------- GradScaler


class _SGD:
    """The least optimizer the scaler needs: param_groups and step."""

    def __init__(self, params, lr):
        self.param_groups = [{"params": list(params), "lr": lr}]

    def step(self):
        for p in self.param_groups[0]["params"]:
            p._data -= self.param_groups[0]["lr"] * p.grad._data


# per step: the gradient of the scaled loss relative to the scale (inf/NaN to force a skip)
GRAD_STEPS = [1.0, 2.0, math.inf, 1.0, 1.0, math.nan, 1.0, 1.0, 1.0]


def test_grad_scaler_skip_backoff_growth_match_torch(torch):
    ours_p = tensor.zeros(3, requires_grad=True)
    theirs_p = torch.zeros(3, requires_grad=True)
    ours_opt, theirs_opt = _SGD([ours_p], 0.1), torch.optim.SGD([theirs_p], lr=0.1)
    kwargs = dict(init_scale=8.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)
    ours, theirs = tensor.amp.GradScaler("cpu", **kwargs), torch.amp.GradScaler("cpu", **kwargs)
    for g in GRAD_STEPS:
        (ours.scale(tensor.ones(3) * ours_p).sum() * g).backward()
        (theirs.scale(torch.ones(3) * theirs_p).sum() * g).backward()
        ours.unscale_(ours_opt)
        theirs.unscale_(theirs_opt)
        if math.isfinite(g):
            np.testing.assert_array_equal(ours_p.grad.numpy(), theirs_p.grad.numpy())
        assert (ours.step(ours_opt) is None) == (theirs.step(theirs_opt) is None)
        ours.update()
        theirs.update()
        ours_p.grad = theirs_p.grad = None
        assert ours.get_scale() == theirs.get_scale(), g
        assert ours.state_dict() == theirs.state_dict()
        np.testing.assert_array_equal(ours_p.detach().numpy(), theirs_p.detach().numpy())


def test_grad_scaler_state_and_misuse():
    p = tensor.ones(2, requires_grad=True)
    opt = _SGD([p], 0.1)
    scaler = tensor.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    restored = tensor.amp.GradScaler("cpu")
    restored.load_state_dict(scaler.state_dict())
    assert (
        restored.state_dict()
        == scaler.state_dict()
        == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 1}
    )
    with pytest.raises(RuntimeError, match="state dict is empty"):
        restored.load_state_dict({})
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    with pytest.warns(UserWarning, match="CUDA is not available"):
        assert not tensor.amp.GradScaler().is_enabled()


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
def test_cuda_lists_and_grad_scaler():
    a = tensor.ones(4, 4, device="cuda", requires_grad=True)
    with tensor.autocast("cuda"):
        product = a @ a
        assert product.dtype is tensor.float16  # cuda's default lower dtype
        assert product.exp().dtype is tensor.float32  # exp is on cuda's fp32 list (not on the cpu's)
        assert product.sum().dtype is tensor.float32
    scaler = tensor.amp.GradScaler("cuda", init_scale=4.0)
    scaler.scale(product.float().sum()).backward()
    optimizer = _SGD([a], 0.0)
    scaler.step(optimizer)
    scaler.update()
    assert a.grad.dtype is tensor.float32 and a.grad.device.type == "cuda"
    np.testing.assert_allclose(a.grad.cpu().numpy(), np.full((4, 4), 8.0))
    assert scaler.get_scale() == 4.0


def test_deprecated_cuda_amp_spellings_warn_and_forward():
    with pytest.warns(FutureWarning, match="tensor.amp.autocast\\('cuda'"):
        region = tensor.cuda.amp.autocast(cache_enabled=False)
    assert (region.device_type, region.fast_dtype) == ("cuda", tensor.float16)
    with pytest.warns(FutureWarning, match="tensor.amp.GradScaler\\('cuda'"):
        scaler = tensor.cuda.amp.GradScaler(init_scale=8.0, enabled=False)
    assert scaler.get_scale() == 1.0 and not scaler.is_enabled()
