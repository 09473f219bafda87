"""tensor.func's derivative transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian) and
functional_call: against closed forms and float64 finite differences, and, where torch is
installed, against torch.func on the same programs."""

from __future__ import annotations

import collections

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


def _connected(lib, w):
    """The results of each transform of ``x * x * w`` at ``x = [3, 4]``, for a captured ``w``."""
    x = lib.tensor([3.0, 4.0], dtype=lib.float64)
    f = lambda x: (x * x * w).sum()  # noqa: E731
    g = lambda x: x * x * w  # noqa: E731
    return {
        "grad": lib.func.grad(f)(x),
        "value": lib.func.grad_and_value(f)(x)[1],
        "jacrev": lib.func.jacrev(g)(x),
        "jacfwd": lib.func.jacfwd(g)(x),
        "hessian": lib.func.hessian(f)(x),
        "vjp output": lib.func.vjp(g, x)[0],
        "vjp": lib.func.vjp(g, x)[1](lib.ones(2, dtype=lib.float64))[0],
        "jvp": lib.func.jvp(g, (x,), (lib.ones(2, dtype=lib.float64),))[1],
    }


def test_results_stay_connected_to_captured_tensors_that_require_grad(torch):
    # A gradient penalty: the transforms' results depend on a captured w, and backward reaches it.
    w = tensor.tensor([1.0, 2.0], dtype=tensor.float64, requires_grad=True)
    tw = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    for (name, ours), theirs in zip(_connected(tensor, w).items(), _connected(torch, tw).values()):
        assert ours.requires_grad, name
        w.grad, tw.grad = None, None
        ours.sum().backward()
        theirs.sum().backward()
        np.testing.assert_allclose(_np(w.grad), tw.grad.numpy(), rtol=1e-12, err_msg=name)
    with tensor.no_grad():
        assert not _connected(tensor, w)["grad"].requires_grad


def test_only_results_that_depend_on_captured_tensors_stay_connected():
    w = tensor.tensor([1.0, 2.0], requires_grad=True)
    g, (value, aux) = func.grad_and_value(lambda x: ((x * w).sum(), x.sum()), has_aux=True)(tensor.ones(2))
    assert g.requires_grad and value.requires_grad and not aux.requires_grad
    assert not func.grad(lambda x: (x * x).sum() + w.sum())(tensor.ones(2)).requires_grad


def test_gradient_penalty_reaches_module_parameters(torch):
    model = nn.Linear(3, 1).double()
    reference = torch.nn.Linear(3, 1).double()
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(_np(model.weight)))
        reference.bias.copy_(torch.tensor(_np(model.bias)))
    x = RNG.standard_normal((4, 3))
    penalty = (func.grad(lambda x: model(x).tanh().sum())(tensor.tensor(x)) ** 2).sum()
    t_penalty = (torch.func.grad(lambda x: reference(x).tanh().sum())(torch.tensor(x)) ** 2).sum()
    penalty.backward()
    t_penalty.backward()
    assert_close(_np(model.weight.grad), reference.weight.grad.numpy())
    assert_close(_np(model.bias.grad), reference.bias.grad.numpy())


def test_namedtuples_are_trees(torch):
    point = collections.namedtuple("Point", "a b")
    rows = np.array([[1.0, 3.0, 2.0], [4.0, 2.0, 0.0]])
    for op in (lambda r: r.max(0), lambda r: r.sort(), lambda r: r.topk(2)):
        ours, theirs = func.vmap(op)(tensor.tensor(rows)), torch.func.vmap(op)(torch.tensor(rows))
        assert ours._fields == ("values", "indices")
        assert_close(_np(ours.values), theirs.values.numpy())
        assert ours.indices.tolist() == theirs.indices.tolist()
    g = func.grad(lambda p: (p.a * p.b).sum())(point(tensor.ones(2), tensor.full((2,), 3.0)))
    assert isinstance(g, point) and g.a.tolist() == [3.0, 3.0] and g.b.tolist() == [1.0, 1.0]
    out = func.vmap(lambda p: point(p.a * 2, p.b.sum()))(point(tensor.ones(2, 3), tensor.ones(2, 3)))
    assert isinstance(out, point) and out.a.shape == (2, 3) and out.b.tolist() == [3.0, 3.0]


