"""softmax and log_softmax: values against numpy and torch, stability, dtypes and gradients."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(3)
X234 = RNG.uniform(-3.0, 3.0, (2, 3, 4))


def _np_log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _np_softmax(x, axis):
    return np.exp(_np_log_softmax(x, axis))


OPS = [("softmax", _np_softmax), ("log_softmax", _np_log_softmax)]
OP_IDS = [c[0] for c in OPS]


@pytest.mark.parametrize("name,ref", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3], ids=str)
def test_forward_matches_numpy(device, name, ref, dim):
    x = X234.astype(np.float32)
    t = tensor.tensor(x, device=device)
    expected = ref(x, dim).astype(np.float32)
    assert_close(getattr(tensor, name)(t, dim), expected)
    assert_close(getattr(t, name)(dim), expected)
    assert_close(getattr(t, name)(dim=dim), expected)


@pytest.mark.parametrize("name,ref", OPS, ids=OP_IDS)
def test_non_contiguous_empty_and_zero_dim(device, name, ref):
    t = tensor.tensor(X234, device=device).transpose(0, 2)
    assert_close(getattr(t, name)(1), ref(X234.transpose(2, 1, 0), 1), rtol=1e-12)
    empty = tensor.zeros(0, 4, device=device)
    with np.errstate(divide="ignore"):  # log of the (empty-dim) sum of zero terms
        assert_close(getattr(empty, name)(1), np.zeros((0, 4), np.float32))
        assert_close(getattr(empty, name)(0), np.zeros((0, 4), np.float32))
    scalar = tensor.tensor(0.7, device=device)
    assert_close(getattr(scalar, name)(0), np.float32(1.0 if name == "softmax" else 0.0))


@pytest.mark.parametrize("name,ref", OPS, ids=OP_IDS)
def test_large_and_infinite_inputs_are_stable(device, torch, name, ref):
    x = np.array([[1000.0, 999.0, -1000.0], [-np.inf, 0.0, 1.0], [-1e4, -1e4 - 1, -1e4 - 2]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warnings from numpy
        out = getattr(tensor.tensor(x, device=device), name)(1)
    assert_close(out, getattr(torch.tensor(x), name)(1).numpy())


@pytest.mark.parametrize("name,ref", OPS, ids=OP_IDS)
def test_dtypes_match_torch(device, torch, name, ref):
    x = np.array([[1, 2, 3], [0, 0, 5]])
    cases = [(x, None), (x.astype(np.float16), None), (x.astype(np.float32), tensor.float64),
             (x, tensor.float64)]
    for data, dtype in cases:
        torch_dtype = None if dtype is None else getattr(torch, dtype.name)
        if np.issubdtype(data.dtype, np.integer) and dtype is None:
            theirs = getattr(torch.tensor(data).float(), name)(1)  # torch needs a float input here
        else:
            theirs = getattr(torch.tensor(data), name)(1, dtype=torch_dtype)
        ours = getattr(tensor.tensor(data, device=device), name)(1, dtype=dtype)
        assert_close(ours, theirs.numpy(), rtol=1e-3)


@pytest.mark.parametrize("name,ref", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dim", [0, -1], ids=str)
def test_gradcheck_and_gradgradcheck(device, name, ref, dim):
    x = tensor.tensor(X234[:, :2, :3], device=device, requires_grad=True)
    assert autograd.gradcheck(lambda a: getattr(a, name)(dim), x)
    assert autograd.gradgradcheck(lambda a: getattr(a, name)(dim), x)
    assert autograd.gradcheck(lambda a: getattr(a.transpose(0, 2), name)(dim), x)


@pytest.mark.parametrize("name,ref", OPS, ids=OP_IDS)
@pytest.mark.parametrize("scale", [1.0, 500.0], ids=["normal", "large"])
def test_values_and_grads_match_torch(device, torch, name, ref, scale):
    x = X234 * scale
    t = tensor.tensor(x, device=device, requires_grad=True)
    p = torch.tensor(x, requires_grad=True)
    ours, theirs = getattr(t, name)(1), getattr(p, name)(1)
    assert_close(ours, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    seed = RNG.standard_normal(x.shape)
    (g,) = autograd.grad(ours, t, tensor.tensor(seed, device=device))
    (tg,) = torch.autograd.grad(theirs, p, torch.tensor(seed))
    assert_close(g, tg.numpy(), rtol=1e-10, atol=1e-12)


def test_softmax_rows_sum_to_one(device):
    out = tensor.tensor(X234, device=device).softmax(-1)
    assert_close(out.sum(-1), np.ones((2, 3)), rtol=1e-12)


@pytest.mark.parametrize("name,ref", OPS, ids=OP_IDS)
@pytest.mark.parametrize("dim", [3, -4], ids=str)
def test_bad_dim_raises(device, name, ref, dim):
    t = tensor.tensor(X234, device=device)
    with pytest.raises(IndexError, match=rf"Dimension out of range \(expected to be in range of \[-3, 2\], "
                                         rf"but got {dim}\)"):
        getattr(tensor, name)(t, dim)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_bfloat16_input_stays_bfloat16_computed_in_float32_like_torch(torch, name):
    import nn.functional as F  # noqa: PLC0415

    x = RNG.uniform(-3.0, 3.0, (3, 7)).astype(np.float32)
    ours = getattr(F, name)(tensor.tensor(x).bfloat16(), -1)
    theirs = getattr(torch.nn.functional, name)(torch.tensor(x).bfloat16(), -1)
    assert ours.dtype is tensor.bfloat16
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=8e-3, atol=1e-3)
