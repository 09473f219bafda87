"""max/min (with and without dim), amax/amin and argmax/argmin.

Values, indices, dtypes and shapes are checked against numpy on every device (function and
method forms, dim/keepdim, negative dims, non-contiguous, empty and 0-d inputs); gradients
with float64 ``gradcheck`` and, for ties, against torch.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(9)
X234 = RNG.permutation(24).reshape(2, 3, 4) / 4.0 - 3.0  # distinct values: no ties
TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])

EXTREMA = [("max", np.max, np.argmax), ("min", np.min, np.argmin)]


@pytest.mark.parametrize("name,vref,iref", EXTREMA, ids=[c[0] for c in EXTREMA])
@pytest.mark.parametrize("dim", [0, 1, -1, -3], ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
def test_max_min_with_dim_returns_values_and_indices(device, name, vref, iref, dim, keepdim):
    x = X234.astype(np.float32)
    t = tensor.tensor(x, device=device)
    expected_values = vref(x, axis=dim, keepdims=keepdim)
    expected_indices = iref(x, axis=dim, keepdims=keepdim)
    for out in (getattr(tensor, name)(t, dim, keepdim), getattr(t, name)(dim=dim, keepdim=keepdim)):
        values, indices = out  # a namedtuple unpacks like a tuple
        assert_close(out.values, expected_values)
        assert_close(out.indices, expected_indices)
        assert values is out.values and indices is out.indices


@pytest.mark.parametrize("name,vref,iref", EXTREMA, ids=[c[0] for c in EXTREMA])
def test_max_min_without_dim_is_the_extreme_element(device, name, vref, iref):
    t = tensor.tensor(X234.astype(np.float32), device=device)
    assert_close(getattr(t, name)(), np.float32(vref(X234)))
    assert_close(getattr(tensor, name)(t.transpose(0, 2)), np.float32(vref(X234)))


@pytest.mark.parametrize("name,vref,iref", EXTREMA, ids=[c[0] for c in EXTREMA])
def test_max_min_with_tensor_is_elementwise(device, name, vref, iref):
    a, b = X234, X234[::-1].copy()
    out = getattr(tensor, name)(tensor.tensor(a, device=device), tensor.tensor(b, device=device))
    assert_close(out, (np.maximum if name == "max" else np.minimum)(a, b))


@pytest.mark.parametrize("name,vref,iref", EXTREMA, ids=[c[0] for c in EXTREMA])
def test_max_min_non_contiguous(device, name, vref, iref):
    t = tensor.tensor(X234, device=device).transpose(0, 2)
    values, indices = getattr(t, name)(1)
    assert_close(values, vref(X234.transpose(2, 1, 0), axis=1))
    assert_close(indices, iref(X234.transpose(2, 1, 0), axis=1))


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (0, False), (-1, True)], ids=str)
def test_max_min_gradcheck(device, name, dim, keepdim):
    x = tensor.tensor(X234, device=device, requires_grad=True)
    if dim is None:
        fn = getattr(tensor, name)
    else:
        def fn(a):
            return getattr(a, name)(dim, keepdim).values
    assert autograd.gradcheck(fn, x)
    assert autograd.gradgradcheck(fn, x)


# (name, expression): gradients with ties follow torch (all-reduce max splits evenly,
# max(dim) sends it to the returned index, amax splits evenly along the dim).
TIE_CASES = [
    ("max_all", lambda x: x.max()),
    ("min_all", lambda x: x.min()),
    ("max_dim", lambda x: x.max(1).values),
    ("min_dim", lambda x: x.min(0).values),
    ("amax_dim", lambda x: x.amax(1)),
    ("amin_dims", lambda x: x.amin((0, 1))),
    ("amax_all", lambda x: x.amax()),
]


@pytest.mark.parametrize("name,fn", TIE_CASES, ids=[c[0] for c in TIE_CASES])
def test_ties_values_indices_and_grads_match_torch(device, torch, name, fn):
    t = tensor.tensor(TIES, device=device, requires_grad=True)
    p = torch.tensor(TIES, requires_grad=True)
    ours, theirs = fn(t), fn(p)
    assert_close(ours, theirs.detach().numpy())
    (g,) = autograd.grad(ours.sum(), t)
    (tg,) = torch.autograd.grad(theirs.sum(), p)
    assert_close(g, tg.numpy())


@pytest.mark.parametrize("name", ["max", "min"])
def test_tie_indices_match_torch(device, torch, name):
    for dim in (0, 1):
        ours = getattr(tensor.tensor(TIES, device=device), name)(dim).indices
        theirs = getattr(torch.tensor(TIES), name)(dim).indices
        assert_close(ours, theirs.numpy())


# ---------------------------------------------------------------- amax / amin

@pytest.mark.parametrize("name,ref", [("amax", np.max), ("amin", np.min)])
@pytest.mark.parametrize("dim", [(), 0, -1, (0, 2), (-1, -2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
def test_amax_amin_match_numpy(device, name, ref, dim, keepdim):
    x = X234.astype(np.float32)
    t = tensor.tensor(x, device=device)
    axis = None if dim == () else dim
    expected = np.asarray(ref(x, axis=axis, keepdims=keepdim))
    assert_close(getattr(tensor, name)(t, dim, keepdim), expected)
    assert_close(getattr(t, name)(dim=dim, keepdim=keepdim), expected)
    assert autograd.gradcheck(lambda a: getattr(a, name)(dim, keepdim),
                              tensor.tensor(X234, device=device, requires_grad=True))


def test_amax_integer_dtype_kept(device):
    x = np.array([[3, -1, 7], [2, 2, 0]], np.int32)
    assert_close(tensor.tensor(x, device=device).amax(1), np.array([7, 2], np.int32))


# ---------------------------------------------------------------- argmax / argmin

@pytest.mark.parametrize("name,ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("dim", [None, 0, 1, -1], ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["drop", "keep"])
def test_argmax_argmin_match_numpy(device, name, ref, dim, keepdim):
    t = tensor.tensor(X234, device=device)
    expected = np.asarray(ref(X234, axis=dim, keepdims=keepdim)).astype(np.int64)
    out = getattr(tensor, name)(t, dim, keepdim)
    assert_close(out, expected)
    assert_close(getattr(t, name)(dim=dim, keepdim=keepdim), expected)
    assert not tensor.tensor(X234, device=device, requires_grad=True).argmax().requires_grad


def test_argmax_ties_and_non_contiguous_match_torch(device, torch):
    for dim in (None, 0, 1):
        t, p = tensor.tensor(TIES, device=device), torch.tensor(TIES)
        assert_close(t.argmax(dim), p.argmax(dim).numpy())
        assert_close(t.T.argmin(dim), p.T.argmin(dim).numpy())


# ---------------------------------------------------------------- empty and 0-d

def test_zero_dim_max_min_arg(device, torch):
    t, p = tensor.tensor(2.5, device=device), torch.tensor(2.5)
    for dim in (0, -1):
        values, indices = t.max(dim)
        assert_close(values, p.max(dim).values.numpy())
        assert_close(indices, p.max(dim).indices.numpy())
        assert_close(t.min(dim, keepdim=True).values, p.min(dim, keepdim=True).values.numpy())
        assert_close(t.argmax(dim), p.argmax(dim).numpy())
    assert_close(t.argmin(), p.argmin().numpy())
    assert_close(t.max(), p.max().numpy())


def test_zero_dim_max_gradient(device):
    t = tensor.tensor(2.5, dtype=tensor.float64, device=device, requires_grad=True)
    assert autograd.gradcheck(lambda a: a.max(0).values, t)


def test_empty_reduction_over_non_empty_dim(device, torch):
    t, p = tensor.zeros(0, 3, device=device), torch.zeros(0, 3)
    assert_close(t.amax(1), p.amax(1).numpy())
    assert_close(t.max(1).values, p.max(1).values.numpy())
    assert_close(t.max(1).indices, p.max(1).indices.numpy())
    assert_close(t.argmin(1), p.argmin(1).numpy())


# (expression, error type, message): PyTorch's errors for reducing over an empty dim.
EMPTY_ERRORS = [
    (lambda t: t.amax(), RuntimeError, r"amax\(\): Expected reduction dim to be specified for input.numel"),
    (lambda t: t.max(), RuntimeError, r"max\(\): Expected reduction dim to be specified for input.numel"),
    (lambda t: t.amin(0), IndexError, r"amin\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda t: t.max(0), IndexError, r"max\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda t: t.min(-2), IndexError, r"min\(\): Expected reduction dim 0 to have non-zero size"),
    (lambda t: t.argmax(), IndexError, r"argmax\(\): Expected reduction dim to be specified"),
    (lambda t: t.argmin(0), IndexError, r"argmin\(\): Expected reduction dim 0 to have non-zero size"),
]


@pytest.mark.parametrize("expr,error,match", EMPTY_ERRORS, ids=[e[2].split("\\")[0] + str(i)
                                                                for i, e in enumerate(EMPTY_ERRORS)])
def test_empty_reduction_errors_match_torch(device, torch, expr, error, match):
    with pytest.raises(error, match=match):
        expr(tensor.zeros(0, 3, device=device))
    with pytest.raises(error, match=match):
        expr(torch.zeros(0, 3))
