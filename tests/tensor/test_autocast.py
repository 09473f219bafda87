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


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_an_unsupported_dtype_warns_and_disables_like_torch(torch, dtype):
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
        region = tensor.autocast("cpu", dtype=getattr(tensor, dtype))
    with region:
        assert not tensor.is_autocast_enabled("cpu")
        assert tensor.get_autocast_dtype("cpu") is getattr(tensor, dtype)
        assert (tensor.ones(2, 3) @ tensor.ones(3, 2)).dtype is tensor.float32
    with pytest.warns(UserWarning), torch.autocast("cpu", dtype=getattr(torch, dtype)):
        assert not torch.is_autocast_enabled("cpu")


def test_float64_beside_float32_in_a_lowered_op_raises_like_torch(torch):
    with tensor.autocast("cpu"):
        with pytest.raises(RuntimeError, match="float64 and bfloat16"):
            tensor.ones(2, 3, dtype=tensor.float64) @ tensor.ones(3, 2)
        double = tensor.ones(2, 3, dtype=tensor.float64)
        assert (double @ double.mT).dtype is tensor.float64
    with torch.autocast("cpu"), pytest.raises(RuntimeError):
        torch.ones(2, 3, dtype=torch.float64) @ torch.ones(3, 2)


def test_policy_lists_name_existing_ops():
    import nn  # noqa: F401, PLC0415 - decorates its losses

    assert {"nll_loss", "mse_loss", "cross_entropy_loss", "prelu"} <= _autocast.AS_OP_NAMES
    for table in _autocast.POLICIES.values():
        assert {"matmul", "linear", "nll_loss", "prod", "cat"} <= set(table) & set(OPS)
    assert {"lstm_layer", "lstm_proj_layer"} <= set(OPS)


# losses and prelu: PyTorch's cpu lists name them (fp32 and lower); ours cast at the front end
AS_OP_CASES = [
    ("mse_loss", lambda F, a, b: F.mse_loss(a, b)),
    ("l1_loss", lambda F, a, b: F.l1_loss(a, b)),
    ("smooth_l1_loss", lambda F, a, b: F.smooth_l1_loss(a, b)),
    ("huber_loss", lambda F, a, b: F.huber_loss(a, b)),
    ("binary_cross_entropy", lambda F, a, b: F.binary_cross_entropy(a.sigmoid(), b.sigmoid())),
    ("binary_cross_entropy_with_logits", lambda F, a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid())),
    ("kl_div", lambda F, a, b: F.kl_div(a, b.softmax(-1), reduction="batchmean")),
    ("cross_entropy", lambda F, a, b: F.cross_entropy(a, b.softmax(-1))),
    ("prelu", lambda F, a, b: F.prelu(a, b[0, :1].float())),
]


@pytest.mark.parametrize("in_dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name, fn", AS_OP_CASES, ids=[c[0] for c in AS_OP_CASES])
def test_composites_on_torchs_cpu_lists_match_torch(torch, name, fn, in_dtype):
    a, b = _rand(4, 5), _rand(4, 5, seed=1)
    with tensor.autocast("cpu"):
        x, y = (tensor.from_numpy(v).to(getattr(tensor, in_dtype)) for v in (a, b))
        ours = fn(F, x, y)
    with torch.autocast("cpu"):
        x, y = (torch.from_numpy(v).to(getattr(torch, in_dtype)) for v in (a, b))
        theirs = fn(torch.nn.functional, x, y)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch."), name
    np.testing.assert_allclose(ours.float().detach().numpy(), theirs.float().detach().numpy(), rtol=2e-2, atol=2e-2)


def test_a_composite_runs_its_body_with_autocast_off():
    seen = []

    @_autocast.as_op("mse_loss")
    def fp32_op(a):
        seen.append(tensor.is_autocast_enabled("cpu"))
        return a @ a

    @_autocast.as_op("not on any list")
    def unlisted(a):
        return a @ a

    x = tensor.ones(2, 2)
    with tensor.autocast("cpu"):
        assert fp32_op(x.bfloat16()).dtype is tensor.float32  # cast to float32; its matmul not lowered
        assert unlisted(x).dtype is tensor.float32  # as PyTorch's dot or mv: no cast at all
        assert tensor.is_autocast_enabled("cpu")
    assert seen == [False]
    assert fp32_op(x.bfloat16()).dtype is tensor.bfloat16  # outside a region: no cast


def test_lstm_is_lowered_like_torch(torch):
    import nn  # noqa: PLC0415

    ours_lstm, theirs_lstm = nn.LSTM(6, 6, batch_first=True), torch.nn.LSTM(6, 6, batch_first=True)
    ours_lstm.load_state_dict({k: tensor.from_numpy(v.detach().numpy()) for k, v in theirs_lstm.state_dict().items()})
    x = _rand(2, 5, 6)
    with tensor.autocast("cpu"):
        ours = ours_lstm(tensor.from_numpy(x))[0]
    with torch.autocast("cpu"):
        theirs = theirs_lstm(torch.from_numpy(x))[0]
    assert ours.dtype is tensor.bfloat16 and theirs.dtype == torch.bfloat16
    np.testing.assert_allclose(ours.float().detach().numpy(), theirs.float().detach().numpy(), atol=3e-2)


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


