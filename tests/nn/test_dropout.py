"""Dropout, Dropout1d/2d/3d and AlphaDropout: the drop rate, the 1/(1-p) scaling, gradients
through the same mask, identity in eval mode, reproducibility through the tensor RNG seed,
channel-wise masks, torch's warnings and masks for unbatched and odd inputs, repr, and p
validation. (In-place forms: test_inplace_activation.py.)"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_rate_and_scaling(device, p):
    x = tensor.ones(200, 500, device=device)
    out = F.dropout(x, p).cpu().numpy()
    kept = out != 0
    assert abs(1 - kept.mean() - p) < 0.01
    np.testing.assert_allclose(out[kept], 1 / (1 - p), rtol=1e-6)
    assert out.dtype == np.float32


def test_dropout_gradient_uses_the_same_mask(device):
    x = tensor.randn(50, 40, device=device, requires_grad=True)
    out = F.dropout(x, 0.3)
    out.sum().backward()
    mask = (out.detach().cpu().numpy() != 0)
    assert_close(x.grad, (mask / 0.7).astype(np.float32), rtol=1e-6)


def test_dropout_is_reproducible_with_the_tensor_seed():
    x = tensor.ones(64)
    tensor.manual_seed(123)
    first = F.dropout(x, 0.5)
    tensor.manual_seed(123)
    assert_close(F.dropout(x, 0.5), first)
    assert not np.array_equal(F.dropout(x, 0.5).numpy(), first.numpy())


def test_eval_mode_and_p_zero_are_identity(device):
    x = tensor.randn(4, 5, device=device)
    layer = nn.Dropout(0.5)
    layer.eval()
    assert layer(x) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 0.7, training=False) is x
    assert_close(F.dropout(x, 1.0), np.zeros((4, 5), np.float32))
    assert_close(F.alpha_dropout(x, 1.0, training=True), np.zeros((4, 5), np.float32))


def test_dropout_on_empty_0d_and_float64(device):
    assert F.dropout(tensor.empty(0, 3, device=device), 0.5).shape == (0, 3)
    out = F.dropout(tensor.tensor(2.0, dtype=tensor.float64, device=device), 0.5)
    assert out.shape == () and out.dtype is tensor.float64 and out.item() in (0.0, 4.0)


def test_inplace_dropout_overwrites_the_input():
    x = tensor.ones(100)
    out = nn.Dropout(0.5, inplace=True)(x)
    assert out is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}


# (layer, input shape, how many leading dims get their own draw), as torch 2.13 decides it
CHANNEL_CASES = [
    (nn.Dropout1d, (8, 16, 5), 2), (nn.Dropout1d, (16, 5), 1),
    (nn.Dropout2d, (8, 16, 3, 3), 2), (nn.Dropout2d, (16, 4, 4), 2), (nn.Dropout2d, (16, 40), 2),
    (nn.Dropout2d, (4, 16, 3, 2, 2), 2),
    (nn.Dropout3d, (4, 16, 2, 3, 3), 2), (nn.Dropout3d, (16, 2, 3, 3), 1), (nn.Dropout3d, (16, 3, 3), 1),
    (nn.Dropout3d, (64,), 1),
]


@pytest.mark.parametrize("cls, shape, lead", CHANNEL_CASES)
def test_channel_dropout_zeroes_whole_channels(cls, shape, lead):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = cls(0.5)(tensor.ones(*shape)).numpy()
    per_channel = out.reshape(shape[:lead] + (-1,))
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0 < (per_channel == 0).all(-1).mean() < 1


def _warnings(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("cls, shape, lead", CHANNEL_CASES)
def test_channel_dropout_warns_as_torch(torch, cls, shape, lead):
    ours = _warnings(lambda: cls(0.5)(tensor.ones(*shape)))
    assert ours == _warnings(lambda: getattr(torch.nn, cls.__name__)(0.5)(torch.ones(*shape)))


def test_channel_dropout_warning_points_at_the_caller():
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d") as caught:
        F.dropout2d(tensor.ones(3, 4))
    assert caught[0].filename == __file__


@pytest.mark.parametrize("name, shape", [("dropout2d", (5,)), ("dropout2d", ()), ("dropout3d", ())])
def test_feature_dropout_of_too_few_dims_is_refused_as_torch(torch, name, shape):
    message = "Feature dropout requires at least 2 dimensions in the input"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=message):
            getattr(torch.nn.functional, name)(torch.ones(shape))
        with pytest.raises(RuntimeError, match=message):
            getattr(F, name)(tensor.ones(shape))
        assert getattr(F, name)(tensor.ones(shape), training=False).shape == shape


def test_alpha_dropout_keeps_mean_and_variance():
    x = tensor.randn(200, 500)
    out = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False, as PyTorch


@pytest.mark.parametrize("cls", [nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout])
def test_repr_matches_torch(torch, cls):
    assert repr(cls()) == repr(getattr(torch.nn, cls.__name__)())
    assert repr(cls(0.25, inplace=True)) == repr(getattr(torch.nn, cls.__name__)(0.25, inplace=True))


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.Dropout(1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: nn.Dropout2d(-0.1), ValueError, "but got -0.1"),
    (lambda: F.dropout(tensor.ones(3), -0.5), ValueError, "but got -0.5"),
    (lambda: F.dropout1d(tensor.ones(3, 3, 3, 3)), RuntimeError,
     r"dropout1d: Expected 2D or 3D input, but received a 4D input. Note that dropout1d exists"),
    (lambda: F.dropout1d(tensor.ones(3), -0.5), ValueError, "but got -0.5"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
