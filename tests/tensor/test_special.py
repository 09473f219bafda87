"""``tensor.special`` (tensor/special.py, with erfcx's kernel in tensor/ops/special.py): erfcx in
the far tail, xlog1py with a Python number, ndtr/log_ndtr of bool and ndtri in float32."""

from __future__ import annotations

import math

import pytest

import tensor
from tests.helpers import assert_close

ERFCX_POINTS = [-30.0, -5.0, 0.0, 0.5, 2.0, 2.99, 3.0, 5.0, 10.0, 26.0, 30.0, 100.0, 1e10, 1e200,
                math.inf, -math.inf, math.nan]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_erfcx_is_accurate_for_large_x(torch, dtype):
    ours = tensor.special.erfcx(tensor.tensor(ERFCX_POINTS, dtype=getattr(tensor, dtype)))
    theirs = torch.special.erfcx(torch.tensor(ERFCX_POINTS, dtype=getattr(torch, dtype)))
    assert ours.dtype.name == dtype
    assert_close(ours, theirs.numpy(), rtol=1e-13 if dtype == "float64" else 1e-6, atol=0)


def test_erfcx_gradient_matches_torch(torch):
    points = [-1.0, 0.5, 2.9, 3.1, 30.0]
    grads = []
    for lib in (tensor, torch):
        x = lib.tensor(points, dtype=lib.float64, requires_grad=True)
        lib.special.erfcx(x).sum().backward()
        grads.append(x.grad.numpy())
    assert_close(grads[0], grads[1], rtol=1e-10, atol=0)


