"""Max-pool primitives (``tensor.ops.pool``): window_argmax, take_windows, put_windows and
max_pool_indices.

Indices against a loop-based numpy reference (first maximum on ties, the last NaN, padding
never wins), take/put against explicit gathers and scatters, the adjoint identity between
them, exact gradients for non-finite values, gradients with float64 ``gradcheck`` and
``gradgradcheck``, and outputs stored like their inputs.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import autograd
import tensor
from tensor.ops.pool import max_pool_indices, put_windows, take_windows, window_argmax
from tests.helpers import assert_close
from tests.tensor.test_window import GEOMETRIES, IDS, _reference_unfold

RNG = np.random.default_rng(11)


def _reference_windows(x, kernel, dilation, padding, stride, fill):
    """(N, C, K, *out): every window's elements, kernel offsets flattened row-major."""
    padded = np.pad(x, [(0, 0), (0, 0)] + list(padding), constant_values=fill)
    windows = _reference_unfold(padded, kernel, dilation, ((0, 0),) * len(kernel), stride)
    return windows.reshape(x.shape[:2] + (-1,) + windows.shape[2 + len(kernel):])


def _reference_max_indices(x, kernel, dilation, padding, stride):
    local = _reference_windows(x, kernel, dilation, padding, stride, -np.inf).argmax(axis=2)  # first max
    nd = len(kernel)
    offsets = np.array(list(itertools.product(*(range(k) for k in kernel))))
    result = np.zeros(local.shape, np.int64)
    for o in itertools.product(*(range(s) for s in local.shape[2:])):
        k = offsets[local[(slice(None), slice(None)) + o]]  # (n, c, nd)
        pos = [o[i] * stride[i] - padding[i][0] + k[..., i] * dilation[i] for i in range(nd)]
        result[(slice(None), slice(None)) + o] = np.ravel_multi_index(pos, x.shape[2:])
    return result


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES, ids=IDS)
def test_max_pool_indices_match_reference(device, name, spatial, kernel, dilation, padding, stride):
    x = RNG.standard_normal((2, 3) + spatial)
    out = max_pool_indices(tensor.tensor(x, device=device), kernel, dilation, padding, stride)
    assert_close(out, _reference_max_indices(x, kernel, dilation, padding, stride))


def test_max_pool_indices_with_one_by_one_windows_and_an_empty_batch(device):
    x = tensor.tensor(RNG.standard_normal((1, 2, 3, 3)), device=device)
    out = max_pool_indices(x, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1))
    assert_close(out, np.broadcast_to(np.arange(9).reshape(3, 3), (1, 2, 3, 3)))
    empty = max_pool_indices(tensor.zeros(0, 2, 4, 4, device=device), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 2))
    assert empty.shape == (0, 2, 2, 2)


def test_max_pool_indices_pick_the_first_of_ties_and_the_last_nan(device):
    x = np.array([[[[1.0, 1.0, 2.0, 2.0], [0.0, 1.0, np.nan, np.nan]]]])
    out = max_pool_indices(tensor.tensor(x, device=device), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 2))
    assert out.tolist() == [[[[0, 7]]]]  # first 1.0 at flat 0; the last NaN (PyTorch's rule)


def test_max_pool_indices_on_integers(device):
    x = np.array([[[5, -3, 7, 7]]], dtype=np.int64)
    out = max_pool_indices(tensor.tensor(x, device=device), (2,), (1,), ((1, 1),), (2,))
    assert out.tolist() == [[[0, 2, 3]]]  # the padding (the dtype's minimum) never wins


def test_window_argmax_uses_a_wider_dtype_for_large_windows(device):
    x = tensor.tensor(RNG.standard_normal((1, 1, 12, 12)), device=device)
    arg = window_argmax(x, (12, 12), (1, 1), ((0, 0), (0, 0)), (1, 1))
    assert arg.dtype is tensor.int32
    assert arg.item() == int(np.argmax(x.cpu().numpy()))


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES, ids=IDS)
def test_take_windows_gathers_and_put_windows_is_its_adjoint(device, name, spatial, kernel, dilation, padding,
                                                             stride):
    x = RNG.standard_normal((2, 3) + spatial)
    windows = _reference_windows(x, kernel, dilation, padding, stride, 0.0)
    arg = RNG.integers(0, windows.shape[2], (2, 3) + windows.shape[3:]).astype(np.int8)
    expected = np.take_along_axis(windows, arg[:, :, None].astype(np.int64), axis=2)[:, :, 0]
    arg_t = tensor.tensor(arg, device=device)
    taken = take_windows(tensor.tensor(x, device=device), arg_t, kernel, dilation, padding, stride)
    assert_close(taken, expected)
    # <take(x), y> == <x, put(y)>: put is the exact transpose of take.
    y = RNG.standard_normal(expected.shape)
    put = put_windows(tensor.tensor(y, device=device), arg_t, spatial, kernel, dilation, padding, stride)
    assert put.shape == x.shape
    np.testing.assert_allclose((put.cpu().numpy() * x).sum(), (expected * y).sum(), rtol=1e-10)


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES, ids=IDS)
def test_take_windows_of_the_argmax_is_the_window_maximum(device, name, spatial, kernel, dilation, padding,
                                                          stride):
    x = tensor.tensor(RNG.standard_normal((2, 3) + spatial), device=device)
    arg = window_argmax(x, kernel, dilation, padding, stride)
    fast = take_windows(x, arg, kernel, dilation, padding, stride, is_argmax=True)
    expected = _reference_windows(x.cpu().numpy(), kernel, dilation, padding, stride, -np.inf).max(axis=2)
    assert_close(fast, expected)


def test_put_windows_passes_non_finite_gradients_only_to_the_chosen_element(device):
    g = tensor.tensor([[[[np.inf, np.nan]]]], device=device)
    arg = tensor.tensor(np.array([[[[3, 0]]]], np.int8), device=device)
    out = put_windows(g, arg, (2, 4), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 2)).cpu().numpy()
    expected = np.zeros((1, 1, 2, 4))
    expected[0, 0, 1, 1], expected[0, 0, 0, 2] = np.inf, np.nan
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (1, 2, 3, 0)])
def test_put_windows_stores_its_result_like_the_gradient(device, order):
    data = RNG.standard_normal(tuple((2, 3, 2, 2)[i] for i in order))
    g = tensor.tensor(data, device=device).permute(*np.argsort(order).tolist())  # logical (2, 3, 2, 2)
    arg = tensor.tensor(RNG.integers(0, 4, (2, 3, 2, 2)).astype(np.int8), device=device)
    out = put_windows(g, arg, (4, 4), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 2))
    strides = out.stride()
    assert sorted(range(4), key=lambda i: -strides[i]) == list(order)


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES[:4], ids=IDS[:4])
def test_take_and_put_windows_gradcheck_and_gradgradcheck(name, spatial, kernel, dilation, padding, stride):
    x = tensor.tensor(RNG.standard_normal((1, 2) + spatial), requires_grad=True)
    arg = window_argmax(x.detach(), kernel, dilation, padding, stride)
    v = tensor.tensor(RNG.standard_normal(tuple(arg.shape)), requires_grad=True)
    geometry = (kernel, dilation, padding, stride)
    assert autograd.gradcheck(lambda t: take_windows(t, arg, *geometry), (x,))
    assert autograd.gradgradcheck(lambda t: take_windows(t, arg, *geometry, is_argmax=True), (x,))
    assert autograd.gradcheck(lambda t: put_windows(t, arg, spatial, *geometry), (v,))
    assert autograd.gradgradcheck(lambda t: put_windows(t, arg, spatial, *geometry), (v,))
