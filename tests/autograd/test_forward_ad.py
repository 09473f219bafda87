"""autograd.forward_ad (dual tensors, lazy tangents by the double-backward trick), compared with
torch.autograd.forward_ad in float64, and with func.jvp."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import autograd
import nn.functional as OF
import tensor
from autograd import forward_ad as fwAD
from tests.helpers import assert_close

TOL = {"rtol": 1e-10, "atol": 1e-10}

# (name, f(X, F, *inputs), input shapes): X is torch or tensor, F its nn.functional
CASES = [
    ("mul_sin", lambda X, F, a: a.sin() * a, [(3, 4)]),
    ("exp_div", lambda X, F, a, b: a.exp() / (b * b + 1), [(5,), (5,)]),
    ("pow_tanh", lambda X, F, a: X.tanh(a) ** 3 - a.abs().sqrt(), [(4,)]),
    ("sum_mean", lambda X, F, a: a.sum(1) * a.mean(0).sum(), [(3, 4)]),
    ("max_dim", lambda X, F, a: a.amax(dim=1) + a.prod(0).sum(), [(3, 4)]),
    ("matmul", lambda X, F, a, b: a @ b, [(3, 4), (4, 2)]),
    ("views", lambda X, F, a: a.t().reshape(2, 6)[:, 1:4].unsqueeze(0) * 2, [(3, 4)]),
    ("index", lambda X, F, a: a[X.tensor([2, 0, 2])] + a[..., ::2].flip(0).sum(), [(3, 4)]),
    ("cat_stack", lambda X, F, a, b: X.cat([a, X.stack([b, b]).sum(0)]).cumsum(0), [(2, 3), (1, 3)]),
    ("softmax", lambda X, F, a: F.log_softmax(a, 1) + F.softmax(a * 2, 0), [(3, 5)]),
    ("conv2d", lambda X, F, x, w: F.conv2d(x, w, padding=1, stride=2), [(2, 3, 6, 6), (4, 3, 3, 3)]),
    ("layer_norm", lambda X, F, x, w, b: F.layer_norm(x, (5,), w, b), [(3, 5), (5,), (5,)]),
    ("chain", lambda X, F, a, b: (F.gelu(a @ b).logsumexp(1) * a.sigmoid().sum()).cos(), [(3, 4), (4, 4)]),
]


def _inputs(torch, shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape) for shape in shapes]
    tangents = [rng.standard_normal(shape) for shape in shapes]
    return [(tensor.tensor(a), tensor.tensor(t)) for a, t in zip(arrays, tangents)], \
        [(torch.tensor(a), torch.tensor(t)) for a, t in zip(arrays, tangents)]


def _pushed(ad, X, F, fn, pairs):
    with ad.dual_level():
        out = fn(X, F, *[ad.make_dual(p, t) for p, t in pairs])
        return ad.unpack_dual(out)


@pytest.mark.parametrize(("name", "fn", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_tangents_match_torch(torch, name, fn, shapes):
    ours, theirs = _inputs(torch, shapes)
    primal, tangent = _pushed(fwAD, tensor, OF, fn, ours)
    t_primal, t_tangent = _pushed(torch.autograd.forward_ad, torch, torch.nn.functional, fn, theirs)
    assert_close(primal, t_primal.numpy(), **TOL)
    assert_close(tangent, t_tangent.numpy(), **TOL)
    assert not primal.requires_grad


@pytest.mark.parametrize(("name", "fn", "shapes"), CASES[:6], ids=[c[0] for c in CASES[:6]])
def test_tangents_match_func_jvp(torch, name, fn, shapes):
    ours, _ = _inputs(torch, shapes)
    _, tangent = _pushed(fwAD, tensor, OF, fn, ours)
    _, jvp_out = tensor.func.jvp(lambda *xs: fn(tensor, OF, *xs), tuple(p for p, _ in ours),
                                 tuple(t for _, t in ours))
    assert_close(tangent, jvp_out, **TOL)


def test_small_mlp_tangent_and_parameter_gradients_match_torch(torch):
    ours, theirs = _inputs(torch, [(4, 3)])
    results = []
    for X, nn_mod, ad, (x, v) in ((tensor, __import__("nn"), fwAD, ours[0]),
                                  (torch, torch.nn, torch.autograd.forward_ad, theirs[0])):
        X.manual_seed(0)
        model = nn_mod.Sequential(nn_mod.Linear(3, 5), nn_mod.Tanh(), nn_mod.Linear(5, 2)).double()
        with X.no_grad():  # the same weights in both
            for p, value in zip(model.parameters(), _weights(torch)):
                p.copy_(X.tensor(value))
        with ad.dual_level():
            primal, tangent = ad.unpack_dual(model(ad.make_dual(x, v)))
        primal.pow(2).sum().backward()  # the primal stays differentiable for the parameters
        results.append((primal, tangent, model[0].weight.grad))
    for mine, theirs_ in zip(results[0], results[1]):
        assert_close(mine, _host(theirs_), **TOL)


def _host(t) -> np.ndarray:
    """A tensor's or a torch tensor's values as a numpy array."""
    return t.detach().cpu().numpy()


def _weights(torch):
    rng = np.random.default_rng(1)
    return [rng.standard_normal(shape) for shape in ((5, 3), (5,), (2, 5), (2,))]


def test_dual_of_tensor_requiring_grad_stays_connected(torch):
    for X, ad in ((tensor, fwAD), (torch, torch.autograd.forward_ad)):
        w = X.tensor([1.0, -2.0, 3.0], dtype=X.float64, requires_grad=True)
        with ad.dual_level():
            dual = ad.make_dual(w, X.ones(3, dtype=X.float64))
            out = (dual * dual).sum()
            tangent = ad.unpack_dual(out).tangent
            out.backward()
        assert_close(_host(tangent), np.array(4.0))
        assert_close(_host(w.grad), np.array([2.0, -4.0, 6.0]))


def test_tangent_survives_the_dual_view_being_freed():
    w = tensor.tensor([1.0, 2.0], dtype=tensor.float64, requires_grad=True)
    with fwAD.dual_level():
        out = fwAD.make_dual(w, tensor.tensor([1.0, 1.0], dtype=tensor.float64)).exp().sum()
        gc.collect()
        assert_close(fwAD.unpack_dual(out).tangent, np.exp([1.0, 2.0]).sum(), **TOL)


def test_unpacking_a_dual_gives_its_tangent_as_is():
    x, v = tensor.tensor([1.0, 2.0], dtype=tensor.float64), tensor.tensor([3.0, 4.0])
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, v)
        primal, tangent = fwAD.unpack_dual(dual)
        assert tangent is v
        assert not primal.requires_grad
        primal.add_(1)  # the primal and the dual share the storage of x
    assert_close(dual, np.array([2.0, 3.0]))
    assert_close(x, np.array([2.0, 3.0]))


def test_tangent_dtype_follows_torch(torch):
    for primal_dtype, tangent_dtype in (("float32", "float64"), ("float64", "float32")):
        got = []
        for X, ad in ((tensor, fwAD), (torch, torch.autograd.forward_ad)):
            with ad.dual_level():
                primal, tangent = X.ones(2, dtype=getattr(X, primal_dtype)), X.ones(2, dtype=getattr(X, tangent_dtype))
                dual = ad.make_dual(primal, tangent)
                got.append(ad.unpack_dual(dual * 2).tangent)
        assert_close(got[0], got[1].numpy())


def test_complex_tangents_match_torch(torch):
    rng = np.random.default_rng(2)
    z, v = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    for fn in (lambda d: d * d, lambda d: d.abs(), lambda d: d.real * d.conj(), lambda d: d.exp().sum()):
        ours = _pushed(fwAD, tensor, OF, lambda X, F, d: fn(d), [(tensor.tensor(z), tensor.tensor(v))]).tangent
        theirs = _pushed(torch.autograd.forward_ad, torch, None, lambda X, F, d: fn(d),
                         [(torch.tensor(z), torch.tensor(v))]).tangent
        assert_close(ours, theirs.numpy(), **TOL)


def test_tensors_without_a_tangent_unpack_to_none():
    x = tensor.tensor([1.0, 2.0], dtype=tensor.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, tensor.ones(2, dtype=tensor.float64))
        out = dual * 3
        assert fwAD.unpack_dual(x).tangent is None
        assert fwAD.unpack_dual((dual * 2).long()).tangent is None
        assert fwAD.unpack_dual(dual.detach() * 2).tangent is None
        assert_close(fwAD.unpack_dual(dual.sign()).tangent, np.zeros(2))
    assert fwAD.unpack_dual(out).tangent is None  # the level is gone
    assert fwAD.unpack_dual(dual).tangent is None


def test_levels_and_errors_match_torch(torch):
    t_ad = torch.autograd.forward_ad
    for X, ad in ((tensor, fwAD), (torch, t_ad)):
        x = X.ones(3, dtype=X.float64)
        with pytest.raises(RuntimeError, match="no level exists"):
            ad.make_dual(x, x)
        with pytest.raises(RuntimeError, match="invalid index"):
            ad.make_dual(x, x, level=0)
        with pytest.raises(RuntimeError, match="Dual level must be a positive number"):
            ad.exit_dual_level()
        with pytest.raises(RuntimeError, match="not the last one"):
            ad.exit_dual_level(level=0)
        with ad.dual_level() as level:
            assert level == 0
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
                ad.enter_dual_level()
            with pytest.raises(RuntimeError, match="different size"):
                ad.make_dual(x, X.ones(1, dtype=X.float64))
            with pytest.raises(ValueError, match="Expected primal to be floating point"):
                ad.make_dual(X.arange(3), x)
            with pytest.raises(ValueError, match="Expected tangent to be floating point"):
                ad.make_dual(x, X.arange(3))
            with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
                ad.make_dual(x, x, level=1)
            dual = ad.make_dual(x, x)
            for already in (dual, dual * 2):
                with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0"):
                    ad.make_dual(already, x)
            with pytest.raises(RuntimeError, match="Invalid level given to _fw_primal"):
                ad.unpack_dual(dual, level=3)
            with pytest.raises(TypeError):
                ad.unpack_dual(3.0)
            with pytest.raises(RuntimeError, match="not the last one"):
                ad.exit_dual_level(level=3)
        assert ad.enter_dual_level() == 0
        ad.exit_dual_level()


def test_module_is_reachable_as_torch_spells_it():
    assert tensor.autograd.forward_ad is autograd.forward_ad is fwAD
    assert fwAD.UnpackedDualTensor._fields == ("primal", "tangent")

    @fwAD.dual_level()
    def tangent_of_square(x, v):
        return fwAD.unpack_dual(fwAD.make_dual(x, v) ** 2).tangent

    x, v = tensor.tensor([3.0], dtype=tensor.float64), tensor.tensor([1.0], dtype=tensor.float64)
    assert_close(tangent_of_square(x, v), np.array([6.0]))
