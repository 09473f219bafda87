"""autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp against float64 finite differences
and, where torch is installed, against torch.autograd.functional on the same functions."""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from autograd import functional as AF

RNG = np.random.default_rng(0)
X, W = RNG.standard_normal(3), RNG.standard_normal((2, 3))
V2, V3 = RNG.standard_normal(2), RNG.standard_normal(3)


def _two_outputs(x, w):
    return (w @ x).sin() * 2, (x**3).sum()


def _scalar(x):
    return (x.exp() * x).sum() + (x[0] * x[1]) ** 2


def _numeric_jacobian(fn, point: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of ``fn`` (numpy array -> numpy array) at ``point``: out.shape + point.shape."""
    cols = []
    for k in range(point.size):
        step = np.zeros(point.size)
        step[k] = eps
        step = step.reshape(point.shape)
        cols.append((np.asarray(fn(point + step)) - np.asarray(fn(point - step))) / (2 * eps))
    return np.stack(cols, axis=-1).reshape(np.shape(fn(point)) + point.shape)


def _t(device, array):
    return tensor.tensor(array, dtype=tensor.float64, device=device)


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _scalar_np(x: np.ndarray) -> float:
    return float(_scalar(tensor.tensor(x, dtype=tensor.float64)).item())


def test_jacobian_of_two_inputs_and_two_outputs_matches_finite_differences(device):
    x, w = _t(device, X), _t(device, W)
    jac = AF.jacobian(_two_outputs, (x, w))
    assert len(jac) == 2 and all(len(row) == 2 for row in jac)
    assert tuple(jac[0][1].shape) == (2, 2, 3) and tuple(jac[1][0].shape) == (3,)
    first = lambda xx: np.sin(W @ xx) * 2  # noqa: E731
    by_w = lambda ww: np.sin(ww @ X) * 2  # noqa: E731
    np.testing.assert_allclose(_np(jac[0][0]), _numeric_jacobian(first, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(jac[0][1]), _numeric_jacobian(by_w, W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(jac[1][0]), 3 * X**2, rtol=1e-12)
    assert not jac[1][1].any()  # the sum does not depend on w: zeros


def test_jacobian_of_a_tensor_is_a_tensor(device):
    jac = AF.jacobian(lambda x: x.sin() * x, _t(device, X))
    assert tensor.is_tensor(jac) and tuple(jac.shape) == (3, 3)
    np.testing.assert_allclose(_np(jac), np.diag(np.cos(X) * X + np.sin(X)), rtol=1e-12, atol=1e-15)
    assert not jac.requires_grad


def test_products_match_the_jacobian(device):
    x, w, v2, v3 = _t(device, X), _t(device, W), _t(device, V2), _t(device, V3)
    jac = AF.jacobian(_two_outputs, (x, w))
    out, (vjp_x, vjp_w) = AF.vjp(_two_outputs, (x, w), (v2, _t(device, 1.0)))
    np.testing.assert_allclose(_np(out[0]), np.sin(W @ X) * 2, rtol=1e-12)
    np.testing.assert_allclose(_np(vjp_x), V2 @ _np(jac[0][0]) + _np(jac[1][0]), rtol=1e-10)
    np.testing.assert_allclose(_np(vjp_w), np.tensordot(V2, _np(jac[0][1]), 1), rtol=1e-10)
    _, (jvp_y, jvp_s) = AF.jvp(_two_outputs, (x, w), (v3, w * 0.5))
    expected = _np(jac[0][0]) @ V3 + np.tensordot(_np(jac[0][1]), W * 0.5, 2)
    np.testing.assert_allclose(_np(jvp_y), expected, rtol=1e-10)
    np.testing.assert_allclose(_np(jvp_s), _np(jac[1][0]) @ V3, rtol=1e-10)


def test_hessian_and_its_products_match_finite_differences(device):
    x, v = _t(device, X), _t(device, V3)
    gradient = lambda xx: _numeric_jacobian(_scalar_np, xx)  # noqa: E731
    expected = _numeric_jacobian(gradient, X, eps=1e-4)
    hess = AF.hessian(_scalar, x)
    np.testing.assert_allclose(_np(hess), expected, rtol=1e-5, atol=1e-5)
    out, vhp = AF.vhp(_scalar, x, v)
    _, hvp = AF.hvp(_scalar, x, v)
    assert out.item() == pytest.approx(_scalar_np(X))
    np.testing.assert_allclose(_np(vhp), V3 @ _np(hess), rtol=1e-10)
    np.testing.assert_allclose(_np(hvp), _np(hess) @ V3, rtol=1e-10)


def test_hessian_of_two_inputs_is_nested(device):
    x, y = _t(device, X), _t(device, V3)
    hess = AF.hessian(lambda a, b: (a * b).sum() ** 2, (x, y))
    s = float(X @ V3)
    np.testing.assert_allclose(_np(hess[0][0]), 2 * np.outer(V3, V3), rtol=1e-12)
    np.testing.assert_allclose(_np(hess[0][1]), 2 * np.outer(V3, X) + 2 * s * np.eye(3), rtol=1e-12)


def test_inputs_and_their_grads_are_left_alone(device):
    x = _t(device, X).requires_grad_()
    AF.jacobian(lambda a: a * 2, x)
    AF.vjp(_scalar, x)
    assert x.grad is None


def test_create_graph_keeps_the_graph_to_the_caller(device):
    x = _t(device, X).requires_grad_()
    jac = AF.jacobian(lambda a: a**3, x, create_graph=True)
    assert jac.requires_grad
    (g,) = autograd.grad(jac.sum(), x)
    np.testing.assert_allclose(_np(g), 6 * X, rtol=1e-12)


def test_strict_and_argument_errors(device):
    x = _t(device, X)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (x, _t(device, V3)), strict=True)
    with pytest.raises(RuntimeError, match="v can only be None if the user-provided function returns a single"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \[3\] but got \[2\]"):
        AF.jvp(lambda a: a, x, _t(device, V2))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hessian(lambda a: a * 2, x)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(lambda a: a, [x])
    with pytest.raises(ValueError, match="'sideways'"):
        AF.jacobian(lambda a: a, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda a: a, x, strategy="forward-mode")


def test_reached_from_tensor_autograd():
    assert tensor.autograd.functional.jacobian is AF.jacobian


CASES = {
    "jacobian": lambda F, t: F.jacobian(_two_outputs, (t(X), t(W))),
    "jacobian vectorize forward-mode": lambda F, t: F.jacobian(lambda x: x.sin(), t(X), vectorize=True,
                                                               strategy="forward-mode"),
    "vjp": lambda F, t: F.vjp(_two_outputs, (t(X), t(W)), (t(V2), t(1.0))),
    "vjp without v": lambda F, t: F.vjp(_scalar, t(X)),
    "jvp": lambda F, t: F.jvp(_two_outputs, (t(X), t(W)), (t(V3), t(W))),
    "hessian": lambda F, t: F.hessian(_scalar, t(X)),
    "vhp": lambda F, t: F.vhp(_scalar, t(X), t(V3)),
    "hvp": lambda F, t: F.hvp(_scalar, t(X), t(V3)),
}


def _flat(result) -> list:
    if isinstance(result, tuple):
        return [a for el in result for a in _flat(el)]
    return [result.detach().cpu().numpy()]


@pytest.mark.parametrize("name", list(CASES))
def test_agrees_with_torch(device, torch, name):
    import torch.autograd.functional as TF  # noqa: PLC0415 - the optional oracle

    ours = _flat(CASES[name](AF, lambda a: _t(device, a)))
    theirs = _flat(CASES[name](TF, lambda a: torch.tensor(a, dtype=torch.float64)))
    assert [a.shape for a in ours] == [b.shape for b in theirs]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
