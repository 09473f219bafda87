"""Higher-order derivatives through create_graph=True, compared with torch and closed forms."""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close

VALUES = [0.5, -1.25, 2.0]


def _x(device):
    return tensor.tensor(VALUES, dtype=tensor.float64, device=device, requires_grad=True)


def test_second_derivative_of_cube_matches_closed_form_and_torch(device, torch):
    x = _x(device)
    (g,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (gg,) = autograd.grad(g.sum(), x)
    assert_close(g, 3 * np.array(VALUES) ** 2)
    assert_close(gg, 6 * np.array(VALUES))
    tx = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad((tx ** 3).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    assert_close(gg, tgg.numpy())


def test_third_derivative_of_cube_is_six(device):
    x = _x(device)
    (g1,) = autograd.grad((x ** 3).sum(), x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    assert_close(g3, np.full(3, 6.0))


SECOND_ORDER_CASES = [
    ("sin", lambda t: t.sin(), lambda t: t.sin()),
    ("exp*x", lambda t: t.exp() * t, lambda t: t.exp() * t),
    ("tanh", lambda t: t.tanh(), lambda t: t.tanh()),
    ("x/(1+x^2)", lambda t: t / (t * t + 1), lambda t: t / (t * t + 1)),
]


@pytest.mark.parametrize(("name", "ours", "theirs"), SECOND_ORDER_CASES,
                         ids=[c[0] for c in SECOND_ORDER_CASES])
def test_second_derivative_matches_torch(device, torch, name, ours, theirs):
    x = _x(device)
    (g,) = autograd.grad(ours(x).sum(), x, create_graph=True)
    (gg,) = autograd.grad(g.sum(), x)
    tx = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(theirs(tx).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    assert_close(gg, tgg.numpy())


def test_backward_with_create_graph_makes_grad_differentiable(device):
    x = _x(device)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    grad_of_grad = x.grad.sum()
    x.grad = None
    grad_of_grad.backward()
    assert_close(x.grad, 6 * np.array(VALUES))


def test_gradient_penalty_style_mixed_derivative(device, torch):
    """d/dw of ||d(loss)/dx||^2, as in a WGAN-GP gradient penalty."""
    w0 = [0.3, -0.2, 0.5]
    x = _x(device)
    w = tensor.tensor(w0, dtype=tensor.float64, device=device, requires_grad=True)
    (gx,) = autograd.grad(((x * w).tanh()).sum(), x, create_graph=True)
    (gx * gx).sum().backward()
    tx = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    tw = torch.tensor(w0, dtype=torch.float64, requires_grad=True)
    (tgx,) = torch.autograd.grad(((tx * tw).tanh()).sum(), tx, create_graph=True)
    (tgx * tgx).sum().backward()
    assert_close(w.grad, tw.grad.numpy())
    assert_close(x.grad, tx.grad.numpy())


def test_hessian_vector_product(device):
    x = _x(device)
    v = tensor.tensor([1.0, 0.0, 2.0], dtype=tensor.float64, device=device)
    (g,) = autograd.grad((x ** 4).sum(), x, create_graph=True)
    (hv,) = autograd.grad(g, x, grad_outputs=v)
    assert_close(hv, 12 * np.array(VALUES) ** 2 * np.array([1.0, 0.0, 2.0]))


def test_gradgradcheck_on_composite(device):
    x = _x(device)
    y = tensor.tensor([0.1, 0.2, -0.3], dtype=tensor.float64, device=device, requires_grad=True)
    assert autograd.gradgradcheck(lambda a, b: (a * b).exp() + a * a * b, (x, y))
