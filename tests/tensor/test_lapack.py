"""LAPACK through numpy's bundled OpenBLAS (``tensor/_openblas.py``, ``tensor/_lapack.py``): the
lookup, and LU/LDL on both CPU paths (LAPACK, and the numpy fallback forced by
``DISTRIB_NO_LAPACK=1``) equal to torch in every LAPACK dtype: pivots and ``info`` exactly.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tensor
from tensor import _backend, _lapack, _openblas
from tests.helpers import assert_close
from tests.tensor._linalg_oracle import random

DTYPES = {np.float32: 1e-4, np.float64: 1e-10, np.complex64: 1e-4, np.complex128: 1e-10}


@pytest.fixture(params=["lapack", "numpy"])
def path(request, monkeypatch) -> str:
    """Which CPU implementation runs: LAPACK (skipped without the library) or the numpy fallback."""
    if request.param == "numpy":
        monkeypatch.setenv(_openblas.DISABLE_ENV, "1")
        assert _backend.lapack(np) is None
    elif _openblas.library() is None:
        pytest.skip("this numpy bundles no OpenBLAS")
    else:
        assert _backend.lapack(np) is not None
    return request.param


def test_openblas_lookup(monkeypatch):
    if _openblas.library() is None:
        pytest.skip("this numpy bundles no OpenBLAS")
    for routine in (_openblas.lapack("zhetrf"), _openblas.lapack("dgetrf"), _openblas.cblas("sgemm")):
        assert routine is not None and routine.int_type in (ctypes.c_int64, ctypes.c_int32)
    assert _openblas.lapack("no_such_routine") is None
    assert _backend.lapack(object()) is None  # not numpy: a GPU keeps its own code
    monkeypatch.setenv(_openblas.DISABLE_ENV, "1")
    assert _openblas.lapack("dgetrf") is None and _openblas.cblas("sgemm") is None


def test_lu_matches_torch(path, torch):
    for dtype, tol in DTYPES.items():
        complex_ = np.dtype(dtype).kind == "c"
        for shape in [(2, 5, 5), (3, 6, 4), (4, 7)]:
            a = random(*shape, complex_=complex_).astype(dtype)
            LU, pivots, info = tensor.linalg.lu_factor_ex(tensor.tensor(a))
            tLU, tpivots, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a))
            assert LU.dtype.name == str(tLU.dtype).removeprefix("torch.")
            assert pivots.tolist() == tpivots.tolist() and info.tolist() == tinfo.tolist()
            assert_close(LU, tLU.numpy(), atol=tol, rtol=tol)
    singular = np.zeros((2, 3, 3))
    singular[1] = np.arange(9.0).reshape(3, 3)
    _, pivots, info = tensor.linalg.lu_factor_ex(tensor.tensor(singular))
    _, tpivots, tinfo = torch.linalg.lu_factor_ex(torch.tensor(singular))
    assert pivots.tolist() == tpivots.tolist() and info.tolist() == tinfo.tolist() == [1, 3]


def test_ldl_matches_torch(path, torch):
    for dtype, tol in DTYPES.items():
        complex_ = np.dtype(dtype).kind == "c"
        for hermitian in (False, True) if complex_ else (False,):
            a = random(2, 6, 6, complex_=complex_)
            a = a + (a.conj() if hermitian else a).swapaxes(-1, -2)
            a[0, range(6), range(6)] = 0  # 2x2 blocks
            a[1, 0, 0] = 2 * a[1, 1, 1].real
            a = a.astype(dtype)
            LD, pivots, info = tensor.linalg.ldl_factor_ex(tensor.tensor(a), hermitian=hermitian)
            tLD, tpivots, tinfo = torch.linalg.ldl_factor_ex(torch.tensor(a), hermitian=hermitian)
            assert pivots.tolist() == tpivots.tolist() and info.tolist() == tinfo.tolist()
            assert_close(LD, tLD.numpy(), atol=tol, rtol=tol)
            b = random(2, 6, 3, complex_=complex_).astype(dtype)
            x = tensor.linalg.ldl_solve(LD, pivots, tensor.tensor(b), hermitian=hermitian)
            want = torch.linalg.ldl_solve(tLD, tpivots, torch.tensor(b), hermitian=hermitian)
            assert x.is_contiguous()
            assert_close(x, want.numpy(), atol=100 * tol, rtol=100 * tol)
    LD, pivots, info = tensor.linalg.ldl_factor_ex(tensor.zeros(2, 3, 3, dtype=tensor.float64))
    assert info.tolist() == [1, 1] and pivots.tolist() == [[1, 2, 3]] * 2
    assert np.isinf(tensor.linalg.ldl_solve(LD, pivots, tensor.ones(2, 3, 1, dtype=tensor.float64)).numpy()).any()


def test_solve_triangular_matches_torch(path, torch):
    for dtype, tol in DTYPES.items():
        complex_ = np.dtype(dtype).kind == "c"
        a = (random(2, 5, 5, complex_=complex_) + 4 * np.eye(5)).astype(dtype)
        b = random(2, 5, 3, complex_=complex_).astype(dtype)
        for upper, unit in [(True, False), (False, True)]:
            ours = tensor.linalg.solve_triangular(tensor.tensor(a), tensor.tensor(b), upper=upper, unitriangular=unit)
            theirs = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=upper, unitriangular=unit)
            assert ours.is_contiguous()
            assert_close(ours, theirs.numpy(), atol=10 * tol, rtol=10 * tol)
    x = tensor.linalg.solve_triangular(tensor.zeros(1, 1), tensor.ones(1, 2), upper=True)
    assert np.isinf(x.numpy()).all()  # a zero on the diagonal: inf, as LAPACK's trsm


def test_lapack_refuses_pivots_it_would_index_outside_with():
    if _backend.lapack(np) is None:
        pytest.skip("this numpy bundles no LAPACK")
    valid = np.array([[-2, -2, 3], [1, -3, -3]], dtype=np.int32)
    assert _lapack._bunch_kaufman_pivots(valid) and _lapack._bunch_kaufman_pivots(valid[:0])
    for bad in ([[1, 2, -3]], [[-1, 2, 3]], [[-2, -2, -3]], [[1, 4, 3]], [[0, 2, 3]]):
        assert not _lapack._bunch_kaufman_pivots(np.array(bad, dtype=np.int32))
        assert _lapack.sytrs(np.eye(3)[None], np.array(bad), np.ones((1, 3, 1)), False) is None
    assert _lapack.row_permutation(np.array([[2, 3, 3]]), 3).tolist() == [[1, 2, 0]]
    assert _lapack.row_permutation(np.array([[4, 3, 3]]), 3) is None
    assert _lapack.row_permutation(np.array([[0, 3, 3]]), 3) is None


def test_lu_unpack_matches_torch(path, torch):
    a = random(3, 6, 4)
    for ours, theirs in zip(tensor.linalg.lu(tensor.tensor(a)), torch.linalg.lu(torch.tensor(a)), strict=True):
        assert_close(ours, theirs.numpy(), atol=1e-12, rtol=1e-10)


def test_large_batches_of_tiny_matrices_stay_with_numpy():
    if _backend.lapack(np) is None:
        pytest.skip("this numpy bundles no LAPACK")
    assert (
        _lapack.getrf(np.ones((17, 4, 4))) is None
        and _lapack.trsm(np.ones((17, 4, 4)), np.ones((17, 4, 1)), True, False) is None
    )
    assert _lapack.getrf(np.ones((16, 4, 4))) is not None and _lapack.getrf(np.ones((17, 16, 16))) is not None


def test_factoring_leaves_a_fortran_ordered_input_unchanged(path):
    # LAPACK factors in place: an input already in Fortran order (a transposed view, as autograd
    # passes) must be copied, not handed to getrf/sytrf as its own memory.
    for factor in (tensor.linalg.lu_factor, tensor.linalg.ldl_factor):
        a = np.asfortranarray(random(6, 6) + 6 * np.eye(6))
        a = a + a.T  # symmetric, for ldl
        a = np.asfortranarray(a)
        before = a.copy()
        factor(tensor.from_numpy(a))
        assert np.array_equal(a, before), factor.__name__
