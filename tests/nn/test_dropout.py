"""Dropout, Dropout1d/2d and AlphaDropout: the drop rate, the 1/(1-p) scaling, gradients
through the same mask, identity in eval mode, reproducibility through the tensor RNG seed,
channel-wise masks, repr, and p validation."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_rate_and_scaling(device, p):
    x = tensor.ones(200, 500, device=device)
    out = F.dropout(x, p).numpy()
    kept = out != 0
    assert abs(1 - kept.mean() - p) < 0.01
    np.testing.assert_allclose(out[kept], 1 / (1 - p), rtol=1e-6)
    assert out.dtype == np.float32


def test_dropout_gradient_uses_the_same_mask(device):
    x = tensor.randn(50, 40, device=device, requires_grad=True)
    out = F.dropout(x, 0.3)
    out.sum().backward()
    mask = (out.detach().numpy() != 0)
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


def test_dropout_on_empty_0d_and_float64(device):
    assert F.dropout(tensor.empty(0, 3, device=device), 0.5).shape == (0, 3)
    out = F.dropout(tensor.tensor(2.0, dtype=tensor.float64, device=device), 0.5)
    assert out.shape == () and out.dtype is tensor.float64 and out.item() in (0.0, 4.0)


def test_inplace_dropout_overwrites_the_input():
    x = tensor.ones(100)
    out = nn.Dropout(0.5, inplace=True)(x)
    assert out is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}


@pytest.mark.parametrize("cls, shape", [(nn.Dropout2d, (8, 16, 3, 3)), (nn.Dropout1d, (8, 16, 5)),
                                        (nn.Dropout2d, (16, 4, 4))])
def test_channel_dropout_zeroes_whole_channels(cls, shape):
    out = cls(0.5)(tensor.ones(*shape)).numpy()
    per_channel = out.reshape(shape[: -2 if cls is nn.Dropout2d else -1] + (-1,))
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    assert 0 < (per_channel == 0).all(-1).mean() < 1


def test_alpha_dropout_keeps_mean_and_variance():
    x = tensor.randn(200, 500)
    out = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False, as PyTorch


@pytest.mark.parametrize("cls", [nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.AlphaDropout])
def test_repr_matches_torch(torch, cls):
    assert repr(cls()) == repr(getattr(torch.nn, cls.__name__)())
    assert repr(cls(0.25, inplace=True)) == repr(getattr(torch.nn, cls.__name__)(0.25, inplace=True))


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.Dropout(1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: nn.Dropout2d(-0.1), ValueError, "but got -0.1"),
    (lambda: F.dropout(tensor.ones(3), -0.5), ValueError, "but got -0.5"),
    (lambda: F.dropout2d(tensor.ones(3, 3), 0.5), RuntimeError, "Expected 3D or 4D input, but received a 2D input"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
