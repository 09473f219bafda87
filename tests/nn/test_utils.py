"""nn.utils: clip_grad_norm_ (norm types incl. inf, the returned total norm, non-finite
handling), clip_grad_value_, parameters_to_vector and vector_to_parameters, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters
from tests.helpers import assert_close
from tests.nn.oracle import to_torch


def _params_with_grads(torch, scale=1.0, device="cpu"):
    rng = np.random.default_rng(17)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    ours, theirs = [], []
    for shape in shapes:
        value, grad = rng.standard_normal(shape).astype(np.float32), (rng.standard_normal(shape) * scale)
        p = nn.Parameter(tensor.tensor(value, device=device))
        p.grad = tensor.tensor(grad.astype(np.float32), device=device)
        q = torch.nn.Parameter(torch.from_numpy(value.copy()))
        q.grad = torch.from_numpy(grad.astype(np.float32))
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("max_norm, norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.3, float("inf")),
                                                 (2.0, 3), (0.1, "inf")])
def test_clip_grad_norm_matches_torch(torch, max_norm, norm_type):
    ours, theirs = _params_with_grads(torch)
    total = clip_grad_norm_(ours, max_norm, norm_type)
    ref = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert_close(total, ref.numpy(), rtol=1e-5)
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_on_a_single_tensor_and_without_grads(device):
    p = nn.Parameter(tensor.ones(4, device=device))
    p.grad = tensor.full((4,), 3.0, device=device)
    assert_close(clip_grad_norm_(p, 1.0), np.float32(6.0))
    np.testing.assert_allclose(np.linalg.norm(p.grad.cpu().numpy()), 1.0, rtol=1e-5)
    empty = clip_grad_norm_([nn.Parameter(tensor.ones(2))], 1.0)
    assert empty.item() == 0.0


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # inf * 0 in the clipped grads, as torch
def test_clip_grad_norm_nonfinite(torch):
    ours, _ = _params_with_grads(torch)
    ours[0].grad[0, 0] = float("inf")
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(ours, 1.0)
    assert np.isinf(total.item())


def test_clip_grad_value_matches_torch(torch):
    ours, theirs = _params_with_grads(torch, scale=3.0)
    assert clip_grad_value_(ours, 1.5) is None
    torch.nn.utils.clip_grad_value_(theirs, 1.5)
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad.numpy())
        assert np.abs(p.grad.numpy()).max() <= 1.5


def test_parameters_to_vector_and_back(torch):
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    ref = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    for p, q in zip(model.parameters(), ref.parameters()):
        with torch.no_grad():
            q.copy_(to_torch(torch, p))
    vec = parameters_to_vector(model.parameters())
    assert_close(vec, torch.nn.utils.parameters_to_vector(ref.parameters()).detach().numpy())
    assert vec.shape == (11,) and vec.requires_grad
    vec.sum().backward()  # differentiable: every parameter gets ones
    assert_close(model[0].weight.grad, np.ones((2, 3), np.float32))
    new = tensor.arange(11, dtype=tensor.float32)
    vector_to_parameters(new, model.parameters())
    assert_close(model[0].weight, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert_close(model[1].bias, np.array([10.0], np.float32))
    assert isinstance(model[0].weight, nn.Parameter)


@pytest.mark.parametrize("call, error, message", [
    (lambda: vector_to_parameters([1.0, 2.0], [nn.Parameter(tensor.ones(2))]), TypeError,
     "expected torch.Tensor, but got: list"),
    (lambda: vector_to_parameters(tensor.ones(3), [nn.Parameter(tensor.ones(2, 2))]), RuntimeError,
     "vec has 3 elements, too few"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("norm_type, total, scaled", [
    (float("-inf"), 0.0, [0.0, 3.0, -4.0]),  # the smallest |g|: torch's value
    (0, 2.0, [0.0, 1.5, -2.0]),  # the number of nonzero elements (torch counts nonzero tensors: 1)
])
def test_clip_grad_norm_zero_and_minus_inf(norm_type, total, scaled):
    p = nn.Parameter(tensor.tensor([0.0, 3.0, -4.0]))
    p.grad = tensor.tensor([0.0, 3.0, -4.0])
    assert float(clip_grad_norm_([p], 1.0, norm_type=norm_type)) == total
    assert_close(p.grad.numpy(), np.array(scaled, dtype=np.float32), rtol=1e-5, atol=1e-5)


def test_minus_inf_norm_matches_torch(torch):
    grads = [np.array([0.5, -2.0]), np.array([[3.0, -0.25]])]
    ours = nn.utils.get_total_norm([tensor.tensor(g) for g in grads], float("-inf"))
    theirs = torch.nn.utils.get_total_norm([torch.tensor(g) for g in grads], float("-inf"))
    assert float(ours) == float(theirs) == 0.25
