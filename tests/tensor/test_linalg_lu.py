"""The LU family and triangular solves (``tensor/ops/lu.py``) against torch.

Values, pivots and ``info`` equal torch's (LAPACK's getrf conventions) for real and complex,
square, wide, tall and batched inputs, on every device; gradients agree with torch through a
random real loss and pass a float64 ``gradcheck``/``gradgradcheck``.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close
from tests.tensor._linalg_oracle import grads_match, random

SHAPES = [(4, 4), (2, 3, 5, 5), (3, 6, 4), (4, 7), (40, 40), (0, 3, 3), (2, 0, 0), (3, 0)]


def test_lu_factor_matches_torch(device, torch):
    for shape in SHAPES:
        for complex_ in (False, True):
            a = random(*shape, complex_=complex_)
            LU, pivots, info = tensor.linalg.lu_factor_ex(tensor.tensor(a, device=device))
            tLU, tpivots, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a))
            assert pivots.dtype is tensor.int32 and info.dtype is tensor.int32
            assert_close(LU, tLU.numpy(), atol=1e-12, rtol=1e-10)
            assert pivots.cpu().numpy().tolist() == tpivots.numpy().tolist()
            assert info.cpu().numpy().tolist() == tinfo.numpy().tolist()
            P, L, U = tensor.linalg.lu(tensor.tensor(a, device=device))
            for ours, theirs in zip((P, L, U), torch.linalg.lu(torch.tensor(a)), strict=True):
                assert_close(ours, theirs.resolve_conj().numpy(), atol=1e-12, rtol=1e-10)
            LU2, pivots2 = tensor.lu(tensor.tensor(a, device=device))
            assert_close(LU2, tLU.numpy(), atol=1e-12, rtol=1e-10)


def test_lu_of_singular_matrices(device, torch):
    a = np.zeros((2, 3, 3))
    a[0, 0, 1] = 1.0
    a[1] = np.arange(9.0).reshape(3, 3)
    LU, pivots, info = tensor.linalg.lu_factor_ex(tensor.tensor(a, device=device))
    tLU, tpivots, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a))
    assert_close(LU, tLU.numpy(), atol=1e-12)
    assert pivots.cpu().numpy().tolist() == tpivots.numpy().tolist()
    assert info.cpu().numpy().tolist() == tinfo.numpy().tolist() == [1, 3]
    with pytest.raises(tensor.linalg.LinAlgError, match=r"U\[1,1\] is zero \(batch element 0\)"):
        tensor.linalg.lu_factor(tensor.tensor(a, device=device))
    with pytest.raises(RuntimeError, match="U\\[3,3\\] is zero"):
        tensor.linalg.lu_factor_ex(tensor.tensor(a[1], device=device), check_errors=True)
    assert tensor.lu(tensor.tensor(a, device=device), get_infos=True)[2].cpu().numpy().tolist() == [1, 3]


def test_lu_without_pivoting(device):
    a = random(3, 4, 4) + 4 * np.eye(4)
    LU, pivots, _ = tensor.linalg.lu_factor_ex(tensor.tensor(a, device=device), pivot=False)
    assert pivots.cpu().numpy().tolist() == [[1, 2, 3, 4]] * 3
    L = np.tril(LU.cpu().numpy(), -1) + np.eye(4)
    assert_close(tensor.tensor(L @ np.triu(LU.cpu().numpy())), a, atol=1e-12)


@pytest.mark.filterwarnings("ignore:torch.lu_solve is deprecated:UserWarning")
def test_lu_solve_and_unpack_match_torch(device, torch):
    for complex_ in (False, True):
        a, b = random(2, 4, 4, complex_=complex_), random(2, 4, 3, complex_=complex_)
        tLU, tpivots = torch.linalg.lu_factor(torch.tensor(a))
        LU, pivots = tensor.tensor(tLU.numpy(), device=device), tensor.tensor(tpivots.numpy(), device=device)
        B = tensor.tensor(b, device=device)
        for left in (True, False):
            for adjoint in (False, True):
                rhs, trhs = (B, torch.tensor(b)) if left else (B.mT, torch.tensor(b).mT)
                ours = tensor.linalg.lu_solve(LU, pivots, rhs, left=left, adjoint=adjoint)
                theirs = torch.linalg.lu_solve(tLU, tpivots, trhs, left=left, adjoint=adjoint)
                assert_close(ours, theirs.resolve_conj().numpy(), atol=1e-10, rtol=1e-10)
        assert_close(tensor.lu_solve(B, LU, pivots), torch.lu_solve(torch.tensor(b), tLU, tpivots).numpy(), atol=1e-10)
        for ours, theirs in zip(tensor.lu_unpack(LU, pivots), torch.lu_unpack(tLU, tpivots), strict=True):
            assert_close(ours, theirs.resolve_conj().numpy(), atol=0)
        P, L, U = tensor.lu_unpack(LU, pivots, unpack_data=False)
        assert L.shape == U.shape == (0,) and P.shape == (2, 4, 4)


def test_solve_triangular_matches_torch(device, torch):
    for complex_ in (False, True):
        a, b = random(2, 4, 4, complex_=complex_) + 4 * np.eye(4), random(4, 3, complex_=complex_)
        for upper in (True, False):
            for left in (True, False):
                for unit in (True, False):
                    rhs = b if left else b.T
                    ours = tensor.linalg.solve_triangular(
                        tensor.tensor(a, device=device),
                        tensor.tensor(rhs, device=device),
                        upper=upper,
                        left=left,
                        unitriangular=unit,
                    )
                    theirs = torch.linalg.solve_triangular(
                        torch.tensor(a), torch.tensor(rhs), upper=upper, left=left, unitriangular=unit
                    )
                    assert_close(ours, theirs.resolve_conj().numpy(), atol=1e-12, rtol=1e-10)
    singular = tensor.linalg.solve_triangular(
        tensor.zeros(2, 2, device=device), tensor.ones(2, 1, device=device), upper=True
    )
    assert not bool(singular.isfinite().all())  # inf/nan as LAPACK's trsm, no error


def test_lu_gradients_match_torch(torch):
    for complex_ in (False, True):
        for shape in [(2, 4, 4), (3, 5), (5, 3)]:
            a = random(*shape, complex_=complex_)
            grads_match(torch, lambda x: tensor.linalg.lu_factor(x).LU, lambda x: torch.linalg.lu_factor(x).LU, [a])
            grads_match(torch, lambda x: tuple(tensor.linalg.lu(x)), lambda x: tuple(torch.linalg.lu(x)), [a])
        a, b = random(2, 4, 4, complex_=complex_) + 4 * np.eye(4), random(4, 4, complex_=complex_)
        for upper in (True, False):
            for left in (True, False):
                grads_match(
                    torch,
                    lambda x, y, u=upper, lf=left: tensor.linalg.solve_triangular(x, y, upper=u, left=lf),
                    lambda x, y, u=upper, lf=left: torch.linalg.solve_triangular(x, y, upper=u, left=lf),
                    [a, b],
                )
        tLU, tpivots = torch.linalg.lu_factor(torch.tensor(random(2, 4, 4, complex_=complex_)))
        pivots = tensor.tensor(tpivots.numpy())
        for left in (True, False):
            for adjoint in (False, True):
                grads_match(
                    torch,
                    lambda x, y, lf=left, ad=adjoint: tensor.linalg.lu_solve(x, pivots, y, left=lf, adjoint=ad),
                    lambda x, y, lf=left, ad=adjoint: torch.linalg.lu_solve(x, tpivots, y, left=lf, adjoint=ad),
                    [tLU.numpy(), random(2, 4, 4, complex_=complex_)],
                    atol=1e-9,
                )


def test_lu_gradcheck():
    for shape in [(3, 3), (2, 3, 5), (5, 3)]:
        a = tensor.tensor(random(*shape), requires_grad=True)
        assert autograd.gradcheck(lambda x: tensor.linalg.lu_factor(x).LU, (a,))
    assert autograd.gradgradcheck(lambda x: tensor.linalg.lu_factor(x).LU, (a,))
    LU, pivots = tensor.linalg.lu_factor(tensor.tensor(random(4, 4)))
    b = tensor.tensor(random(4, 2), requires_grad=True)
    assert autograd.gradcheck(lambda x, y: tensor.linalg.lu_solve(x, pivots, y), (LU.requires_grad_(), b))


def test_lu_errors():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tensor.linalg.lu_factor(tensor.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got int64"):
        tensor.linalg.lu(tensor.ones(3, 3, dtype=tensor.int64))
    for dtype in (tensor.float16, tensor.bfloat16):
        with pytest.raises(NotImplementedError, match=f"not implemented for {dtype.name}"):
            tensor.linalg.lu_factor(tensor.eye(3, dtype=dtype))
    LU, pivots = tensor.linalg.lu_factor(tensor.eye(3))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        tensor.linalg.lu_solve(LU, pivots, tensor.ones(2, 1))
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be an integer tensor"):
        tensor.lu_unpack(LU, pivots.double())
    with pytest.raises(RuntimeError, match="same dtype"):
        tensor.linalg.solve_triangular(tensor.eye(2), tensor.ones(2, 1, dtype=tensor.float64), upper=True)


def test_tensor_methods_are_the_functions():
    A, b = tensor.tensor(random(3, 3)), tensor.tensor(random(3, 2))
    LU, pivots = A.lu()
    assert_close(LU, tensor.lu(A)[0].numpy(), atol=0)
    assert_close(b.lu_solve(LU, pivots), tensor.lu_solve(b, LU, pivots).numpy(), atol=0)
    a, tau = A.geqrf()
    assert_close(a.orgqr(tau), tensor.orgqr(a, tau).numpy(), atol=0)
    assert_close(a.ormqr(tau, b), tensor.ormqr(a, tau, b).numpy(), atol=0)
    signal = tensor.tensor(random(40))
    spectrum = signal.stft(8, return_complex=True)
    assert_close(spectrum, tensor.stft(signal, 8, return_complex=True).numpy(), atol=0)
    assert_close(spectrum.istft(8), tensor.istft(spectrum, 8).numpy(), atol=0)
