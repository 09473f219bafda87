"""Embedding and F.embedding against torch: lookups of any index shape, gradients
(accumulated for repeated indices, zero for padding_idx, scaled by frequency), max_norm
renormalisation, from_pretrained (frozen or not), init, repr and errors."""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close
from tests.nn.oracle import copy_state

RNG = np.random.default_rng(13)


def _compare(torch, ours, theirs, indices):
    copy_state(ours, theirs, torch)
    out = ours(tensor.tensor(indices))
    ref = theirs(torch.from_numpy(np.asarray(indices)))
    assert_close(out, ref.detach().numpy())
    cot = RNG.standard_normal(ref.shape).astype(np.float32)
    (out * tensor.tensor(cot)).sum().backward()
    (ref * torch.from_numpy(cot)).sum().backward()
    assert_close(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(ours.weight, theirs.weight.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("indices", [[1, 3, 3, 0], [[0, 2], [2, 2]], 4, np.zeros((0, 3), np.int64)])
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                    {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0}])
def test_embedding_matches_torch(torch, indices, kwargs):
    ours, theirs = nn.Embedding(5, 3, **kwargs), torch.nn.Embedding(5, 3, **kwargs)
    _compare(torch, ours, theirs, np.asarray(indices, dtype=np.int64))


def test_padding_row_is_zero_initialised_and_gets_no_gradient(device):
    layer = nn.Embedding(4, 2, padding_idx=1).to(device)
    assert_close(layer.weight[1], np.zeros(2, np.float32))
    layer(tensor.tensor([1, 1, 0], device=device)).sum().backward()
    assert_close(layer.weight.grad, np.array([[1, 1], [0, 0], [0, 0], [0, 0]], np.float32))


def test_default_init_is_standard_normal():
    w = nn.Embedding(1000, 50).weight.detach().numpy()
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1) < 0.01


def test_functional_embedding_gradcheck_and_gradgradcheck():
    weight = tensor.randn(5, 3, dtype=tensor.float64, requires_grad=True)
    idx = tensor.tensor([[0, 4], [4, 2]])
    # (a referenced padding row would, by design, not get its true gradient)
    assert autograd.gradcheck(lambda w: F.embedding(idx, w, padding_idx=1), (weight,))
    assert autograd.gradgradcheck(lambda w: F.embedding(idx, w) ** 2, (weight,))


def test_from_pretrained(torch):
    data = tensor.tensor(RNG.standard_normal((4, 3)).astype(np.float32))
    frozen = nn.Embedding.from_pretrained(data)
    assert not frozen.weight.requires_grad and frozen.num_embeddings == 4 and frozen.embedding_dim == 3
    assert_close(frozen(tensor.tensor([3, 0])), data.numpy()[[3, 0]])
    trainable = nn.Embedding.from_pretrained(data, freeze=False, padding_idx=0)
    assert trainable.weight.requires_grad
    assert repr(trainable) == repr(torch.nn.Embedding.from_pretrained(torch.from_numpy(data.numpy()), padding_idx=0))


def test_max_norm_renormalises_looked_up_rows_in_place():
    layer = nn.Embedding(3, 2, max_norm=1.0)
    with tensor.no_grad():
        layer.weight.copy_(tensor.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    layer(tensor.tensor([0, 1]))
    norms = np.linalg.norm(layer.weight.detach().numpy(), axis=1)
    np.testing.assert_allclose(norms, [1.0, 0.5, 10.0], rtol=1e-5)


@pytest.mark.parametrize("kwargs, expected", [
    ({}, "Embedding(10, 3)"),
    ({"padding_idx": 0, "max_norm": 2.0, "norm_type": 1.0, "scale_grad_by_freq": True},
     "Embedding(10, 3, padding_idx=0, max_norm=2.0, norm_type=1.0, scale_grad_by_freq=True)"),
])
def test_repr_matches_torch(torch, kwargs, expected):
    assert repr(nn.Embedding(10, 3, **kwargs)) == expected == repr(torch.nn.Embedding(10, 3, **kwargs))


@pytest.mark.parametrize("call, error, message", [
    (lambda: nn.Embedding(3, 2)(tensor.tensor([0, 3])), IndexError, "index out of range in self"),
    (lambda: nn.Embedding(3, 2)(tensor.tensor([-1])), IndexError, "index -1"),
    (lambda: nn.Embedding(3, 2)(tensor.tensor([0.0])), RuntimeError, "'indices' to have one of the following"),
    (lambda: nn.Embedding(3, 2, padding_idx=3), AssertionError, "Padding_idx must be within num_embeddings"),
    (lambda: nn.Embedding(3, 2, padding_idx=-4), AssertionError, "Padding_idx must be within num_embeddings"),
    (lambda: nn.Embedding.from_pretrained(tensor.ones(3)), AssertionError, "expected to be 2-dimensional"),
    (lambda: nn.Embedding(3, 2, _weight=tensor.ones(2, 2)), AssertionError, "Shape of weight does not match"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("norm_type", [float("inf"), float("-inf"), 3.0])
def test_max_norm_renormalizes_with_any_norm_type(norm_type, torch):
    w = np.array([[3.0, -4.0, 1.0], [0.5, 0.2, -2.0]])
    ours, theirs = tensor.tensor(w.copy()), torch.tensor(w.copy())
    F.embedding(tensor.tensor([0, 1]), ours, max_norm=1.0, norm_type=norm_type)
    torch.nn.functional.embedding(torch.tensor([0, 1]), theirs, max_norm=1.0, norm_type=norm_type)
    assert_close(ours, theirs.numpy())


@pytest.mark.parametrize("dtype", [tensor.uint8, tensor.int16])
def test_indices_must_be_int64_or_int32(dtype):
    with pytest.raises(RuntimeError, match="Long, Int"):
        F.embedding(tensor.tensor([1], dtype=dtype), tensor.ones(3, 2))