def test_forward_mode_gives_integer_and_bool_outputs_zero_tangents(torch):
    ours = func.jvp(lambda x: (x.sin(), x.argmax(), x > 0), (tensor.ones(3),), (tensor.ones(3),))
    theirs = torch.func.jvp(lambda x: (x.sin(), x.argmax(), x > 0), (torch.ones(3),), (torch.ones(3),))
    assert_close(_np(ours[1][0]), theirs[1][0].numpy())
    for a, b in zip(ours[1][1:], theirs[1][1:]):
        assert a.dtype.name == str(b.dtype).split(".")[-1] and a.tolist() == b.tolist()
    jac = func.jacfwd(lambda x: (x.sin(), x.argmax()))(tensor.ones(3))
    assert jac[1].dtype is tensor.int64 and jac[1].tolist() == [0, 0, 0]


@pytest.mark.parametrize("call", [
    lambda F, x: F.grad(lambda x: (x * 1j).sum())(x),
    lambda F, x: F.jacrev(lambda x: x * 1j)(x),
    lambda F, x: F.jacfwd(lambda x: x * 1j)(x),
    lambda F, x: F.jacrev(lambda x: (x, x.argmax()))(x),
    lambda F, x: F.vjp(lambda x: x.argmax(), x),
    lambda F, x: F.vjp(lambda x: 3, x),
    lambda F, x: F.jvp(lambda x: (x, 3), (x,), (x,)),
], ids=["grad complex", "jacrev complex", "jacfwd complex", "jacrev int", "vjp int", "vjp int object", "jvp int"])
def test_outputs_the_transforms_refuse(torch, call):
    with pytest.raises(RuntimeError) as theirs:
        call(torch.func, torch.ones(2))
    with pytest.raises(RuntimeError) as ours:
        call(func, tensor.ones(2))
    assert str(ours.value).split(":")[0].replace("tensor.", "torch.") == str(theirs.value).split(":")[0]


def test_jvp_refuses_an_integer_primal():
    with pytest.raises(ValueError, match="Expected primal to be floating point"):
        func.jvp(lambda x: x, (tensor.arange(3),), (tensor.arange(3),))


def test_vmap_refuses_a_batched_output_with_out_dims_none():
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        func.vmap(lambda x: x * 2, out_dims=None)(tensor.arange(6.0).reshape(2, 3))
    constant = func.vmap(lambda x: (x * 2, tensor.ones(2)), out_dims=(0, None))(tensor.ones(3, 2))
    assert constant[0].shape == (3, 2) and constant[1].tolist() == [1.0, 1.0]


def test_functional_call_on_a_parametrized_tensor_leaves_the_module_as_it_was(torch):
    """Assigned through right_inverse as torch, and the originals come back (it crashed in the
    restore and left the passed value in the module)."""
    results = []
    for lib, nn_lib, call in ((tensor, nn, tensor.func.functional_call),
                              (torch, torch.nn, torch.func.functional_call)):
        class Double(nn_lib.Module):
            def forward(self, x):
                return 2 * x

            def right_inverse(self, x):
                return x / 2

        layer = nn_lib.Linear(2, 2, bias=False)
        nn_lib.utils.parametrize.register_parametrization(layer, "weight", Double())
        before = layer.parametrizations.weight.original.detach().clone()
        out = call(layer, {"weight": lib.ones(2, 2)}, (lib.ones(1, 2),))
        assert lib.equal(layer.parametrizations.weight.original.detach(), before)
        results.append(out.detach().numpy())
    np.testing.assert_array_equal(*results)


@pytest.mark.parametrize("given", ["first", "second", "both the same", "both different", "different, untied",
                                   "different, in two dicts"])
def test_functional_call_with_values_for_tied_names_matches_torch(torch, given):
    results = []
    for lib, nn_lib, call in ((tensor, nn, tensor.func.functional_call),
                              (torch, torch.nn, torch.func.functional_call)):
        model = nn_lib.Sequential(nn_lib.Linear(2, 2, bias=False), nn_lib.Linear(2, 2, bias=False))
        model[1].weight = model[0].weight  # tied
        ones, twos = lib.ones(2, 2), lib.full((2, 2), 2.0)
        dicts, kwargs = {
            "first": ({"0.weight": ones}, {}),
            "second": ({"1.weight": twos}, {}),
            "both the same": ({"0.weight": ones, "1.weight": ones}, {}),
            "both different": ({"0.weight": ones, "1.weight": twos}, {}),
            "different, untied": ({"0.weight": ones, "1.weight": twos}, {"tie_weights": False}),
            "different, in two dicts": (({"0.weight": ones}, {"1.weight": twos}), {}),
        }[given]
        try:
            results.append(call(model, dicts, (lib.ones(1, 2),), **kwargs).tolist())
        except ValueError as exc:
            results.append(str(exc))
    assert results[0] == results[1]
