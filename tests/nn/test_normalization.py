"""BatchNorm1d/2d, LayerNorm, GroupNorm and their functional forms against torch: outputs,
input and parameter gradients, running statistics over several steps (momentum, momentum=None
cumulative average, num_batches_tracked), eval mode, affine / track_running_stats options,
float64 gradcheck, repr and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state, run_both

RNG = np.random.default_rng(9)


def _randn(*shape):
    return (RNG.standard_normal(shape) * 2 + 0.5).astype(np.float32)


BN_CASES = [
    (nn.BatchNorm1d, "BatchNorm1d", (6, 3)),
    (nn.BatchNorm1d, "BatchNorm1d", (4, 3, 5)),
    (nn.BatchNorm2d, "BatchNorm2d", (2, 3, 4, 5)),
]


@pytest.mark.parametrize("ours_cls, torch_name, shape", BN_CASES)
@pytest.mark.parametrize("kwargs", [{}, {"momentum": None}, {"affine": False}, {"momentum": 0.3, "eps": 1e-3},
                                    {"track_running_stats": False}, {"bias": False}])
def test_batchnorm_training_steps_then_eval_match_torch(torch, ours_cls, torch_name, shape, kwargs):
    ours, theirs = ours_cls(3, **kwargs), getattr(torch.nn, torch_name)(3, **kwargs)
    if ours.affine:
        with tensor.no_grad():
            ours.weight.copy_(tensor.tensor(RNG.uniform(0.5, 1.5, 3).astype(np.float32)))
            if ours.bias is not None:
                ours.bias.copy_(tensor.tensor(RNG.standard_normal(3).astype(np.float32)))
    copy_state(ours, theirs, torch)
    for _ in range(3):
        ours.zero_grad()
        theirs.zero_grad()
        run_both(ours, theirs, torch, _randn(*shape), rtol=1e-4, atol=1e-5)
    for name, buf in theirs.named_buffers():
        assert_close(dict(ours.named_buffers())[name], buf.numpy(), rtol=1e-5, atol=1e-6)
    ours.eval()
    theirs.eval()
    run_both(ours, theirs, torch, _randn(*shape), rtol=1e-4, atol=1e-5)


def test_batchnorm_buffers_and_state_dict_keys():
    bn = nn.BatchNorm2d(4)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype is tensor.int64
    bn(tensor.randn(2, 4, 3, 3))
    bn(tensor.randn(2, 4, 3, 3))
    assert bn.num_batches_tracked.item() == 2
    bn.eval()
    bn(tensor.randn(2, 4, 3, 3))
    assert bn.num_batches_tracked.item() == 2
    no_stats = nn.BatchNorm1d(4, track_running_stats=False)
    assert list(no_stats.state_dict()) == ["weight", "bias"]
    assert no_stats.running_mean is None
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0
    assert_close(bn.running_var, np.ones(4, np.float32))


def test_batchnorm_loads_a_state_dict_without_num_batches_tracked(torch):
    # An old (version < 2) or hand-built state dict: the count keeps its value, as in PyTorch.
    ref = torch.nn.BatchNorm1d(3)
    state = {k: tensor.tensor(v.numpy()) for k, v in ref.state_dict().items() if k != "num_batches_tracked"}
    bn = nn.BatchNorm1d(3)
    bn(tensor.randn(4, 3))
    assert not bn.load_state_dict(state).missing_keys
    assert bn.num_batches_tracked.item() == 1
    current = nn.BatchNorm1d(3).state_dict()
    assert current._metadata[""]["version"] == 2
    del current["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key.*"num_batches_tracked"'):
        nn.BatchNorm1d(3).load_state_dict(current)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), -float("inf"), 0])
def test_normalize_matches_torch(torch, p):
    x = RNG.standard_normal((3, 4))
    x[1] = 0.0
    ours = tensor.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    got, expected = F.normalize(ours, p=p), torch.nn.functional.normalize(theirs, p=p)
    assert_close(got, expected.detach().numpy())
    got.pow(3).sum().backward()
    expected.pow(3).sum().backward()
    assert_close(ours.grad, theirs.grad.numpy())


@pytest.mark.parametrize("x", [[[300.0, -200.0, 100.0, 250.0]], [[1e-3, -2e-3, 3e-3, 5e-4]]])
def test_normalize_float16_takes_the_norm_in_float32(torch, x):
    x = np.array(x, dtype="float16")
    got = F.normalize(tensor.tensor(x))
    assert_close(got, torch.nn.functional.normalize(torch.from_numpy(x)).numpy(), rtol=1e-3, atol=1e-3)


def test_normalize_writes_into_out():
    out = tensor.empty(2, 2)
    result = F.normalize(tensor.tensor([[3.0, 4.0], [0.0, 2.0]]), out=out)
    assert result is out
    assert_close(out, np.array([[0.6, 0.8], [0.0, 1.0]], np.float32))


def test_batchnorm_running_var_is_unbiased_and_momentum_none_is_cumulative():
    bn = nn.BatchNorm1d(1, momentum=None, affine=False)
    batches = [np.array([[1.0], [3.0]], np.float32), np.array([[2.0], [6.0]], np.float32)]
    for b in batches:
        bn(tensor.tensor(b))
    # The cumulative average of the batch means and of the unbiased batch variances.
    assert_close(bn.running_mean, np.array([(2.0 + 4.0) / 2], np.float32))
    assert_close(bn.running_var, np.array([(2.0 + 8.0) / 2], np.float32))


def test_batchnorm_eval_without_running_stats_uses_batch_stats(torch):
    ours, theirs = nn.BatchNorm1d(3, track_running_stats=False), torch.nn.BatchNorm1d(3, track_running_stats=False)
    ours.eval()
    theirs.eval()
    copy_state(ours, theirs, torch)
    run_both(ours, theirs, torch, _randn(5, 3), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_functional_batch_norm_gradcheck(training):
    x = tensor.randn(4, 3, 2, dtype=tensor.float64, requires_grad=True)
    w = tensor.randn(3, dtype=tensor.float64, requires_grad=True)
    b = tensor.randn(3, dtype=tensor.float64, requires_grad=True)
    rm, rv = tensor.zeros(3, dtype=tensor.float64), tensor.ones(3, dtype=tensor.float64)
    fn = lambda a, c, d: F.batch_norm(a, rm.clone(), rv.clone(), c, d, training=training)  # noqa: E731
    assert autograd.gradcheck(fn, (x, w, b))
    assert autograd.gradgradcheck(fn, (x, w, b))


@pytest.mark.parametrize("shape, normalized", [((4, 6), (6,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), 4), ((0, 5), (5,))])
@pytest.mark.parametrize("kwargs", [{}, {"elementwise_affine": False}, {"bias": False}, {"eps": 1e-2}])
def test_layernorm_matches_torch(torch, shape, normalized, kwargs):
    ours, theirs = nn.LayerNorm(normalized, **kwargs), torch.nn.LayerNorm(normalized, **kwargs)
    if ours.weight is not None:
        with tensor.no_grad():
            ours.weight.copy_(tensor.tensor(RNG.uniform(0.5, 1.5, ours.weight.shape).astype(np.float32)))
    copy_state(ours, theirs, torch)
    run_both(ours, theirs, torch, _randn(*shape), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape, groups", [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 2), ((2, 6, 2, 2), 1)])
@pytest.mark.parametrize("kwargs", [{"affine": True}, {"affine": False}, {"bias": False}])
def test_groupnorm_matches_torch(torch, shape, groups, kwargs):
    ours, theirs = nn.GroupNorm(groups, shape[1], **kwargs), torch.nn.GroupNorm(groups, shape[1], **kwargs)
    if ours.bias is not None:
        with tensor.no_grad():
            ours.bias.copy_(tensor.tensor(RNG.standard_normal(shape[1]).astype(np.float32)))
    copy_state(ours, theirs, torch)
    run_both(ours, theirs, torch, _randn(*shape), rtol=1e-4, atol=1e-5)


def test_layer_and_group_norm_gradcheck():
    x = tensor.randn(2, 4, 3, dtype=tensor.float64, requires_grad=True)
    w = tensor.randn(4, dtype=tensor.float64, requires_grad=True)
    b = tensor.randn(4, dtype=tensor.float64, requires_grad=True)
    assert autograd.gradcheck(lambda a, c, d: F.group_norm(a, 2, c, d), (x, w, b))
    w3 = tensor.randn(3, dtype=tensor.float64, requires_grad=True)
    assert autograd.gradcheck(lambda a, c: F.layer_norm(a, (3,), c), (x, w3))
    assert autograd.gradgradcheck(lambda a: F.layer_norm(a, (4, 3)), (x,))


def test_normalization_on_transposed_input(device):
    x = tensor.tensor(_randn(5, 4), device=device).T  # (4, 5), non-contiguous
    out = F.layer_norm(x, (5,))
    data = x.cpu().numpy()
    expected = (data - data.mean(-1, keepdims=True)) / np.sqrt(data.var(-1, keepdims=True) + 1e-5)
    assert_close(out, expected.astype(np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("module_args", [
    (nn.BatchNorm1d, (3,), {}), (nn.BatchNorm2d, (8,), {"bias": False}), (nn.LayerNorm, (4,), {}),
    (nn.LayerNorm, ([2, 3],), {"elementwise_affine": False}), (nn.GroupNorm, (2, 4), {"bias": False}),
    (nn.BatchNorm1d, (3,), {"momentum": None, "affine": False}), (nn.LayerNorm, (4,), {"bias": False}),
])
def test_repr_matches_torch(torch, module_args):
    cls, args, kwargs = module_args
    assert repr(cls(*args, **kwargs)) == repr(getattr(torch.nn, cls.__name__)(*args, **kwargs))


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.BatchNorm1d(3)(tensor.randn(2, 3, 4, 5)), ValueError, r"expected 2D or 3D input \(got 4D input\)"),
    (lambda: nn.BatchNorm2d(3)(tensor.randn(2, 3)), ValueError, r"expected 4D input \(got 2D input\)"),
    (lambda: nn.BatchNorm1d(3)(tensor.randn(1, 3)), ValueError,
     r"Expected more than 1 value per channel when training, got input size \[1, 3\]"),
    (lambda: nn.BatchNorm1d(3)(tensor.randn(4, 5)), RuntimeError, "expected running_mean to have 5 elements"),
    (lambda: F.batch_norm(tensor.randn(4, 3), None, None), RuntimeError,
     "running_mean and running_var must be defined in evaluation mode"),
    (lambda: nn.LayerNorm(4)(tensor.randn(2, 5)), RuntimeError,
     r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but got input of size\[2, 5\]"),
    (lambda: nn.GroupNorm(3, 4), ValueError, "num_channels must be divisible by num_groups"),
    (lambda: F.group_norm(tensor.randn(2, 4), 3), RuntimeError,
     r"divisible by num_groups, but got input of shape \[2, 4\] and num_groups=3"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


BFLOAT16_NORMS = [
    ("layer_norm", lambda L, F, x: F.layer_norm(x, (6,), L.ones(6) * 1.5, L.zeros(6) + 0.25)),
    ("layer_norm plain", lambda L, F, x: F.layer_norm(x, (6,))),
    ("group_norm", lambda L, F, x: F.group_norm(x, 2, L.ones(4) * 1.5, L.zeros(4) + 0.25)),
    ("batch_norm training", lambda L, F, x: F.batch_norm(x, L.zeros(4), L.ones(4), L.ones(4) * 1.5, L.zeros(4),
                                                         training=True)),
    ("batch_norm eval", lambda L, F, x: F.batch_norm(x, L.zeros(4) + 0.5, L.ones(4) * 2, L.ones(4), L.zeros(4))),
    ("instance_norm", lambda L, F, x: F.instance_norm(x, weight=L.ones(4) * 1.5, bias=L.zeros(4))),
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name, fn", BFLOAT16_NORMS, ids=[c[0] for c in BFLOAT16_NORMS])
def test_low_precision_input_with_float32_parameters_keeps_its_dtype_like_torch(torch, name, fn, dtype):
    x = RNG.standard_normal((2, 4, 6)).astype(np.float32) * 3 + 1
    ours_in = tensor.tensor(x).to(getattr(tensor, dtype)).requires_grad_()
    theirs_in = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    ours, theirs = fn(tensor, F, ours_in), fn(torch, torch.nn.functional, theirs_in)
    assert ours.dtype.name == dtype and str(theirs.dtype) == f"torch.{dtype}"
    assert_close(ours.float(), theirs.float().detach().numpy(), rtol=2e-2, atol=2e-2)
    ours.float().sum().backward()
    theirs.float().sum().backward()
    assert ours_in.grad.dtype.name == dtype
    assert_close(ours_in.grad.float(), theirs_in.grad.float().numpy(), rtol=5e-2, atol=5e-2)
