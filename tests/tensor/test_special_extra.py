"""i0, igamma, igammac (tensor/ops/special_extra.py) and binomial, poisson (tensor/_random_extra.py)
against torch, mpmath and moments (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/tensor/conftest.py


def _grid(rng, count=400):
    """Shapes a in (0.01, 100), x in (0, 3a), and a few a up to 1e4 (the long series)."""
    a = np.concatenate([rng.uniform(0.01, 5, count), rng.uniform(5, 100, count), 10 ** rng.uniform(2, 4, 20)])
    return a, a * rng.uniform(0, 3, a.size)


def test_i0_matches_torch_in_every_dtype_and_its_forms(torch, device):
    x = np.concatenate([np.linspace(-40, 40, 801), [0.0, 1e-3, 700.0, -700.0]])
    ref = torch.i0(torch.tensor(x)).numpy()
    ours = tensor.i0(tensor.tensor(x, device=device))
    assert ours.dtype is tensor.float64 and ours.device.type == device
    np.testing.assert_allclose(ours.cpu().numpy(), ref, rtol=1e-14)
    small = tensor.tensor(x[:801], dtype=tensor.float32, device=device)
    assert tensor.i0(small).dtype is tensor.float32
    np.testing.assert_allclose(small.i0().cpu().numpy(), torch.i0(torch.tensor(x[:801]).float()).numpy(), rtol=2e-6)
    ints = tensor.i0(tensor.tensor([1, 2], device=device))  # integers: the default float dtype, as torch
    assert ints.dtype is tensor.float32 and ints.cpu().tolist() == pytest.approx(
        torch.i0(torch.tensor([1, 2])).tolist()
    )
    with pytest.raises(NotImplementedError, match="complex64"):
        tensor.i0(tensor.tensor([1j], device=device))
    y = tensor.tensor([0.5, 3.0], device=device)
    assert tensor.i0_(y) is y and y.cpu().tolist() == pytest.approx(torch.i0(torch.tensor([0.5, 3.0])).tolist())


def test_special_namespace_forms_match_torch(torch, device):
    x = np.linspace(-35, 35, 141)
    np.testing.assert_allclose(tensor.special.i0(tensor.tensor(x, device=device)).cpu().numpy(),
                               torch.special.i0(torch.tensor(x)).numpy(), rtol=1e-14)  # fmt: skip
    np.testing.assert_allclose(tensor.special.i1(tensor.tensor(x, device=device)).cpu().numpy(),
                               torch.special.i1(torch.tensor(x)).numpy(), rtol=1e-13)  # fmt: skip
    a, y = tensor.tensor([0.5, 3.0], device=device), tensor.tensor([1.0, 2.0], device=device)
    ta, ty = torch.tensor([0.5, 3.0]), torch.tensor([1.0, 2.0])
    assert tensor.special.gammainc(a, y).cpu().tolist() == pytest.approx(torch.special.gammainc(ta, ty).tolist())
    assert tensor.special.gammaincc(a, y).cpu().tolist() == pytest.approx(torch.special.gammaincc(ta, ty).tolist())


def test_i0_first_and_second_derivatives():
    x = tensor.tensor([-35.0, -2.5, 0.0, 0.3, 4.0, 31.0], dtype=tensor.float64, requires_grad=True)
    for fn in (tensor.i0, tensor.special.i1):  # i0' = i1, i1' = i0 - i1 / x (1/2 at 0)
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


def test_igamma_is_float64_accurate_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    a, x = _grid(np.random.default_rng(0), 40)
    p = tensor.igamma(tensor.tensor(a), tensor.tensor(x)).numpy()
    q = tensor.igammac(tensor.tensor(a), tensor.tensor(x)).numpy()
    with mpmath.workdps(50):
        exact = [mpmath.gammainc(s, 0, t, regularized=True) for s, t in zip(a, x)]
        ref_p = np.array([float(v) for v in exact])
        ref_q = np.array([float(1 - v) for v in exact])  # 1e-16 relative down to Q ~ 1e-34
    np.testing.assert_allclose(p, ref_p, rtol=0, atol=1e-13)
    np.testing.assert_allclose(q, ref_q, rtol=0, atol=1e-13)
    for ours, ref in ((p, ref_p), (q, ref_q)):  # relative accuracy where not underflowing, for a < 100
        kept = (a < 100) & (ref > 1e-30)
        np.testing.assert_allclose(ours[kept], ref[kept], rtol=1e-12)


def test_igamma_matches_torch_with_its_edges_broadcasting_and_errors(torch, device):
    a, x = _grid(np.random.default_rng(1))
    for ours_fn, torch_fn in ((tensor.igamma, torch.igamma), (tensor.igammac, torch.igammac)):
        ours = ours_fn(tensor.tensor(a, device=device), tensor.tensor(x, device=device)).cpu().numpy()
        np.testing.assert_allclose(ours, torch_fn(torch.tensor(a), torch.tensor(x)).numpy(), atol=1e-8)
        inf, nan = float("inf"), float("nan")
        edges = ([0.0, 0, 1, -1, inf, 2, inf, 3, nan, 1], [0.0, 1, 0, 1, 1, inf, inf, 2, 1, -1])
        got = ours_fn(*(tensor.tensor(e, dtype=tensor.float64, device=device) for e in edges)).cpu().numpy()
        expected = torch_fn(*(torch.tensor(e, dtype=torch.float64) for e in edges)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12, equal_nan=True)
        column = tensor.tensor([[0.5], [2.0]], dtype=tensor.float32, device=device)
        row = tensor.tensor([0.1, 1.0, 4.0], device=device)
        out = ours_fn(column, row)
        assert out.shape == (2, 3) and out.dtype is tensor.float32
        expected = torch_fn(torch.tensor([[0.5], [2.0]]), torch.tensor([0.1, 1.0, 4.0])).numpy()
        np.testing.assert_allclose(out.cpu().numpy(), expected, rtol=1e-6)
        with pytest.raises(NotImplementedError, match="not implemented for 'int64'"):
            ours_fn(tensor.tensor([1, 2], device=device), tensor.tensor([1, 2], device=device))
    x1 = tensor.tensor([1.0, 2.0], device=device)
    assert x1.igamma(x1).cpu().tolist() == pytest.approx(
        torch.tensor([1.0, 2.0]).igamma(torch.tensor([1.0, 2.0])).tolist()
    )
    assert x1.igammac_(tensor.tensor([1.0, 1.0], device=device)) is x1


def test_igamma_derivative_is_wrt_x_only_as_torch():
    a = tensor.tensor([0.5, 1.0, 3.0, 12.0], dtype=tensor.float64)
    x = tensor.tensor([0.2, 1.5, 2.0, 15.0], dtype=tensor.float64, requires_grad=True)
    for fn in (tensor.igamma, tensor.igammac):
        assert gradcheck(lambda t, fn=fn: fn(a, t), (x,))
        assert gradgradcheck(lambda t, fn=fn: fn(a, t), (x,))
        with pytest.raises(NotImplementedError, match="derivative for .*input.* is not implemented"):
            fn(a.clone().requires_grad_(), x).sum().backward()


def _moments(samples: tensor.Tensor) -> tuple[float, float]:
    values = samples.double()
    return values.mean().item(), values.var().item()


def test_poisson_and_binomial_moments_dtypes_and_generator(device):
    n = 40000
    rates = tensor.tensor([0.0, 0.5, 3.0, 250.0], device=device).repeat(n, 1)
    draws = tensor.poisson(rates)
    assert draws.dtype is tensor.float32 and draws.device.type == device and not draws.requires_grad
    for j, rate in enumerate([0.0, 0.5, 3.0, 250.0]):
        mean, var = _moments(draws[:, j])
        assert mean == pytest.approx(rate, abs=5 * (rate / n) ** 0.5 + 1e-12)
        assert var == pytest.approx(rate, rel=0.05, abs=1e-12)
    count = tensor.tensor([[0.0], [5.0], [80.0]], dtype=tensor.float64, device=device)
    prob = tensor.tensor([0.0, 0.3, 1.0], dtype=tensor.float64, device=device)
    draws = tensor.binomial(count.expand(3, n // 8).reshape(3, -1, 1), prob)  # broadcast (3, n/8, 3)
    assert draws.dtype is tensor.float64 and draws.shape == (3, n // 8, 3)
    for i, c in enumerate([0.0, 5.0, 80.0]):
        for j, p in enumerate([0.0, 0.3, 1.0]):
            mean, var = _moments(draws[i, :, j])
            assert mean == pytest.approx(c * p, abs=5 * (c * p * (1 - p) * 8 / n) ** 0.5 + 1e-12)
            assert var == pytest.approx(c * p * (1 - p), rel=0.1, abs=1e-12)
    gen = tensor.Generator(device).manual_seed(5) if device == "cpu" else None
    if gen is not None:
        first = tensor.poisson(rates[:3], gen)
        gen.manual_seed(5)
        assert tensor.equal(first, tensor.poisson(rates[:3], generator=gen))


def test_poisson_and_binomial_errors(device):
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        tensor.poisson(tensor.tensor([1.0, -0.5], device=device))
        tensor.cuda.synchronize() if device == "cuda" else None
    with pytest.raises(NotImplementedError, match="int64"):
        tensor.poisson(tensor.tensor([1, 2], device=device))
    with pytest.raises(ValueError, match="floating-point dtypes for count, got: int64"):
        tensor.binomial(tensor.tensor([5], device=device), tensor.tensor([0.5], device=device))
    with pytest.raises(RuntimeError, match="0 <= prob <= 1"):
        tensor.binomial(tensor.tensor([5.0], device=device), tensor.tensor([1.5], device=device))
        tensor.cuda.synchronize() if device == "cuda" else None
    if device == "cuda":
        with pytest.raises(RuntimeError, match="expected a generator on cuda"):
            tensor.poisson(tensor.ones(2, device="cuda"), tensor.Generator("cpu"))
