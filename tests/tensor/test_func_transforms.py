"""tensor.func's derivative transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian) and
functional_call: against closed forms and float64 finite differences, and, where torch is
installed, against torch.func on the same programs."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tensor import func
from tests.helpers import assert_close

RNG = np.random.default_rng(0)
X, W, V = RNG.standard_normal(3), RNG.standard_normal((2, 3)), RNG.standard_normal(3)


def _t(device, array):
    return tensor.tensor(array, dtype=tensor.float64, device=device)


def _np(t) -> np.ndarray:
    return t.detach().cpu().numpy()


def _f(x):
    return (x.sin() * x).sum()


def test_grad_is_the_closed_form(device):
    x = _t(device, X)
    np.testing.assert_allclose(_np(func.grad(_f)(x)), np.cos(X) * X + np.sin(X), rtol=1e-12)
    grads, value = func.grad_and_value(_f)(x)
    assert value.item() == pytest.approx(float(np.sum(np.sin(X) * X)))
    assert not grads.requires_grad and not value.requires_grad


def test_grad_over_trees_and_argnums(device):
    x, w = _t(device, X), _t(device, W)
    params = {"w": w, "b": _t(device, 2.0)}
    g = func.grad(lambda p, x: (p["w"] @ x).sum() * p["b"])(params, x)
    assert set(g) == {"w", "b"}
    np.testing.assert_allclose(_np(g["w"]), 2.0 * np.tile(X, (2, 1)), rtol=1e-12)
    assert g["b"].item() == pytest.approx(float((W @ X).sum()))
    gx, gw = func.grad(lambda x, w: (w @ x).sum(), argnums=(0, 1))(x, w)
    np.testing.assert_allclose(_np(gx), W.sum(0), rtol=1e-12)
    np.testing.assert_allclose(_np(gw), np.tile(X, (2, 1)), rtol=1e-12)


def test_nested_transforms_give_second_derivatives(device):
    x = _t(device, X)
    second = func.grad(lambda x: func.grad(_f)(x).sum())(x)
    np.testing.assert_allclose(_np(second), 2 * np.cos(X) - X * np.sin(X), rtol=1e-12)
    hess = func.hessian(_f)(x)
    np.testing.assert_allclose(_np(hess), np.diag(2 * np.cos(X) - X * np.sin(X)), rtol=1e-12, atol=1e-15)


def test_a_result_stays_differentiable_for_the_caller(device):
    x = _t(device, X).requires_grad_()
    g = func.grad(lambda x: (x**3).sum())(x)
    assert g.requires_grad
    g.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 6 * X, rtol=1e-12)


def test_jacobians_and_products_agree(device):
    x, w, v = _t(device, X), _t(device, W), _t(device, V)
    fn = lambda x, w: (w @ x).sin()  # noqa: E731
    jx, jw = func.jacrev(fn, argnums=(0, 1))(x, w)
    np.testing.assert_allclose(_np(jx), np.cos(W @ X)[:, None] * W, rtol=1e-12)
    assert tuple(jw.shape) == (2, 2, 3)
    np.testing.assert_allclose(_np(func.jacfwd(fn)(x, w)), _np(jx), rtol=1e-12)
    out, vjp_fn = func.vjp(fn, x, w)
    cot = _t(device, np.array([1.0, -2.0]))
    vx, vw = vjp_fn(cot)
    np.testing.assert_allclose(_np(vx), np.array([1.0, -2.0]) @ _np(jx), rtol=1e-12)
    np.testing.assert_allclose(_np(vjp_fn(cot)[0]), _np(vx), rtol=1e-12)  # callable again
    assert tuple(vw.shape) == (2, 3)
    value, tangent_out = func.jvp(lambda x: fn(x, w), (x,), (v,))
    np.testing.assert_allclose(_np(tangent_out), _np(jx) @ V, rtol=1e-12)
    np.testing.assert_allclose(_np(value), _np(out), rtol=1e-12)


def test_independent_input_gives_zeros(device):
    g = func.grad(lambda x, y: (x * 2).sum(), argnums=1)(_t(device, X), _t(device, V))
    assert tuple(g.shape) == (3,) and not g.any()


def test_per_sample_gradients_with_vmap_and_functional_call(device):
    model = nn.Linear(3, 2).to(device).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs, ys = _t(device, RNG.standard_normal((4, 3))), _t(device, RNG.standard_normal((4, 2)))

    def loss(p, x, y):
        return ((func.functional_call(model, p, (x,)) - y) ** 2).sum()

    per_sample = func.vmap(func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)
    assert tuple(per_sample["weight"].shape) == (4, 2, 3)
    for i in range(4):
        model.zero_grad()
        ((model(xs[i]) - ys[i]) ** 2).sum().backward()
        np.testing.assert_allclose(_np(per_sample["weight"][i]), _np(model.weight.grad), rtol=1e-12)
        np.testing.assert_allclose(_np(per_sample["bias"][i]), _np(model.bias.grad), rtol=1e-12)


def test_functional_call_restores_the_module_and_ties_weights(device):
    model = nn.Sequential(nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)).to(device)
    model[1].weight = model[0].weight  # tied
    own = model[0].weight
    ones = tensor.ones(2, 2, device=device)
    out = func.functional_call(model, {"0.weight": ones}, tensor.ones(1, 2, device=device))
    assert out.tolist() == [[4.0, 4.0]]  # both layers took the replacement
    assert model[0].weight is own and model[1].weight is own
    x = tensor.ones(1, 2, device=device)
    untied = func.functional_call(model, {"0.weight": ones}, (x,), tie_weights=False)
    np.testing.assert_allclose(_np(untied), _np((x @ ones.T) @ own.T), rtol=1e-6)
    func.functional_call(model, {"0.weight": ones}, (x,), strict=True)  # the tied name counts as given
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): '1.weight'"):
        func.functional_call(model, {"0.weight": ones}, (x,), strict=True, tie_weights=False)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'extra'"):
        func.functional_call(model, {"0.weight": ones, "extra": ones}, (x,), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        func.functional_call(model, ({"0.weight": ones}, {"0.weight": ones}), (ones,))


def test_errors(device):
    x = _t(device, X)
    with pytest.raises(RuntimeError, match="to return a scalar Tensor, got tensor with 1 dims"):
        func.grad(lambda x: x * 2)(x)
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        func.grad(_f, argnums=2)(x)
    with pytest.raises(RuntimeError, match="floating point"):
        func.grad(lambda x: x.sum())(tensor.arange(3, device=device))
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        func.grad(_f, has_aux=True)(x)
    with pytest.raises(RuntimeError, match="same shape"):
        func.jvp(_f, (x,), (_t(device, X[:2]),))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        func.vjp(lambda x: x * 2, x)[1](_t(device, X[:2]))
    with pytest.raises(ValueError, match="chunk_size"):
        func.jacrev(_f, chunk_size=0)


CASES = {
    "grad": lambda F, t: F.grad(_f)(t(X)),
    "grad of grad": lambda F, t: F.grad(lambda x: F.grad(_f)(x).sum())(t(X)),
    "grad_and_value with aux": lambda F, t: F.grad_and_value(lambda x: (_f(x), x.mean()), has_aux=True)(t(X)),
    "jacrev argnums": lambda F, t: F.jacrev(lambda x, w: (w @ x).tanh(), argnums=(0, 1))(t(X), t(W)),
    "jacfwd": lambda F, t: F.jacfwd(lambda x: x.exp() * x)(t(X)),
    "hessian": lambda F, t: F.hessian(_f)(t(X)),
    "jvp": lambda F, t: F.jvp(lambda x: x.sin() * x, (t(X),), (t(V),)),
    "vjp": lambda F, t: F.vjp(lambda x: x.sin() * x, t(X))[1](t(V)),
    "vmap of grad": lambda F, t: F.vmap(F.grad(_f))(t(np.stack([X, V]))),
}


def _flat(result) -> list:
    if isinstance(result, (tuple, list)):
        return [a for el in result for a in _flat(el)]
    return [result.detach().cpu().numpy()]


@pytest.mark.parametrize("name", list(CASES))
def test_agrees_with_torch_func(device, torch, name):
    ours = _flat(CASES[name](func, lambda a: _t(device, a)))
    theirs = _flat(CASES[name](torch.func, lambda a: torch.tensor(a, dtype=torch.float64)))
    assert [a.shape for a in ours] == [b.shape for b in theirs]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_vmap_refuses_an_in_place_write_into_an_unmapped_input(torch):
    def add_into(r, b):
        return b.add_(r)

    with pytest.raises(RuntimeError):
        torch.func.vmap(add_into, in_dims=(0, None))(torch.ones(2, 2), torch.tensor([10.0, 20.0]))
    with pytest.raises(RuntimeError, match="in-place operation wrote into input 1"):
        func.vmap(add_into, in_dims=(0, None))(tensor.ones(2, 2), tensor.tensor([10.0, 20.0]))
    mapped = tensor.zeros(2, 2)  # writes into mapped inputs stay allowed
    func.vmap(lambda row: row.add_(1.0))(mapped)
    assert mapped.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_jvp_gives_a_wider_tangent_in_its_dtype(torch):
    ours = func.jvp(tensor.sin, (tensor.ones(2),), (tensor.ones(2, dtype=tensor.float64),))
    theirs = torch.func.jvp(torch.sin, (torch.ones(2),), (torch.ones(2, dtype=torch.float64),))
    assert ours[0].dtype is tensor.float32 and ours[1].dtype is tensor.float64
    assert_close(_np(ours[1]), theirs[1].numpy())


def test_linearize_is_jvp_at_fixed_primals(torch):
    x = np.array([0.5, 1.0, 2.0], dtype=np.float32)
    out, jvp_fn = func.linearize(lambda a: a.sin() * a, tensor.tensor(x))
    t_out, t_jvp_fn = torch.func.linearize(lambda a: a.sin() * a, torch.tensor(x))
    tangent = np.array([1.0, -1.0, 0.5], dtype=np.float32)
    assert_close(_np(out), t_out.numpy())
    assert_close(_np(jvp_fn(tensor.tensor(tangent))), t_jvp_fn(torch.tensor(tangent)).numpy())
    for bad in ((tensor.ones(2),), (tensor.ones(3, dtype=tensor.float64),), (tensor.ones(3), tensor.ones(3))):
        with pytest.raises(RuntimeError):
            jvp_fn(*bad)


def test_stack_module_state_ensembles_with_vmap():
    models = [nn.Linear(3, 2) for _ in range(3)]
    params, buffers = func.stack_module_state(models)
    assert params["weight"].shape == (3, 2, 3) and params["weight"].is_leaf and params["weight"].requires_grad
    x = tensor.randn(4, 3)
    out = func.vmap(lambda p, b: func.functional_call(models[0], (p, b), (x,)))(params, buffers)
    for i, model in enumerate(models):
        assert_close(_np(out[i]), _np(model(x)))
    with pytest.raises(RuntimeError, match="same class"):
        func.stack_module_state([nn.Linear(3, 2), nn.ReLU()])
    with pytest.raises(RuntimeError, match="at least one model"):
        func.stack_module_state([])