# (id, call on a library): each is compared with torch's result, dtype first.
CALLS = [
    ("xlog1py_scalar_other", lambda m: m.special.xlog1py(m.tensor([1.0, 2.0]), 2.0)),
    ("xlog1py_scalar_input", lambda m: m.special.xlog1py(2, m.tensor([1.0, 2.0]))),
    ("xlog1py_int", lambda m: m.special.xlog1py(m.tensor([1, 2]), m.tensor([1, 2]))),
    ("ndtr_bool", lambda m: m.special.ndtr(m.tensor([True, False]))),
    ("log_ndtr_bool", lambda m: m.special.log_ndtr(m.tensor([True, False]))),
    ("ndtri_float32_tail", lambda m: m.special.ndtri(m.tensor([1e-10, 0.3, 1 - 1e-7, 0.0, 1.0]))),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_values_and_dtypes_match_torch(torch, call):
    ours, theirs = call(tensor), call(torch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert_close(ours, theirs.numpy(), rtol=1e-6, atol=0)


BFLOAT16_FUNCTIONS = ["erf", "erfc", "erfinv", "digamma", "gammaln", "ndtr", "psi", "expit"]


@pytest.mark.parametrize("name", BFLOAT16_FUNCTIONS)
def test_bfloat16_input_gives_bfloat16_like_torch(torch, name):
    values = [-0.9, -0.3, 0.2, 0.7, 0.95] if name == "erfinv" else [0.3, 0.9, 1.7, 2.5, 4.0]
    x = tensor.tensor(values, dtype=tensor.bfloat16, requires_grad=True)
    tx = torch.tensor(values, dtype=torch.bfloat16, requires_grad=True)
    ours, theirs = getattr(tensor.special, name)(x), getattr(torch.special, name)(tx)
    assert ours.dtype is tensor.bfloat16 and theirs.dtype == torch.bfloat16
    assert_close(ours.float(), theirs.float().detach().numpy(), rtol=1e-2, atol=1e-2)
    ours.float().sum().backward()
    theirs.float().sum().backward()
    assert x.grad.dtype is tensor.bfloat16
    assert_close(x.grad.float(), tx.grad.float().numpy(), rtol=2e-2, atol=2e-2)


def _grad(lib, fn, values, dtype="float64"):
    x = lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)
    fn(lib, x).sum().backward()
    return x.grad.tolist()


def test_sinc_gradient_is_accurate_near_zero():
    x = [1e-20, 1e-8, 1e-5, 1e-4, 0.1, 0.49, 0.51, 2.5]
    exact = [math.pi * (u * math.cos(u) - math.sin(u)) / u**2
             if v > 0.01 else -math.pi * (u / 3 - u**3 / 30 + u**5 / 840) for v, u in ((v, math.pi * v) for v in x)]
    for dtype, rtol in (("float64", 1e-12), ("float32", 1e-5)):
        assert_close(_grad(tensor, lambda L, t: L.special.sinc(t), x, dtype), exact, rtol=rtol, atol=0)


EDGE_GRADIENTS = {
    "xlogy": (lambda L, x: L.xlogy(x, L.tensor([0.5, 3.0, 2.0, 0.0], dtype=x.dtype)), [0.0, 0.0, 1.0, 0.0]),
    "xlog1py": (lambda L, x: L.special.xlog1py(x, L.tensor([0.5, 3.0, 2.0, -1.0], dtype=x.dtype)),
                [0.0, 0.0, 1.0, 0.0]),
    "logit": (lambda L, x: L.special.logit(x), [-0.5, 0.0, 0.3, 1.0, 1.5]),
    "logit_eps": (lambda L, x: L.special.logit(x, eps=0.0), [-0.5, 0.0, 0.3, 1.0, 1.5]),
    "logit_eps_clamps": (lambda L, x: L.logit(x, eps=0.2), [0.1, 0.3, 0.9]),
    "entr": (lambda L, x: L.special.entr(x), [-0.5, 0.0, 0.3]),
}


@pytest.mark.parametrize("name", sorted(EDGE_GRADIENTS))
def test_gradients_at_domain_edges_match_torch(torch, name):
    fn, values = EDGE_GRADIENTS[name]
    assert_close(_grad(tensor, fn, values), _grad(torch, fn, values))  # NaN and inf must agree too


@pytest.mark.parametrize("n", [1, 2, 3])
def test_polygamma_of_very_negative_input_is_fast_and_matches_torch(torch, n):
    x = [-100.3, -2.5, -0.7, 0.3, 7.5]  # (torch's own loop takes seconds at -1e9)
    ours = tensor.special.polygamma(n, tensor.tensor([-1e9 + 0.25] + x, dtype=tensor.float64)).tolist()
    theirs = torch.special.polygamma(n, torch.tensor(x, dtype=torch.float64)).tolist()
    assert_close(ours[1:], theirs, rtol=1e-9)
    assert math.isfinite(ours[0])
    assert math.isnan(tensor.special.polygamma(n, tensor.tensor([-math.inf])).item())


def test_polygamma_poles_and_digamma_backward_on_negative_input():
    assert tensor.special.polygamma(2, tensor.tensor([0.0, -1.0])).tolist() == [-math.inf, -math.inf]
    assert tensor.special.polygamma(3, tensor.tensor([0.0, -1.0])).tolist() == [math.inf, math.inf]
    x = tensor.tensor([-1e8 - 0.5], dtype=tensor.float64, requires_grad=True)
    tensor.digamma(x).sum().backward()
    assert_close(x.grad.item(), math.pi**2, rtol=1e-6)  # pi^2 / sin^2 - trigamma(1 - x)


def test_multigammaln_has_no_domain_check_but_needs_p_positive(torch):
    x = [0.2, 0.6, 3.0]
    assert_close(tensor.special.multigammaln(tensor.tensor(x, dtype=tensor.float64), 2).tolist(),
                 torch.special.multigammaln(torch.tensor(x, dtype=torch.float64), 2).tolist())
    with pytest.raises(RuntimeError, match="p has to be"):
        tensor.mvlgamma(tensor.tensor([2.0]), 0)


@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "digamma", "lgamma", "special.ndtr", "special.ndtri",
                                  "special.log_ndtr", "special.erfcx", "special.entr", "logit", "special.gammaln",
                                  "special.xlogy", "special.xlog1py"])
def test_real_special_functions_refuse_complex_input_as_torch(name, torch):
    """They returned a real result of the real part (the imaginary part silently dropped)."""
    for lib in (tensor, torch):
        fn = lib
        for part in name.split("."):
            fn = getattr(fn, part)
        x = lib.tensor([0.5 + 0.1j, 0.2 + 0.3j])
        with pytest.raises(NotImplementedError):
            fn(x, x) if name.startswith("special.xlog") else fn(x)
