"""``linalg.ldl_factor(_ex)`` and ``linalg.ldl_solve`` (``tensor/ops/ldl.py``) against torch:
``LD``, ``pivots`` and ``info`` equal LAPACK's Bunch-Kaufman results (1x1 and 2x2 blocks) for
real symmetric, complex symmetric and complex Hermitian inputs, batched, on every device.
"""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close
from tests.tensor._linalg_oracle import random


def _symmetric(n, complex_, hermitian, kind):
    a = random(3, n, n, complex_=complex_)
    a = a + (a.conj() if hermitian else a).swapaxes(-1, -2)
    if kind == "zero diagonal":  # forces 2x2 blocks
        a[..., range(n), range(n)] = 0
    if kind == "definite":
        a = a @ (a.conj() if hermitian else a).swapaxes(-1, -2)
    return a


def test_ldl_matches_torch(device, torch):
    cases = [(False, False), (True, False), (True, True)]
    for complex_, hermitian in cases:
        for n in (1, 2, 5, 9):
            for kind in ("indefinite", "zero diagonal", "definite"):
                a = _symmetric(n, complex_, hermitian, kind)
                LD, pivots, info = tensor.linalg.ldl_factor_ex(tensor.tensor(a, device=device), hermitian=hermitian)
                tLD, tpivots, tinfo = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
                assert pivots.dtype is tensor.int32
                assert pivots.cpu().numpy().tolist() == tpivots.numpy().tolist()
                assert info.cpu().numpy().tolist() == tinfo.numpy().tolist()
                assert_close(LD, tLD.numpy(), atol=1e-10, rtol=1e-10)
                if not info.any():
                    b = random(3, n, 2, complex_=complex_)
                    x = tensor.linalg.ldl_solve(LD, pivots, tensor.tensor(b, device=device), hermitian=hermitian)
                    want = torch.linalg.ldl_solve(tLD, tpivots, torch.tensor(b), hermitian=hermitian)
                    assert_close(x, want.numpy(), atol=1e-9, rtol=1e-9)
                    assert_close(tensor.tensor(a) @ x.cpu(), b, atol=1e-8)


def test_ldl_of_empty_matrices(torch):
    for shape in [(0, 0), (2, 0, 0), (0, 2, 2)]:
        LD, pivots, info = tensor.linalg.ldl_factor_ex(tensor.zeros(shape))
        tLD, tpivots, tinfo = torch.linalg.ldl_factor_ex(torch.zeros(shape))
        assert (LD.shape, pivots.shape, info.shape) == (tuple(tLD.shape), tuple(tpivots.shape), tuple(tinfo.shape))
        x = tensor.linalg.ldl_solve(LD, pivots, tensor.zeros(shape[:-1] + (1,)))
        assert x.shape == tuple(torch.linalg.ldl_solve(tLD, tpivots, torch.zeros(shape[:-1] + (1,))).shape)


def test_ldl_errors_and_singular_input():
    LD, pivots, info = tensor.linalg.ldl_factor_ex(tensor.zeros(2, 3, 3, dtype=tensor.float64))
    assert info.tolist() == [1, 1] and pivots.tolist() == [[1, 2, 3]] * 2
    with pytest.raises(tensor.linalg.LinAlgError, match="D\\[1,1\\] is zero \\(batch element 0\\)"):
        tensor.linalg.ldl_factor(tensor.zeros(2, 3, 3))
    with pytest.raises(RuntimeError, match="is singular"):
        tensor.linalg.ldl_factor_ex(tensor.zeros(3, 3), check_errors=True)
    with pytest.raises(RuntimeError, match="square matrices"):
        tensor.linalg.ldl_factor(tensor.ones(2, 3))
    LD, pivots = tensor.linalg.ldl_factor(tensor.eye(3))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tensor.linalg.ldl_solve(LD, pivots, tensor.ones(2, 1))
    with pytest.raises(RuntimeError, match="pivots of dtype int32"):
        tensor.linalg.ldl_solve(LD, pivots.long(), tensor.ones(3, 1))
    with pytest.raises(RuntimeError, match="same dtype"):
        tensor.linalg.ldl_solve(LD, pivots, tensor.ones(3, 1, dtype=tensor.float64))
    assert np.isinf(
        tensor.linalg.ldl_solve(tensor.zeros(1, 1), tensor.ones(1, dtype=tensor.int32), tensor.ones(1, 1)).numpy()
    ).all()
