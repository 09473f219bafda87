"""Sliding-window primitives (``tensor.ops.window``): unfold_windows / im2col and fold_windows.

Values against loop-based numpy references, the adjoint identity between unfold and fold,
gradients with float64 ``gradcheck`` and ``gradgradcheck`` (each primitive's derivative is
the other one), and non-contiguous and channel-major inputs.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import autograd
import tensor
from tensor.ops.window import (
    fold_windows,
    im2col,
    unfold_windows,
    window_output_shape,
)
from tests.helpers import assert_close

RNG = np.random.default_rng(7)

# (name, spatial shape, kernel, dilation, padding per dim, stride)
GEOMETRIES = [
    ("1d", (7,), (3,), (1,), ((1, 1),), (2,)),
    ("2d_plain", (5, 6), (2, 3), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ("2d_all", (7, 8), (3, 2), (2, 1), ((1, 2), (0, 1)), (2, 3)),
    ("2d_kernel_is_input", (3, 4), (3, 4), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ("2d_tiled", (4, 6), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 2)),
    ("3d", (4, 3, 5), (2, 2, 3), (1, 1, 2), ((1, 0), (0, 1), (1, 1)), (1, 2, 2)),
]
IDS = [g[0] for g in GEOMETRIES]


def _reference_unfold(x, kernel, dilation, padding, stride):
    # Loop over output positions and kernel offsets: obviously correct, slow.
    nd = len(kernel)
    padded = np.pad(x, [(0, 0), (0, 0)] + list(padding))
    out_shape = window_output_shape(x.shape[2:], kernel, dilation, padding, stride)
    out = np.zeros(x.shape[:2] + tuple(kernel) + out_shape, x.dtype)
    for k in itertools.product(*(range(n) for n in kernel)):
        for o in itertools.product(*(range(n) for n in out_shape)):
            src = tuple(oi * s + ki * d for oi, ki, s, d in zip(o, k, stride, dilation))
            out[(slice(None), slice(None)) + k + o] = padded[(slice(None), slice(None)) + src]
    assert out.ndim == 2 + 2 * nd
    return out


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES, ids=IDS)
def test_unfold_windows_matches_reference(device, name, spatial, kernel, dilation, padding, stride):
    x = RNG.standard_normal((2, 3) + spatial)
    out = unfold_windows(tensor.tensor(x, device=device), kernel, dilation, padding, stride)
    assert_close(out, _reference_unfold(x, kernel, dilation, padding, stride))


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES, ids=IDS)
def test_im2col_is_the_batch_innermost_matrix(device, name, spatial, kernel, dilation, padding, stride):
    x = RNG.standard_normal((2, 3) + spatial)
    ref = _reference_unfold(x, kernel, dilation, padding, stride)  # (N, C, *k, *out)
    nd = len(kernel)
    order = tuple(range(1, 2 + 2 * nd)) + (0,)  # (C, *k, *out, N)
    expected = ref.transpose(order).reshape(3 * int(np.prod(kernel)), -1)
    assert_close(im2col(tensor.tensor(x, device=device), kernel, dilation, padding, stride), expected)


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES, ids=IDS)
def test_fold_is_the_adjoint_of_unfold(device, name, spatial, kernel, dilation, padding, stride):
    # <unfold(x), y> == <x, fold(y)> for every x, y: fold is the exact transpose of unfold.
    x = RNG.standard_normal((2, 3) + spatial)
    y = RNG.standard_normal(_reference_unfold(x, kernel, dilation, padding, stride).shape)
    lhs = (_reference_unfold(x, kernel, dilation, padding, stride) * y).sum()
    folded = fold_windows(tensor.tensor(y, device=device), spatial, kernel, dilation, padding, stride)
    assert folded.shape == x.shape
    np.testing.assert_allclose((folded.cpu().numpy() * x).sum(), lhs, rtol=1e-10)


@pytest.mark.parametrize("name,spatial,kernel,dilation,padding,stride", GEOMETRIES[:4], ids=IDS[:4])
def test_unfold_fold_im2col_gradcheck_and_gradgradcheck(name, spatial, kernel, dilation, padding, stride):
    x = tensor.tensor(RNG.standard_normal((1, 2) + spatial), requires_grad=True)
    cols_shape = unfold_windows(x, kernel, dilation, padding, stride).shape
    y = tensor.tensor(RNG.standard_normal(cols_shape), requires_grad=True)
    assert autograd.gradcheck(lambda t: unfold_windows(t, kernel, dilation, padding, stride), (x,))
    assert autograd.gradgradcheck(lambda t: unfold_windows(t, kernel, dilation, padding, stride), (x,))
    assert autograd.gradcheck(lambda t: fold_windows(t, spatial, kernel, dilation, padding, stride), (y,))
    assert autograd.gradgradcheck(lambda t: fold_windows(t, spatial, kernel, dilation, padding, stride),
                                  (y,))
    assert autograd.gradcheck(lambda t: im2col(t, kernel, dilation, padding, stride), (x,))
    assert autograd.gradgradcheck(lambda t: im2col(t, kernel, dilation, padding, stride), (x,))


def test_unfold_of_non_contiguous_input(device):
    x = RNG.standard_normal((3, 2, 6, 5))
    t = tensor.tensor(x, device=device).permute(1, 0, 3, 2)  # (2, 3, 5, 6), strided
    assert not t.is_contiguous()
    args = ((2, 2), (1, 1), ((1, 0), (0, 1)), (2, 1))
    expected = _reference_unfold(np.ascontiguousarray(x.transpose(1, 0, 3, 2)), *args)
    assert_close(unfold_windows(t, *args), expected)


def test_unfold_output_is_a_writable_copy_even_when_the_windows_are_contiguous(device):
    x = tensor.ones(1, 1, 3, 3, device=device)
    out = unfold_windows(x, (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1))  # the window view is x itself
    out.add_(1)
    assert x.sum().item() == 9.0 and out.sum().item() == 18.0


def test_unfold_of_empty_batch(device):
    out = unfold_windows(tensor.zeros(0, 2, 4, 4, device=device), (2, 2), (1, 1), ((0, 0), (0, 0)), (2, 2))
    assert out.shape == (0, 2, 2, 2, 2, 2)


def test_fold_of_batch_innermost_windows(device):
    # im2col's gradient arrives stored (C, *k, *out, N); fold must give the same sums.
    cols = RNG.standard_normal((3, 2, 2, 4, 3, 2))
    t = tensor.tensor(cols, device=device).movedim(-1, 0)  # (N, C, *k, *out) view
    args = ((2, 2), (1, 1), ((1, 0), (0, 1)), (1, 1))
    out = fold_windows(t, (4, 3), *args)
    expected = fold_windows(tensor.tensor(np.ascontiguousarray(np.moveaxis(cols, -1, 0))), (4, 3), *args)
    assert_close(out, expected)


def test_window_output_shape():
    assert window_output_shape((28, 28), (5, 5), (1, 1), ((0, 0), (0, 0)), (1, 1)) == (24, 24)
    assert window_output_shape((7,), (3,), (2,), ((1, 2),), (2,)) == (3,)
    assert window_output_shape((2,), (5,), (1,), ((0, 0),), (1,)) == (-2,)
