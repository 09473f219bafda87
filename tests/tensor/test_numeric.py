"""Numerical helpers (tensor/ops/numeric.py) against torch: diff past the dim's size,
tensordot/inner with an empty contraction or tensor ``dims``, quantile with a 0-d ``q``."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/tensor/conftest.py

RNG = np.random.default_rng(3)


def _both(torch, x, device):
    return tensor.tensor(x, device=device), torch.tensor(x)


# ---------------------------------------------------------------- diff

DIFF_CASES = [
    ("n_above_size", np.array([1, 2, 3]), {"n": 4}),
    ("n_equal_size", np.array([1.0, 2.0, 4.0]), {"n": 3}),
    ("dim0_n_above_size", np.ones((3, 4)), {"n": 5, "dim": 0}),
    ("bool_n_above_size", np.array([True, False]), {"n": 3}),
    ("with_append", np.ones((3, 4)), {"n": 3, "dim": 0, "append": np.ones((1, 4))}),
    ("n_zero", np.array([1.0, 2.0]), {"n": 0}),
]


@pytest.mark.parametrize("name,x,kwargs", DIFF_CASES, ids=[c[0] for c in DIFF_CASES])
def test_diff_matches_torch(device, torch, name, x, kwargs):
    ours_kwargs = {k: tensor.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    torch_kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    ours = tensor.diff(tensor.tensor(x, device=device), **ours_kwargs)
    assert_close(ours, torch.diff(torch.tensor(x), **torch_kwargs).numpy())


@pytest.mark.parametrize("x,n", [(np.array(1.0), 1), (np.array([1.0, 2.0]), -1)], ids=["zero_dim", "negative_n"])
def test_diff_errors_are_torchs(device, torch, x, n):
    with pytest.raises(RuntimeError):
        torch.diff(torch.tensor(x), n=n)
    with pytest.raises(RuntimeError):
        tensor.diff(tensor.tensor(x, device=device), n=n)


# ---------------------------------------------------------------- tensordot / inner

A345, B456 = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((4, 5, 6))
TENSORDOT_CASES = [
    ("empty_contraction", lambda m, a, b: m.tensordot(m.zeros(2, 0), m.zeros(0, 3), dims=1)),
    ("empty_free_dim", lambda m, a, b: m.tensordot(m.ones(0, 3), m.ones(3, 2), dims=1)),
    ("inner_empty", lambda m, a, b: m.inner(m.zeros(0), m.zeros(0))),
    ("inner_empty_batched", lambda m, a, b: m.inner(m.ones(2, 0), m.ones(3, 0))),
    ("dims_0d_tensor", lambda m, a, b: m.tensordot(a, b, dims=m.tensor(2))),
    ("dims_2d_tensor", lambda m, a, b: m.tensordot(a, b, dims=m.tensor([[1, 2], [0, 1]]))),
    ("dims_list_of_lists", lambda m, a, b: m.tensordot(a, b, dims=[[2, 1], [1, 0]])),
    ("dims_zero", lambda m, a, b: m.tensordot(a[0, 0], b[0, 0], dims=0)),
]


@pytest.mark.parametrize("name,fn", TENSORDOT_CASES, ids=[c[0] for c in TENSORDOT_CASES])
def test_tensordot_and_inner_match_torch(device, torch, name, fn):
    ours = fn(tensor, tensor.tensor(A345, device=device), tensor.tensor(B456, device=device))
    theirs = fn(torch, torch.tensor(A345), torch.tensor(B456))
    assert_close(ours, theirs.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dims", [-1, 4], ids=str)
def test_tensordot_bad_int_dims_raise_like_torch(device, torch, dims):
    with pytest.raises(RuntimeError):
        torch.tensordot(torch.tensor(A345), torch.tensor(B456), dims)
    with pytest.raises(RuntimeError, match="tensordot expects dims"):
        tensor.tensordot(tensor.tensor(A345, device=device), tensor.tensor(B456, device=device), dims)


# ---------------------------------------------------------------- quantile with a 0-d q

@pytest.mark.parametrize("op", ["quantile", "nanquantile"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), (0, True)], ids=str)
def test_quantile_with_zero_dim_q_adds_no_dim(device, torch, op, dim, keepdim):
    x = np.array([[1.0, 2.0, 3.0], [4.0, np.nan if op == "nanquantile" else 5.0, 6.0]])
    t, p = _both(torch, x, device)
    ours = getattr(tensor, op)(t, tensor.tensor(0.25, dtype=t.dtype, device=device), dim=dim, keepdim=keepdim)
    theirs = getattr(torch, op)(p, torch.tensor(0.25, dtype=torch.float64), dim=dim, keepdim=keepdim)
    assert_close(ours, theirs.numpy())


def test_cov_and_corrcoef_of_complex_rows_are_hermitian(torch):
    z = [[1 + 2j, 3 - 1j, 0.5j], [2 + 0j, -1 + 1j, 1 - 1j]]
    fw, aw = [1, 2, 1], [0.5, 1.0, 2.0]
    ours = tensor.cov(tensor.tensor(z), fweights=tensor.tensor(fw), aweights=tensor.tensor(aw))
    theirs = torch.cov(torch.tensor(z), fweights=torch.tensor(fw), aweights=torch.tensor(aw))
    assert ours.dtype is tensor.complex64
    assert_close(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    assert_close(tensor.corrcoef(tensor.tensor(z)).numpy(), torch.corrcoef(torch.tensor(z)).numpy(), atol=1e-6)


def test_cov_squeezes_a_single_variable_and_refuses_bool(torch):
    rows = [[1.0, 2.0, 4.0]]
    assert tensor.cov(tensor.tensor(rows)).shape == tuple(torch.cov(torch.tensor(rows)).shape) == ()
    with pytest.raises(RuntimeError, match="bool"):
        tensor.cov(tensor.tensor([[True, False]]))


@pytest.mark.parametrize("bins", ["edges", 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("density", [False, True])
def test_histogram_takes_edges_and_weights_as_torch(torch, bins, weighted, density):
    def run(lib):
        x = lib.tensor([0.0, 1.0, 2.5, -1.0])
        edges = lib.tensor([-3.0, 0.0, 1.0, 3.0]) if bins == "edges" else bins
        weight = lib.tensor([1.0, 2.0, 3.0, 0.5]) if weighted else None
        return lib.histogram(x, edges, weight=weight, density=density)

    ours, theirs = run(tensor), run(torch)
    assert_close(ours.hist.numpy(), theirs.hist.numpy())
    assert_close(ours.bin_edges.numpy(), theirs.bin_edges.numpy())
    assert ours.hist.dtype is tensor.float32


def test_histogram_refuses_non_float_input():
    with pytest.raises(NotImplementedError, match="histogram"):
        tensor.histogram(tensor.tensor([1, 2]), 2)


@pytest.mark.parametrize("case", ["int input", "q of another dtype"])
def test_quantile_checks_dtypes_as_torch(torch, case):
    def run(lib):
        if case == "int input":
            return lib.quantile(lib.tensor([1, 2, 3]), 0.5)
        return lib.quantile(lib.tensor([1.0, 2.0]), lib.tensor([0.5], dtype=lib.float64))

    with pytest.raises(RuntimeError):
        run(torch)
    with pytest.raises(RuntimeError, match="quantile"):
        run(tensor)


def test_diff_of_order_zero_ignores_prepend_and_append():
    x = tensor.tensor([1.0, 4.0, 9.0])
    assert tensor.diff(x, n=0, prepend=tensor.tensor([0.0]), append=tensor.tensor([0.0])).tolist() == [1.0, 4.0, 9.0]
    with pytest.raises(TypeError):
        tensor.diff(x, prepend=1.0)


def test_cumulative_trapezoid_of_an_empty_dim():
    assert tensor.cumulative_trapezoid(tensor.zeros(3, 0)).shape == (3, 0)
    assert tensor.cumulative_trapezoid(tensor.zeros(0), x=tensor.zeros(0)).shape == (0,)
    with pytest.raises(TypeError):
        tensor.trapezoid(tensor.ones(3), 0.5)


def test_cov_promotes_aweights_and_checks_weights():
    x = tensor.randn(2, 4)
    assert tensor.cov(x, aweights=tensor.rand(4, dtype=tensor.float64)).dtype is tensor.float64
    bad = [dict(fweights=tensor.tensor([-1, 2, 1, 1])), dict(fweights=tensor.rand(4)),
           dict(fweights=tensor.ones(1, 4, dtype=tensor.int64)), dict(aweights=-tensor.rand(4)),
           dict(aweights=tensor.ones(3))]
    for kwargs in bad:
        with pytest.raises(RuntimeError):
            tensor.cov(x, **kwargs)
    with pytest.raises(RuntimeError):
        tensor.cov(tensor.randn(2, 2, 2))
    with pytest.raises(TypeError):
        tensor.cov(x, correction=0.5)


def test_logspace_integer_and_complex_corners(torch):
    assert tensor.logspace(0.5, 2, 4, dtype=tensor.int64).tolist() == [1, 4, 21, 100]
    ours = tensor.logspace(0, 1, 3, base=-2.0, dtype=tensor.complex128).tolist()
    assert_close(ours, torch.logspace(0, 1, 3, base=-2.0, dtype=torch.complex128).tolist(), atol=1e-12)