def test_grad_scaler_errors_match_torch(torch):
    for scaler_type in (tensor.amp.GradScaler, torch.amp.GradScaler):
        with pytest.raises(AssertionError, match="growth factor"):
            scaler_type("cpu", growth_factor=1.0)
        with pytest.raises(AssertionError, match="backoff factor"):
            scaler_type("cpu", backoff_factor=1.0)
        scaler_type("cpu", backoff_factor=0.0)
        scaler_type("cpu", growth_factor=0.5, enabled=False)
        with pytest.raises(ValueError, match="outputs must be a Tensor"):
            scaler_type("cpu").scale(3)
    for lib in (tensor, torch):
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(lib.ones(1))
        with pytest.raises(AssertionError):
            scaler.update(lib.tensor([1.0, 2.0]))
        with pytest.raises(AssertionError):
            scaler.update(lib.tensor(1.0, requires_grad=True))
        with pytest.raises(RuntimeError):
            scaler.update(lib.tensor([8.0]))
        scaler.update(lib.tensor(16.0, dtype=lib.float64))
        assert scaler.get_scale() == 16.0


def test_grad_scaler_private_helpers_trainer_libraries_call(torch):
    results = []
    for lib in (tensor, torch):
        p = lib.ones(2, requires_grad=True)
        optimizer = torch.optim.SGD([p], lr=1.0) if lib is torch else _SGD([p], 1.0)
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        assert scaler._get_scale_async() is None
        scaler.scale((p * lib.tensor([1.0, math.inf])).sum()).backward()
        flags = scaler._check_inf_per_device(optimizer)
        assert scaler._found_inf_per_device(optimizer) is flags
        state = scaler._per_optimizer_states[id(optimizer)]
        assert scaler._maybe_opt_step(optimizer, state) is None  # skipped: inf found
        scaler._lazy_init_scale_growth_tracker  # noqa: B018 - PyTorch's name exists
        results.append((float(scaler._get_scale_async()), [float(v) for v in flags.values()], p.grad.tolist()))
    assert results[0] == results[1]


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
    with pytest.warns(FutureWarning, match="tensor.amp.custom_fwd\\(args..., device_type='cuda'\\)"):
        forward = tensor.cuda.amp.custom_fwd(lambda ctx, x: x)
    with pytest.warns(FutureWarning, match="custom_bwd"):
        backward = tensor.cuda.amp.custom_bwd(lambda ctx, g: g)

    class Ctx:
        pass

    ctx = Ctx()
    assert forward(ctx, 3) == 3 and backward(ctx, 4) == 4  # recorded cuda's autocast state: off


def test_linear_algebra_sampling_and_rnns_under_cpu_autocast_match_torch(torch):
    """Linear algebra runs in float32 (PyTorch's fp32 list, cast before the dtype checks), the
    upsampling, grid sampling, dot, mv and matrix_exp keep their inner products in float32, the
    addmm family is lowered, an LSTM takes bfloat16 input; rms_norm keeps a bfloat16 input's
    dtype without autocast."""
    import nn  # noqa: PLC0415 - the layer above, as the user program has it
    from nn import functional as F  # noqa: PLC0415

    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    image = np.random.default_rng(0).standard_normal((1, 2, 4, 4))

    def dtypes(lib, functional, modules):
        A, x = lib.tensor(a, dtype=lib.float32), lib.tensor(image, dtype=lib.float32)
        lib.manual_seed(0)
        lstm = modules.LSTM(4, 3)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            B = A @ A
            outs = [B, lib.linalg.inv(B), lib.linalg.svdvals(B), lib.linalg.eigh(B).eigenvalues, lib.linalg.cond(B),
                    lib.linalg.solve(B, B), lib.linalg.cholesky(B), lib.linalg.qr(B).Q, lib.linalg.lstsq(B, B).solution,
                    functional.interpolate(x, scale_factor=2, mode="bilinear"),
                    functional.grid_sample(x, lib.zeros(1, 3, 3, 2), align_corners=False),
                    lstm(lib.ones(5, 2, 4, dtype=lib.bfloat16))[0]]
            v, b = A[0], A.expand(2, 2, 2)
            outs += [lib.addmm(A, A, A), lib.baddbmm(b, b, b), lib.addbmm(A, b, b), lib.trace(A.to(lib.bfloat16)),
                     lib.dot(v, v), lib.mv(A, v), lib.linalg.matrix_exp(A)]  # the last three stay float32
        outs.append(functional.rms_norm(x.to(lib.bfloat16), (4,)))
        return [str(o.dtype).split(".")[-1] for o in outs]

    assert dtypes(tensor, F, nn) == dtypes(torch, torch.nn.functional, torch.nn)
