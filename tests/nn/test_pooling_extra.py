"""3-d pooling layers, adaptive max pooling, unpooling, LP pooling, ConvTranspose3d and
Fold/Unfold against torch: values, indices and gradients."""

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


@pytest.mark.parametrize(
    "layer, args, shape",
    [
        ("MaxPool3d", (2,), (2, 2, 4, 5, 6)),
        ("MaxPool3d", ((2, 1, 3), 1, (1, 0, 1)), (1, 2, 3, 4, 5)),
        ("AvgPool3d", (2,), (2, 2, 4, 4, 5)),
        ("AvgPool3d", (3, 2, 1, False, False), (1, 2, 5, 4, 6)),
        ("AdaptiveAvgPool3d", ((2, 3, 2),), (2, 2, 5, 7, 4)),
        ("AdaptiveMaxPool1d", (3,), (2, 3, 7)),
        ("AdaptiveMaxPool2d", ((3, None),), (2, 3, 7, 5)),
        ("AdaptiveMaxPool3d", (2,), (1, 2, 5, 3, 4)),
        ("LPPool1d", (2, 3), (2, 3, 7)),
        ("LPPool2d", (1.5, 2, 1), (2, 3, 4, 5)),
        ("LPPool3d", (3, 2), (1, 2, 4, 4, 4)),
        ("LPPool1d", (float("inf"), 2), (2, 3, 7)),
        ("LPPool2d", (float("inf"), 2, 1), (2, 3, 4, 5)),
        ("LPPool2d", (-float("inf"), 2), (2, 3, 4, 5)),
        ("LPPool3d", (float("inf"), 2), (1, 2, 4, 4, 4)),
        ("Unfold", ((2, 3), 1, 1, 2), (2, 3, 5, 6)),
        ("Fold", ((4, 5), (2, 2)), (2, 12, 12)),
    ],
)
def test_layers_match_torch(layer, args, shape, torch):
    finite_lp = layer.startswith("LP") and not np.isinf(args[0])
    x = RNG.uniform(0.1, 2.0, shape) if finite_lp else RNG.standard_normal(shape)
    ours, theirs = getattr(nn, layer)(*args), getattr(torch.nn, layer)(*args)
    check_fn(ours, theirs, torch, x)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adaptive_max_indices_and_unpool_match_torch(nd, torch):
    shape = (2, 3) + (4, 6, 4)[:nd]
    x = RNG.standard_normal(shape)
    ours_v, ours_i = getattr(F, f"adaptive_max_pool{nd}d")(tensor.tensor(x), 3, return_indices=True)
    ref_v, ref_i = getattr(torch.nn.functional, f"adaptive_max_pool{nd}d")(torch.tensor(x), 3, return_indices=True)
    assert_close(ours_v, ref_v.numpy())
    assert (ours_i.numpy() == ref_i.numpy()).all()
    pool, unpool = getattr(nn, f"MaxPool{nd}d")(2, return_indices=True), getattr(nn, f"MaxUnpool{nd}d")(2)
    t_pool, t_unpool = (
        getattr(torch.nn, f"MaxPool{nd}d")(2, return_indices=True),
        getattr(torch.nn, f"MaxUnpool{nd}d")(2),
    )
    v, i = pool(tensor.tensor(x))
    tv, ti = t_pool(torch.tensor(x))
    check_fn(lambda t: unpool(t, i), lambda t: t_unpool(t, ti), torch, tv.numpy())


@pytest.mark.parametrize(
    "options", [{}, {"stride": 2, "padding": 1, "output_padding": 1}, {"groups": 2, "dilation": 2}]
)
def test_conv_transpose3d_matches_torch(options, torch):
    ours, theirs = nn.ConvTranspose3d(4, 6, 3, **options), torch.nn.ConvTranspose3d(4, 6, 3, **options)
    copy_state(ours, theirs, torch)
    run_both(ours, theirs, torch, RNG.standard_normal((2, 4, 3, 4, 3)).astype("float32"), rtol=1e-4, atol=1e-5)


def test_unpool_checks_indices_shape():
    with pytest.raises(RuntimeError, match="Expected shape of indices to be same as that of the input"):
        F.max_unpool2d(tensor.zeros(1, 1, 2, 2), tensor.zeros(1, 1, 2, 3, dtype=tensor.int64), 2)


