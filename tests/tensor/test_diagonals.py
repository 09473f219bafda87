"""``tensor/ops/diagonals.py``: ``diagonal`` is a view as PyTorch's (writes through it reach the
input, and train), ``diag`` of a matrix a copy."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close


@pytest.mark.parametrize("offset, dim1, dim2", [(0, 0, 1), (1, 0, 1), (-1, 1, 0), (1, 0, 2), (-5, 0, 1)])
def test_diagonal_is_a_view_with_torchs_geometry(torch, device, offset, dim1, dim2):
    ours, theirs = tensor.arange(24.0, device=device).reshape(2, 3, 4), torch.arange(24.0).reshape(2, 3, 4)
    view, expected = ours.diagonal(offset, dim1, dim2), theirs.diagonal(offset, dim1, dim2)
    assert view.shape == tuple(expected.shape) and view.stride() == expected.stride()
    assert view._base is ours._base  # the root tensor, as torch's _base
    view.mul_(-1)
    expected.mul_(-1)
    assert ours.tolist() == theirs.tolist()


def test_writes_through_a_diagonal_train_as_torch(torch, device):
    grads = []
    for lib, dev in ((tensor, device), (torch, "cpu")):
        a = lib.tensor(np.arange(9.0).reshape(3, 3) / 7, dtype=lib.float32, device=dev, requires_grad=True)
        b = a * 1
        b.diagonal().mul_(3)
        b.diagonal(1)[0] = 0.5
        (b**2).sum().backward()
        grads.append((b.detach().cpu().numpy(), a.grad.cpu().numpy()))
    for ours, theirs in zip(*grads):
        assert_close(ours, theirs, rtol=1e-6)


def test_diag_of_a_matrix_is_a_copy_as_torch(device):
    x = tensor.zeros(3, 3, device=device)
    d = tensor.diag(x)
    d[0] = 5.0
    assert x.sum().item() == 0.0 and d._base is None
