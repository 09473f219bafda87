"""Scans (tensor/ops/scan.py) against torch: low-precision accumulation of cumsum/cumprod,
complex cumprod gradients, and logcumsumexp's stability, NaN handling, complex support and
gradients."""

from __future__ import annotations

import numpy as np
import pytest

import autograd
import tensor
from tests.helpers import assert_close

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/tensor/conftest.py

RNG = np.random.default_rng(7)


def refused_on_cuda(dtype, device) -> bool:
    """True where the case cannot run because CUDA tensors cannot hold bfloat16 (CuPy has no
    bfloat16 arrays), after checking that making one gives the documented clear error."""
    if dtype != "bfloat16" or device != "cuda":
        return False
    with pytest.raises(TypeError, match="bfloat16 is not supported on cuda"):
        tensor.zeros(2, dtype=tensor.bfloat16, device=device)
    return True


# ---------------------------------------------------------------- low-precision accumulation

@pytest.mark.parametrize("op,fill,size", [("cumsum", 1.0, 3000), ("cumprod", 1.01, 100)], ids=str)
@pytest.mark.parametrize("dtype,dtype_arg", [("float16", None), ("float16", "float16"), ("bfloat16", None)],
                         ids=str)
def test_low_precision_scans_accumulate_in_float32(device, torch, op, fill, size, dtype, dtype_arg):
    if refused_on_cuda(dtype, device):
        return
    ours = getattr(tensor.full((size,), fill, dtype=getattr(tensor, dtype), device=device), op)(
        0, dtype=dtype_arg and getattr(tensor, dtype_arg))
    theirs = getattr(torch.full((size,), fill, dtype=getattr(torch, dtype)), op)(
        0, dtype=dtype_arg and getattr(torch, dtype_arg))
    assert ours.dtype.name == dtype
    assert_close(ours.float(), theirs.float().numpy())


# ---------------------------------------------------------------- complex cumprod

@pytest.mark.parametrize("zero_at", [None, 2], ids=str)
def test_complex_cumprod_gradient_matches_torch(device, torch, zero_at):
    z = RNG.standard_normal((2, 4)) + 1j * RNG.standard_normal((2, 4))
    if zero_at is not None:
        z[1, zero_at] = 0
    seed = RNG.standard_normal((2, 4)) + 1j * RNG.standard_normal((2, 4))
    t = tensor.tensor(z, device=device, requires_grad=True)
    p = torch.tensor(z, requires_grad=True)
    (g,) = autograd.grad(t.cumprod(1), t, tensor.tensor(seed, device=device))
    (tg,) = torch.autograd.grad(p.cumprod(1), p, torch.tensor(seed))
    assert_close(g, tg.resolve_conj().numpy(), rtol=1e-10)


# ---------------------------------------------------------------- logcumsumexp

INF, NAN = float("inf"), float("nan")
LOGCUMSUMEXP_CASES = [
    ("far_below_max", [-1000.0, 0.0, 5.0]),
    ("gap_of_200_float32", [-200.0, 0.0]),
    ("nan_spreads_forwards_only", [1.0, NAN, 2.0]),
    ("neg_inf", [-INF, 0.0, -INF, 1.0]),
    ("pos_inf", [1.0, INF, 2.0]),
    ("complex", [1 + 1j, 2 - 1j, -1 + 0.5j]),
    ("complex_far_below", [complex(-1000, 2), 1 + 1j]),
    ("complex_neg_inf", [complex(-INF, 0), 1 + 1j]),
]


@pytest.mark.parametrize("name,values", LOGCUMSUMEXP_CASES, ids=[c[0] for c in LOGCUMSUMEXP_CASES])
def test_logcumsumexp_values_and_gradients_match_torch(device, torch, name, values):
    dtype = "float32" if name.endswith("float32") else None
    x = np.array(values, dtype=dtype)
    seed = np.arange(1.0, len(values) + 1) * (1 - 0.5j if x.dtype.kind == "c" else -1) ** np.arange(len(values))
    t = tensor.tensor(x, device=device, requires_grad=True)
    p = torch.tensor(x, requires_grad=True)
    ours, theirs = tensor.logcumsumexp(t, 0), torch.logcumsumexp(p, 0)
    assert_close(ours, theirs.detach().numpy(), rtol=1e-6)
    with np.errstate(all="ignore"):
        (g,) = autograd.grad(ours, t, tensor.tensor(seed.astype(x.dtype), device=device))
    (tg,) = torch.autograd.grad(theirs, p, torch.tensor(seed.astype(x.dtype)))
    assert_close(g, tg.resolve_conj().numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_logcumsumexp_gradcheck_and_gradgradcheck(device, dtype):
    x = RNG.standard_normal((3, 4)) * 5
    if dtype == "complex128":
        x = x + 1j * RNG.standard_normal((3, 4))
    t = tensor.tensor(x, device=device, requires_grad=True)
    ref = np.log(np.cumsum(np.exp(x), axis=1))
    assert_close(tensor.logcumsumexp(t, 1), ref, rtol=1e-10)
    if dtype == "float64":  # gradcheck perturbs real parts only (grad.md #17)
        assert autograd.gradcheck(lambda a: tensor.logcumsumexp(a, 1), t)
        assert autograd.gradgradcheck(lambda a: tensor.logcumsumexp(a, 1), t)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_logcumsumexp_low_precision_matches_torch(device, torch, dtype):
    if refused_on_cuda(dtype, device):
        return
    x = np.array([-30.0, 1.0, 2.0, 0.5])
    ours = tensor.logcumsumexp(tensor.tensor(x, dtype=getattr(tensor, dtype), device=device), 0)
    theirs = torch.logcumsumexp(torch.tensor(x, dtype=getattr(torch, dtype)), 0)
    assert ours.dtype.name == dtype
    assert_close(ours.float(), theirs.float().numpy())


def test_logcumsumexp_empty_and_zero_dim(device, torch):
    assert tensor.logcumsumexp(tensor.zeros(0, 3, device=device), 0).shape == (0, 3)
    assert_close(tensor.logcumsumexp(tensor.tensor(2.0, device=device), 0), torch.tensor(2.0).numpy())


@pytest.mark.parametrize("values", [[1, 2], [True, False]], ids=str)
def test_logcumsumexp_refuses_integer_and_bool_like_torch(device, torch, values):
    with pytest.raises(NotImplementedError):
        torch.logcumsumexp(torch.tensor(values), 0)
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        tensor.logcumsumexp(tensor.tensor(values, device=device), 0)


def test_running_extrema_refuse_complex_as_torch(torch):
    for lib in (tensor, torch):
        for fn in (lib.cummax, lib.cummin):
            with pytest.raises(NotImplementedError, match="not implemented"):
                fn(lib.tensor([1 + 1j, 2 - 1j]), 0)