@pytest.mark.parametrize("bad", [5, -1])
def test_unpool_refuses_an_index_outside_the_output_as_torch(torch, bad):
    indices = [[[0, bad]]]
    with pytest.raises(RuntimeError, match=f"Found an invalid max index: {bad}"):
        torch.nn.functional.max_unpool1d(torch.ones(1, 1, 2), torch.tensor(indices), 2)
    with pytest.raises(RuntimeError, match=f"Found an invalid max index: {bad}"):
        F.max_unpool1d(tensor.ones(1, 1, 2), tensor.tensor(indices), 2)


@pytest.mark.parametrize(
    "nd, shape, kernel, size",
    [(2, (2, 3, 9, 11), (2, 3), (5, 6)), (2, (3, 8, 8), 2, (4, 5)), (3, (1, 2, 7, 8, 9), 2, (4, 5, 3))],
)
def test_fractional_max_pool_matches_torch_given_the_samples(nd, shape, kernel, size, torch):
    x = RNG.standard_normal(shape)
    samples = RNG.uniform(0, 1, ((shape[0] if len(shape) == nd + 2 else 1), shape[-nd - 1], nd))
    layer = getattr(nn, f"FractionalMaxPool{nd}d")(kernel, size, _random_samples=tensor.tensor(samples))
    ref = getattr(torch.nn, f"FractionalMaxPool{nd}d")(kernel, size, _random_samples=torch.tensor(samples))
    check_fn(layer, ref, torch, x)
    ours_i = getattr(F, f"fractional_max_pool{nd}d")(
        tensor.tensor(x), kernel, size, return_indices=True, _random_samples=tensor.tensor(samples)
    )[1]
    ref_i = getattr(torch.nn.functional, f"fractional_max_pool{nd}d")(
        torch.tensor(x), kernel, size, return_indices=True, _random_samples=torch.tensor(samples)
    )[1]
    assert (ours_i.numpy() == ref_i.numpy()).all()


def test_fractional_max_pool_ratio_and_errors():
    out = nn.FractionalMaxPool2d(2, output_ratio=0.5)(tensor.randn(1, 2, 10, 8))
    assert out.shape == (1, 2, 5, 4)
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(RuntimeError, match="too large for input size"):
        F.fractional_max_pool2d(tensor.zeros(1, 1, 4, 4), 3, 3)


@pytest.mark.parametrize("return_indices", [False, True])
@pytest.mark.parametrize("size", [(0, 2), (2, 0), 0])
def test_adaptive_max_pool_to_an_empty_output(size, return_indices, torch):
    x = RNG.standard_normal((1, 2, 4, 4)).astype("float32")
    ours = F.adaptive_max_pool2d(tensor.tensor(x), size, return_indices)
    theirs = torch.nn.functional.adaptive_max_pool2d(torch.from_numpy(x), size, return_indices)
    for a, b in zip(ours, theirs) if return_indices else [(ours, theirs)]:
        assert_close(a, b.numpy())


def test_lp_pool_of_an_all_zero_window_has_a_zero_gradient(torch):
    x = np.array([[[0.0, 0.0, 1.0, 2.0]]], dtype="float32")
    ours = tensor.tensor(x, requires_grad=True)
    F.lp_pool1d(ours, 2, 2).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    torch.nn.functional.lp_pool1d(theirs, 2, 2).sum().backward()
    assert_close(ours.grad, theirs.grad.numpy())


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_keeps_tuples_as_pytorch(nd, torch):
    ours, theirs = getattr(nn, f"MaxUnpool{nd}d")(2), getattr(torch.nn, f"MaxUnpool{nd}d")(2)
    assert (ours.kernel_size, ours.stride, ours.padding) == (theirs.kernel_size, theirs.stride, theirs.padding)
    assert repr(ours) == repr(theirs)


def test_max_unpool_refuses_an_output_size_of_the_wrong_length():
    x, idx = tensor.ones(1, 1, 2, 2), tensor.zeros(1, 1, 2, 2, dtype=tensor.int64)
    with pytest.raises(ValueError, match="2 or 4 elements"):
        F.max_unpool2d(x, idx, 2, output_size=(2, 5, 5))
