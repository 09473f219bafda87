"""gumbel_softmax, feature_alpha_dropout, linear_cross_entropy and the compatibility layers
(LinearCrossEntropyLoss, NLLLoss2d, Container, DataParallel)."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.fn_oracle import check_fn

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 4))
W = RNG.standard_normal((3, 4))
T = np.array([0, 2, 1, 1, 0])


@pytest.mark.parametrize("kwargs", [{}, {"reduction": "sum", "label_smoothing": 0.1}, {"ignore_index": 1}])
def test_linear_cross_entropy_matches_torch(kwargs, torch):
    check_fn(
        lambda x, w, t: F.linear_cross_entropy(x, w, t, **kwargs),
        lambda x, w, t: torch.nn.functional.linear_cross_entropy(x, w, t, **kwargs),
        torch,
        X,
        W,
        T,
    )


def test_linear_cross_entropy_layer_matches_torch(torch):
    ours, theirs = nn.LinearCrossEntropyLoss(4, 3, bias=True), torch.nn.LinearCrossEntropyLoss(4, 3, bias=True)
    ours.load_state_dict({k: tensor.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = X.astype("float32")
    assert_close(ours(tensor.tensor(x), tensor.tensor(T)), theirs(torch.tensor(x), torch.tensor(T)).detach().numpy())


def test_gumbel_softmax_samples_and_straight_through():
    logits = tensor.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    assert set(np.unique(hard.detach().numpy())) <= {0.0, 1.0}
    assert_close(hard.detach().sum(-1), np.ones(4000))
    frequencies = hard.detach().numpy().mean(0)
    assert np.abs(frequencies - [0.7, 0.2, 0.1]).max() < 0.04
    hard.sum().backward()
    assert logits.grad is not None
    soft = F.gumbel_softmax(logits, tau=2.0)
    assert_close(soft.detach().sum(-1), np.ones(4000), rtol=1e-6)


def test_feature_alpha_dropout_drops_whole_channels():
    x = tensor.ones(8, 16, 3, 3)
    y = F.feature_alpha_dropout(x, 0.5, training=True).numpy()
    per_channel = y.reshape(8, 16, -1)
    assert (per_channel == per_channel[..., :1]).all() and len(np.unique(per_channel)) == 2
    assert nn.FeatureAlphaDropout(0.5).eval()(x) is x


def test_compatibility_layers():
    with pytest.warns(UserWarning, match="NLLLoss2d has been deprecated"):
        loss = nn.NLLLoss2d()
    logp = tensor.tensor(RNG.standard_normal((2, 3, 2, 2)))
    target = tensor.tensor(RNG.integers(0, 3, (2, 2, 2)))
    assert loss(logp, target).item() == nn.NLLLoss()(logp, target).item()
    with pytest.warns(UserWarning, match="nn.Container is deprecated"):
        box = nn.Container(fc=nn.Linear(2, 2))
    assert list(dict(box.named_children())) == ["fc"]
    model = nn.Linear(2, 3)
    wrapped = nn.DataParallel(model, device_ids=[0])
    x = tensor.ones(4, 2)
    assert_close(wrapped(x), model(x).detach().numpy())
    with pytest.raises(NotImplementedError, match="DataParallel over several GPUs"):
        nn.DataParallel(model, device_ids=[0, 1])


@pytest.mark.parametrize("size, channels", [(3, 7), (5, 6), (2, 4), (1, 3)])
def test_cross_map_lrn2d_forward_matches_torch_and_gradient_is_exact(size, channels, torch):
    from autograd import gradcheck

    x = RNG.standard_normal((2, channels, 3, 3))
    ours = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2)
    theirs = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2)
    assert_close(ours(tensor.tensor(x)), theirs(torch.tensor(x)).numpy(), rtol=1e-12, atol=1e-12)
    assert gradcheck(ours, (tensor.tensor(x[:1, :, :2, :2], requires_grad=True),))


def test_conv_tbc_and_native_channel_shuffle_match_torch(torch):
    x, w, b = RNG.standard_normal((7, 2, 3)), RNG.standard_normal((3, 3, 4)), RNG.standard_normal(4)
    check_fn(lambda *t: F.conv_tbc(*t, 1), lambda *t: torch.nn.functional.conv_tbc(*t, 1), torch, x, w, b)
    y = RNG.standard_normal((2, 6, 2))
    check_fn(
        lambda t: F.native_channel_shuffle(t, 3),
        lambda t: torch.nn.functional.native_channel_shuffle(t, 3),
        torch,
        y,
        grads=False,
    )
