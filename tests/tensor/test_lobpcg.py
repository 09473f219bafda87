"""``tensor.lobpcg`` (``tensor/_lobpcg.py``): the extreme eigenpairs of symmetric and generalized
problems against ``numpy.linalg.eigh`` (torch's own lobpcg is far slower and no more exact), with a
start block, a preconditioner, ``niter``, eigenvalue and eigenvector gradients, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close
from tests.tensor._linalg_oracle import RNG

M = 40


def _spd_with_gap():
    Q, _ = np.linalg.qr(RNG.standard_normal((M, M)))
    values = np.concatenate([np.linspace(1, 10, M - 3), [20, 30, 40]])
    return (Q * values) @ Q.T


def _same_span(X, Y):
    overlap = np.abs(X.T @ Y)
    assert_close(tensor.tensor(overlap), np.eye(X.shape[1]), atol=1e-6)


def test_lobpcg_extreme_eigenpairs(device):
    A = _spd_with_gap()
    values, vectors = np.linalg.eigh(A)
    for largest in (True, False):
        for k in (1, 3):
            E, X = tensor.lobpcg(tensor.tensor(A, device=device), k=k, largest=largest)
            want = values[::-1][:k] if largest else values[:k]
            assert_close(E, want, atol=1e-8, rtol=1e-8)
            _same_span(X.cpu().numpy(), vectors[:, ::-1][:, :k] if largest else vectors[:, :k])
    start = tensor.tensor(RNG.standard_normal((M, 4)), device=device)
    E, X = tensor.lobpcg(tensor.tensor(A, device=device), X=start, niter=-1)
    assert X.shape == (M, 4) and E.shape == (4,)
    assert_close(E[:3], [40.0, 30.0, 20.0], atol=1e-8)
    precond = tensor.tensor(np.diag(1 / np.diag(A)), device=device)
    assert_close(tensor.lobpcg(tensor.tensor(A, device=device), k=2, iK=precond)[0], [40.0, 30.0], atol=1e-8)


def test_lobpcg_generalized_and_gradient():
    A = _spd_with_gap()
    B = 2 * np.eye(M) + 0.1 * (np.eye(M, k=1) + np.eye(M, k=-1))
    L_inv = np.linalg.inv(np.linalg.cholesky(B))
    E, X = tensor.lobpcg(tensor.tensor(A), k=2, B=tensor.tensor(B))
    assert_close(E, np.linalg.eigvalsh(L_inv @ A @ L_inv.T)[::-1][:2], atol=1e-7)
    assert_close(tensor.tensor(X.numpy().T @ B @ X.numpy()), np.eye(2), atol=1e-8)  # B-orthonormal
    ours = tensor.tensor(A, requires_grad=True)
    (tensor.lobpcg(ours, k=2)[0] * tensor.tensor([1.0, 2.0])).sum().backward()
    vectors = np.linalg.eigh(A)[1][:, ::-1][:, :2]
    assert_close(ours.grad, (vectors * [1.0, 2.0]) @ vectors.T, atol=1e-7)  # eigh's eigenvalue derivative


def test_lobpcg_eigenvector_gradient_matches_eigh(torch):
    A, w = _spd_with_gap(), RNG.standard_normal((M, 2))
    ours = tensor.tensor(A, requires_grad=True)
    (tensor.lobpcg(ours, k=2)[1].abs() * tensor.tensor(w)).sum().backward()  # a sign-invariant loss
    theirs = torch.tensor(A, requires_grad=True)
    (torch.linalg.eigh(theirs)[1][:, [-1, -2]].abs() * torch.tensor(w)).sum().backward()
    symmetric = 0.5 * (theirs.grad + theirs.grad.mT)  # torch's lobpcg gives this symmetric part too
    assert_close(ours.grad, symmetric.numpy(), atol=1e-6)


def test_lobpcg_niter_and_errors():
    A = tensor.tensor(_spd_with_gap())
    E, _ = tensor.lobpcg(A, k=1, niter=0)  # the first Rayleigh-Ritz step only
    assert E.shape == (1,) and float(E[0]) <= 40.0 + 1e-9
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        tensor.lobpcg(tensor.eye(5), k=2)
    with pytest.raises(ValueError, match="square 2-D matrix"):
        tensor.lobpcg(tensor.ones(4, 5))
    with pytest.raises(ValueError, match="0 < k <= n"):
        tensor.lobpcg(A, k=3, n=2)
    with pytest.raises(ValueError, match="real floating point"):
        tensor.lobpcg(tensor.eye(9, dtype=tensor.int64))
