"""The gradient of ``linalg.eig`` / ``linalg.eigvals`` against torch's, through losses that do
not depend on the eigenvectors' phases (as torch documents), for real and complex input; a
float64 ``gradcheck``; the error for a phase-dependent loss; complex input's values."""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close
from tests.tensor._linalg_oracle import random


def _gauge_invariant_loss(values, vectors, w_values, w_vectors):
    return (values.real * w_values).sum() + (values.imag * w_values).sum() * 0.5 + (vectors.abs() * w_vectors).sum()


def test_eig_gradient_matches_torch(torch):
    for complex_ in (False, True):
        for shape in [(3, 3), (2, 4, 4)]:
            a = random(*shape, complex_=complex_)
            w_values, w_vectors = random(*shape[:-1]), random(*shape)
            ours = tensor.tensor(a, requires_grad=True)
            theirs = torch.tensor(a, requires_grad=True)
            _gauge_invariant_loss(
                *tensor.linalg.eig(ours), tensor.tensor(w_values), tensor.tensor(w_vectors)
            ).backward()
            _gauge_invariant_loss(*torch.linalg.eig(theirs), torch.tensor(w_values), torch.tensor(w_vectors)).backward()
            assert ours.grad.dtype == ours.dtype
            assert_close(ours.grad, theirs.grad.resolve_conj().numpy(), atol=1e-10, rtol=1e-8)
            if complex_:
                assert_close(
                    tensor.linalg.eigvals(tensor.tensor(a)), torch.linalg.eigvals(torch.tensor(a)).numpy(), atol=1e-12
                )


def test_eig_gradient_on_every_device(device, torch):
    a, w = random(2, 4, 4), random(2, 4)
    ours = tensor.tensor(a, device=device, requires_grad=True)
    theirs = torch.tensor(a, requires_grad=True)
    values, vectors = tensor.linalg.eig(ours)
    ((values.real * tensor.tensor(w, device=device)).sum() + vectors.abs().sum()).backward()
    tvalues, tvectors = torch.linalg.eig(theirs)
    ((tvalues.real * torch.tensor(w)).sum() + tvectors.abs().sum()).backward()
    assert ours.grad.device == ours.device
    assert_close(ours.grad, theirs.grad.numpy(), atol=1e-10, rtol=1e-8)


def test_eig_gradcheck_and_phase_error():
    x = tensor.tensor(random(3, 3), requires_grad=True)
    assert autograd.gradcheck(lambda m: tensor.linalg.eigvals(m).real, (x,))
    assert autograd.gradcheck(lambda m: tensor.linalg.eig(m).eigenvectors.abs(), (x,))
    rotation = tensor.tensor([[1.0, -2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.5, 3.0]], requires_grad=True)  # 1 +- 2i
    with pytest.raises(RuntimeError, match="specified up to multiplication by e\\^\\{i phi\\}"):
        tensor.linalg.eig(rotation).eigenvectors.real.sum().backward()


def test_eig_double_backward():
    x = tensor.tensor(random(3, 3) + 3 * np.diag([1.0, 2.0, 3.0]), requires_grad=True)
    assert autograd.gradgradcheck(lambda m: tensor.linalg.eigvals(m).real, (x,))
