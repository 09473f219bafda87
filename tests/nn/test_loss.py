"""Losses, functional and module forms, against torch: values and input gradients for every
reduction, cross_entropy with class indices and probabilities (ignore_index, weight,
label_smoothing, the weighted-mean semantics), float64 gradcheck, and error messages."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(7)
REDUCTIONS = ["mean", "sum", "none"]


def _data(kind, shape):
    if kind == "prob":
        return RNG.uniform(0.05, 0.95, shape)
    if kind == "binary":
        return RNG.integers(0, 2, shape).astype(np.float64)
    if kind == "logprob":
        x = RNG.standard_normal(shape)
        return x - np.log(np.exp(x).sum(-1, keepdims=True))
    return RNG.standard_normal(shape)


# (name, input kind, target kind, extra kwargs)
ELEMENTWISE_CASES = [
    ("mse_loss", "normal", "normal", {}),
    ("l1_loss", "normal", "normal", {}),
    ("smooth_l1_loss", "normal", "normal", {}),
    ("smooth_l1_loss", "normal", "normal", {"beta": 0.5}),
    ("smooth_l1_loss", "normal", "normal", {"beta": 0.0}),
    ("huber_loss", "normal", "normal", {"delta": 0.7}),
    ("binary_cross_entropy", "prob", "prob", {}),
    ("binary_cross_entropy", "prob", "binary", {"weight": "w"}),
    ("binary_cross_entropy_with_logits", "normal", "prob", {}),
    ("binary_cross_entropy_with_logits", "normal", "binary", {"pos_weight": "pw", "weight": "w"}),
    ("kl_div", "logprob", "prob", {}),
    ("kl_div", "logprob", "logprob", {"log_target": True}),
]


def _kwargs_pair(torch, kwargs, shape):
    ours, theirs = {}, {}
    for key, value in kwargs.items():
        if value in ("w", "pw"):
            arr = RNG.uniform(0.5, 2.0, shape[-1:])
            ours[key], theirs[key] = tensor.tensor(arr), torch.from_numpy(arr)
        else:
            ours[key] = theirs[key] = value
    return ours, theirs


@pytest.mark.parametrize("name, in_kind, tgt_kind, kwargs, reduction", [
    case + (reduction,) for case in ELEMENTWISE_CASES
    for reduction in REDUCTIONS + (["batchmean"] if case[0] == "kl_div" else [])
])
def test_elementwise_losses_match_torch(torch, name, in_kind, tgt_kind, kwargs, reduction):
    shape = (4, 3)
    x_np, t_np = _data(in_kind, shape), _data(tgt_kind, shape)
    ours_kw, torch_kw = _kwargs_pair(torch, kwargs, shape)
    x = tensor.tensor(x_np, requires_grad=True)
    t = tensor.tensor(t_np, requires_grad=name in ("mse_loss", "l1_loss", "kl_div"))
    ref_x = torch.from_numpy(x_np).requires_grad_(True)
    ref_t = torch.from_numpy(t_np).requires_grad_(t.requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div 'mean' warns in both
        out = getattr(F, name)(x, t, reduction=reduction, **ours_kw)
        ref = getattr(torch.nn.functional, name)(ref_x, ref_t, reduction=reduction, **torch_kw)
    assert_close(out, ref.detach().numpy(), rtol=1e-6, atol=1e-9)
    out.sum().backward()
    ref.sum().backward()
    assert_close(x.grad, ref_x.grad.numpy(), rtol=1e-6, atol=1e-9)
    if t.requires_grad:
        assert_close(t.grad, ref_t.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name, in_kind, tgt_kind, kwargs", ELEMENTWISE_CASES)
def test_elementwise_losses_gradcheck(name, in_kind, tgt_kind, kwargs):
    shape = (2, 3)
    x = tensor.tensor(_data(in_kind, shape), requires_grad=True)
    t = tensor.tensor(_data(tgt_kind, shape))
    extra = {k: tensor.tensor(RNG.uniform(0.5, 2.0, 3)) if v in ("w", "pw") else v for k, v in kwargs.items()}
    assert autograd.gradcheck(lambda a: getattr(F, name)(a, t, reduction="sum", **extra), (x,))


def _first_and_second_derivatives(lib, loss, values, **kwargs):
    x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
    (g,) = lib.autograd.grad(loss(x, **kwargs).sum(), x, create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), x)
    return g.detach().numpy(), gg.numpy()


@pytest.mark.parametrize("options", [{}, {"pos_weight": [2.0, 0.5, 1.5, 3.0, 1.0, 1.0]}])
def test_binary_cross_entropy_with_logits_derivatives_at_zero_logits_match_torch(torch, options):
    # A zero-initialised head: d/dx at x = 0 is sigmoid(0) - t = 0.5 - t (the stable softplus
    # form relu(-x) + log1p(exp(-|x|)) gave 1 - t there), and the second derivative 0.25.
    logits, target = [0.0, 0.0, 0.0, -0.0, 40.0, -40.0], [0.0, 1.0, 0.3, 1.0, 0.0, 1.0]
    found = []
    for lib, fn in ((tensor, F), (torch, torch.nn.functional)):
        extra = {k: lib.tensor(v, dtype=lib.float64) for k, v in options.items()}

        def loss(x, lib=lib, fn=fn, extra=extra):
            return fn.binary_cross_entropy_with_logits(x, lib.tensor(target, dtype=lib.float64), reduction="none",
                                                       **extra)

        found.append(_first_and_second_derivatives(lib, loss, logits))
    for ours, theirs in zip(*found):
        assert_close(ours, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, kwargs", [("smooth_l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                          ("huber_loss", {"delta": 0.5})])
def test_smooth_l1_and_huber_second_derivative_where_input_equals_target(torch, name, kwargs):
    values = [-1.0, -0.2, 0.0, 0.2, 1.0]
    found = []
    for lib, fn in ((tensor, F), (torch, torch.nn.functional)):
        def loss(x, lib=lib, fn=fn):
            return getattr(fn, name)(x, lib.zeros_like(x), reduction="sum", **kwargs)

        found.append(_first_and_second_derivatives(lib, loss, values))
    for ours, theirs in zip(*found):
        assert_close(ours, theirs, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy_gradient_at_saturated_inputs_matches_torch(torch, reduction):
    # Exactly 0 or 1 (a saturated sigmoid): PyTorch's derivative clamps p(1 - p) at 1e-12.
    p_values, t_values = [0.0, 1.0, 0.0, 1.0, 0.5], [1.0, 0.0, 0.0, 1.0, 0.3]
    weight = [1.0, 2.0, 0.5, 1.0, 3.0]
    grads = []
    for lib in (tensor, torch):
        p = lib.tensor(p_values, dtype=lib.float64, requires_grad=True)
        t = lib.tensor(t_values, dtype=lib.float64, requires_grad=True)
        fn = F if lib is tensor else torch.nn.functional
        loss = fn.binary_cross_entropy(p, t, lib.tensor(weight, dtype=lib.float64), reduction=reduction)
        loss.sum().backward()
        grads.append((loss.detach().numpy(), p.grad.numpy(), t.grad.numpy()))
    for mine, theirs in zip(*grads):
        assert_close(mine, theirs, rtol=1e-6)


# (input shape, target shape, options) for class-index targets
CE_INDEX_CASES = [
    ((5, 4), (5,), {}),
    ((5, 4), (5,), {"weight": True}),
    ((5, 4), (5,), {"ignore_index": 1}),
    ((5, 4), (5,), {"weight": True, "ignore_index": 2}),
    ((5, 4), (5,), {"label_smoothing": 0.2}),
    ((5, 4), (5,), {"label_smoothing": 0.1, "weight": True, "ignore_index": 0}),
    ((2, 4, 3, 2), (2, 3, 2), {"weight": True}),
    ((2, 4, 3), (2, 3), {"label_smoothing": 0.3, "ignore_index": 3}),
    ((4,), (), {}),
    ((4,), (), {"weight": True, "label_smoothing": 0.1}),
    ((0, 4), (0,), {}),
]


def _ce_inputs(torch, in_shape, tgt_shape, options):
    classes = in_shape[0] if len(in_shape) == 1 else in_shape[1]
    x_np = RNG.standard_normal(in_shape) * 2
    t_np = RNG.integers(0, classes, tgt_shape)
    kw_ours, kw_torch = {}, {}
    for key, value in options.items():
        if key == "weight":
            w = RNG.uniform(0.2, 3.0, classes)
            kw_ours[key], kw_torch[key] = tensor.tensor(w), torch.from_numpy(w)
        else:
            kw_ours[key] = kw_torch[key] = value
    return x_np, t_np, kw_ours, kw_torch


@pytest.mark.parametrize("loss, in_shape, tgt_shape, options", [
    (loss,) + case for case in CE_INDEX_CASES
    for loss in ["cross_entropy"] + ([] if "label_smoothing" in case[2] else ["nll_loss"])
])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_class_index_losses_match_torch(torch, in_shape, tgt_shape, options, reduction, loss):
    x_np, t_np, kw_ours, kw_torch = _ce_inputs(torch, in_shape, tgt_shape, options)
    x = tensor.tensor(x_np, requires_grad=True)
    ref_x = torch.from_numpy(x_np).requires_grad_(True)
    out = getattr(F, loss)(x, tensor.tensor(t_np), reduction=reduction, **kw_ours)
    ref = getattr(torch.nn.functional, loss)(ref_x, torch.from_numpy(t_np), reduction=reduction, **kw_torch)
    assert_close(out, ref.detach().numpy(), rtol=1e-6, atol=1e-9)
    cot = RNG.standard_normal(ref.shape)
    (out * tensor.tensor(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()
    assert_close(x.grad, ref_x.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_weighted_mean_divides_by_the_summed_target_weights():
    logp = tensor.tensor([[-1.0, -2.0], [-3.0, -4.0], [-5.0, -6.0]])
    target = tensor.tensor([0, 1, 1])
    weight = tensor.tensor([2.0, 0.5])
    expected = (2.0 * 1.0 + 0.5 * 4.0 + 0.5 * 6.0) / (2.0 + 0.5 + 0.5)
    assert_close(F.nll_loss(logp, target, weight), np.float32(expected))
    all_ignored = F.nll_loss(logp, target, ignore_index=1, reduction="mean", weight=tensor.tensor([0.0, 1.0]))
    assert np.isnan(all_ignored.item())


@pytest.mark.parametrize("options", [{}, {"weight": True}, {"label_smoothing": 0.25},
                                     {"weight": True, "label_smoothing": 0.1}])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_probability_targets_matches_torch(torch, options, reduction):
    x_np = RNG.standard_normal((3, 4, 2))
    t_np = RNG.dirichlet(np.ones(4), (3, 2)).transpose(0, 2, 1).copy()
    _, _, kw_ours, kw_torch = _ce_inputs(torch, (3, 4, 2), (3, 2), options)
    x = tensor.tensor(x_np, requires_grad=True)
    t = tensor.tensor(t_np, requires_grad=True)
    ref_x, ref_t = torch.from_numpy(x_np).requires_grad_(True), torch.from_numpy(t_np).requires_grad_(True)
    out = F.cross_entropy(x, t, reduction=reduction, **kw_ours)
    ref = torch.nn.functional.cross_entropy(ref_x, ref_t, reduction=reduction, **kw_torch)
    assert_close(out, ref.detach().numpy(), rtol=1e-6, atol=1e-9)
    out.sum().backward()
    ref.sum().backward()
    assert_close(x.grad, ref_x.grad.numpy(), rtol=1e-6, atol=1e-9)
    assert_close(t.grad, ref_t.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("options", [{}, {"ignore_index": 0, "label_smoothing": 0.2}])
def test_cross_entropy_gradcheck_and_gradgradcheck(options):
    x = tensor.randn(4, 3, dtype=tensor.float64, requires_grad=True)
    t = tensor.tensor([0, 2, 1, 0])
    w = tensor.tensor([0.5, 1.0, 2.0], dtype=tensor.float64)
    assert autograd.gradcheck(lambda a: F.cross_entropy(a, t, weight=w, **options), (x,))
    assert autograd.gradgradcheck(lambda a: F.cross_entropy(a, t, weight=w, **options), (x,))


def test_float32_cross_entropy_on_transposed_logits(device, torch):
    x_np = RNG.standard_normal((3, 6)).astype(np.float32)
    x = tensor.tensor(x_np, device=device).T
    t = tensor.tensor([0, 1, 2, 2, 1, 0], device=device)
    ref = torch.nn.functional.cross_entropy(torch.from_numpy(x_np).T, torch.tensor([0, 1, 2, 2, 1, 0]))
    out = F.cross_entropy(x, t)
    assert out.dtype is tensor.float32 and out.device.type == device
    assert_close(out, ref.numpy(), rtol=1e-6)


@pytest.mark.parametrize("ours, theirs, args, kwargs", [
    (nn.CrossEntropyLoss, "CrossEntropyLoss", (), {"label_smoothing": 0.1, "ignore_index": 1}),
    (nn.NLLLoss, "NLLLoss", (), {"reduction": "sum"}),
    (nn.MSELoss, "MSELoss", (), {}),
    (nn.L1Loss, "L1Loss", (), {"reduction": "none"}),
    (nn.SmoothL1Loss, "SmoothL1Loss", (), {"beta": 0.3}),
    (nn.HuberLoss, "HuberLoss", (), {"delta": 0.3}),
    (nn.BCELoss, "BCELoss", (), {}),
    (nn.BCEWithLogitsLoss, "BCEWithLogitsLoss", (), {}),
    (nn.KLDivLoss, "KLDivLoss", (), {"reduction": "batchmean", "log_target": True}),
])
def test_loss_modules_match_torch(torch, ours, theirs, args, kwargs):
    x_np = RNG.uniform(0.05, 0.95, (4, 3))
    if ours in (nn.CrossEntropyLoss, nn.NLLLoss):
        t_np = RNG.integers(0, 3, 4)
    else:
        t_np = RNG.uniform(0.05, 0.95, (4, 3))
    out = ours(*args, **kwargs)(tensor.tensor(x_np), tensor.tensor(t_np))
    ref = getattr(torch.nn, theirs)(*args, **kwargs)(torch.from_numpy(x_np), torch.from_numpy(t_np))
    assert_close(out, ref.numpy(), rtol=1e-6, atol=1e-9)
    assert repr(ours(*args, **kwargs)) == repr(getattr(torch.nn, theirs)(*args, **kwargs))


def test_loss_weights_are_buffers_in_state_dict():
    weight = tensor.tensor([1.0, 2.0])
    loss = nn.CrossEntropyLoss(weight=weight)
    assert list(loss.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    assert list(nn.BCEWithLogitsLoss(pos_weight=weight).state_dict()) == ["pos_weight"]


def test_legacy_size_average_and_reduce_flags(torch):
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.L1Loss(reduce=False).reduction == "none"


@pytest.mark.parametrize("call, error, message", [
    (lambda: F.mse_loss(tensor.randn(2), tensor.randn(2), reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: F.cross_entropy(tensor.randn(3, 4), tensor.tensor([0, 4, 1])), IndexError,
     "Target 4 is out of bounds."),
    (lambda: F.nll_loss(tensor.randn(3, 4), tensor.tensor([0, -2, 1])), IndexError,
     "Target -2 is out of bounds."),
    (lambda: F.cross_entropy(tensor.randn(3, 4), tensor.tensor([0, 1])), ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)."),
    (lambda: F.cross_entropy(tensor.randn(3, 4), tensor.tensor([0, 1, 1]), label_smoothing=1.5),
     RuntimeError, "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda: F.cross_entropy(tensor.randn(3, 4), tensor.tensor([0, 1, 1]), weight=tensor.ones(3)),
     RuntimeError, "weight tensor should be defined either for all 4 classes or no classes"),
    (lambda: F.cross_entropy(tensor.randn(3, 4), tensor.rand(3, 5)), RuntimeError,
     r"class-probability targets must have the input's shape \[3, 4\]"),
    (lambda: F.nll_loss(tensor.randn(3, 4), tensor.tensor([0.0, 1.0, 1.0])), RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    (lambda: F.cross_entropy(tensor.randn(2, 3), tensor.tensor([0, 1], dtype=tensor.int32)), RuntimeError,
     "expected target dtype to be Long or Byte, but got Int"),
    (lambda: F.binary_cross_entropy(tensor.rand(3), tensor.rand(2)), ValueError,
     r"Using a target size \(\(2,\)\) that is different to the input size \(\(3,\)\)"),
    (lambda: F.binary_cross_entropy(tensor.tensor([0.5, 1.5]), tensor.rand(2)), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy_with_logits(tensor.rand(3), tensor.rand(3, 1)), ValueError,
     r"Target size \(\(3, 1\)\) must be the same as input size \(\(3,\)\)"),
    (lambda: F.smooth_l1_loss(tensor.rand(3), tensor.rand(3), beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda: F.kl_div(tensor.rand(3), tensor.rand(3), reduction="batch"), ValueError,
     "batch is not a valid value for reduction"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_mse_loss_warns_on_broadcasting_shapes():
    with pytest.warns(UserWarning, match="different to the input size"):
        F.mse_loss(tensor.randn(3, 2), tensor.randn(2))


def test_every_target_ignored_gives_a_nan_loss_and_zero_gradients(torch):
    def run(lib, functional):
        x = lib.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
        loss = functional.cross_entropy(x, lib.tensor([1, 1, 1]), ignore_index=1)
        loss.backward()
        return np.isnan(loss.item()), x.grad.abs().sum().item()

    assert run(tensor, F) == run(torch, torch.nn.functional) == (True, 0.0)
