"""``geqrf``, ``linalg.householder_product`` / ``orgqr`` and ``ormqr`` (``tensor/ops/householder.py``)
against torch: values for real and complex, square, tall, wide and batched inputs on every
device; gradients against torch and by ``gradcheck``; the shape errors.
"""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close
from tests.tensor._linalg_oracle import grads_match, random

SHAPES = [(4, 4), (2, 5, 3), (3, 6), (0, 3, 3)]


def test_householder_family_matches_torch(device, torch):
    for complex_ in (False, True):
        for shape in SHAPES:
            a = random(*shape, complex_=complex_)
            ours, theirs = tensor.geqrf(tensor.tensor(a, device=device)), torch.geqrf(torch.tensor(a))
            assert_close(ours.a, theirs.a.numpy(), atol=1e-12, rtol=1e-10)
            assert_close(ours.tau, theirs.tau.numpy(), atol=1e-12, rtol=1e-10)
            if shape[-2] >= shape[-1]:
                Q = tensor.linalg.householder_product(ours.a, ours.tau)
                assert_close(Q, torch.linalg.householder_product(theirs.a, theirs.tau).numpy(), atol=1e-12)
                assert_close(tensor.orgqr(ours.a, ours.tau), Q.cpu().numpy(), atol=0)
            m = shape[-2]
            for left in (True, False):
                other = random(*shape[:-2], *((m, 2) if left else (2, m)), complex_=complex_)
                for transpose in (False, True):
                    got = tensor.ormqr(ours.a, ours.tau, tensor.tensor(other, device=device), left, transpose)
                    want = torch.ormqr(theirs.a, theirs.tau, torch.tensor(other), left, transpose)
                    assert_close(got, want.resolve_conj().numpy(), atol=1e-12)


def test_householder_gradients(torch):
    for complex_ in (False, True):
        a, tau = random(2, 5, 3, complex_=complex_), random(2, 2, complex_=complex_)
        grads_match(torch, tensor.linalg.householder_product, torch.linalg.householder_product, [a, tau])
        tau = random(2, 3, complex_=complex_)
        for left, transpose in [(True, False), (False, True)]:
            other = random(2, *((5, 3) if left else (3, 5)), complex_=complex_)
            grads_match(
                torch,
                lambda x, t, c, lf=left, tr=transpose: tensor.ormqr(x, t, c, lf, tr),
                lambda x, t, c, lf=left, tr=transpose: torch.ormqr(x, t, c, lf, tr),
                [a, tau, other],
            )
    inputs = (tensor.tensor(random(4, 3), requires_grad=True), tensor.tensor(random(3), requires_grad=True))
    assert autograd.gradcheck(tensor.linalg.householder_product, inputs)
    other = tensor.tensor(random(4, 2), requires_grad=True)
    assert autograd.gradcheck(lambda a, t, c: tensor.ormqr(a, t, c, True, True), (inputs[0], inputs[1], other))


def test_householder_errors():
    a, tau = tensor.ones(3, 4), tensor.ones(2)
    with pytest.raises(RuntimeError, match="greater than or equal to input.shape\\[-1\\] \\(3 < 4\\)"):
        tensor.linalg.householder_product(a, tau)
    with pytest.raises(RuntimeError, match="tau.shape\\[-1\\]"):
        tensor.linalg.householder_product(tensor.ones(4, 2), tensor.ones(3))
    with pytest.raises(RuntimeError, match="batch dimensions of tau"):
        tensor.ormqr(tensor.ones(2, 4, 3), tensor.ones(3, 2), tensor.ones(2, 4, 1))
    with pytest.raises(RuntimeError, match="other.shape\\[-2\\] must be equal to input.shape\\[-2\\] \\(3 != 4\\)"):
        tensor.ormqr(tensor.ones(4, 3), tensor.ones(3), tensor.ones(3, 1))
    with pytest.raises(RuntimeError, match="tau.shape\\[-1\\] must be equal to min"):
        tensor.ormqr(tensor.ones(4, 3), tensor.ones(2), tensor.ones(4, 1))
    for integer_input in (lambda: tensor.geqrf(tensor.ones(3, 3, dtype=tensor.int64)),
                          lambda: tensor.linalg.householder_product(tensor.ones(3, 2, dtype=tensor.int64),
                                                                    tensor.ones(2, dtype=tensor.int64))):
        with pytest.raises(NotImplementedError, match="Expected a floating point"):  # torch's LAPACK kernels' error
            integer_input()
    assert np.isfinite(tensor.geqrf(tensor.zeros(3, 3)).a.numpy()).all()


def test_no_reflectors_give_the_identity_on_the_graph(torch):
    """An empty ``tau``: the identity's first columns, which backward goes through (it raised)."""
    A = tensor.randn(3, 2, dtype=tensor.float64, requires_grad=True)
    Q = tensor.linalg.householder_product(A, tensor.zeros(0, dtype=tensor.float64))
    assert Q.requires_grad
    Q.sum().backward()
    np.testing.assert_array_equal(Q.detach().numpy(), torch.linalg.householder_product(
        torch.zeros(3, 2, dtype=torch.float64), torch.zeros(0, dtype=torch.float64)).numpy())
    np.testing.assert_array_equal(A.grad.numpy(), np.zeros((3, 2)))
