"""The issue-16 ops raise what torch raises on bad arguments (the same exception class, or for
torch's LinAlgError our ``tensor.linalg.LinAlgError``), and the special functions are accurate
to ~1e-13 over their whole range (against torch and ``math``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tensor

ERRORS = [
    ("topk_k_too_large", lambda m: m.topk(m.ones(3), 4)),
    ("kthvalue_k_zero", lambda m: m.kthvalue(m.ones(3), 0)),
    ("sort_bad_dim", lambda m: m.sort(m.ones(3), 2)),
    ("cumsum_bad_dim", lambda m: m.cumsum(m.ones(2, 2), 3)),
    ("tril_1d", lambda m: m.tril(m.ones(3))),
    ("roll_mismatch", lambda m: m.roll(m.ones(2, 2), (1, 2), (0,))),
    ("rot90_same_dims", lambda m: m.rot90(m.ones(2, 2), 1, (0, 0))),
    ("repeat_too_few", lambda m: m.ones(2, 2).repeat(2)),
    ("diagonal_same_dims", lambda m: m.diagonal(m.ones(2, 2), 0, 1, 1)),
    ("diag_3d", lambda m: m.diag(m.ones(2, 2, 2))),
    ("block_diag_3d", lambda m: m.block_diag(m.ones(2, 2, 2))),
    ("combinations_2d", lambda m: m.combinations(m.ones(2, 2))),
    ("unfold_too_big", lambda m: m.ones(3).unfold(0, 4, 1)),
    ("masked_select_int_mask", lambda m: m.masked_select(m.ones(3), m.ones(3, dtype=m.int64))),
    ("scatter_reduce_bad", lambda m: m.scatter_reduce(m.ones(3), 0, m.zeros(2, dtype=m.int64), m.ones(2), "avg")),
    ("index_reduce_bad", lambda m: m.index_reduce(m.ones(3), 0, m.zeros(2, dtype=m.int64), m.ones(2), "sum")),
    ("bincount_negative", lambda m: m.bincount(m.tensor([-1, 2]))),
    ("bincount_float", lambda m: m.bincount(m.tensor([1.0]))),
    ("histc_int", lambda m: m.histc(m.tensor([1, 2]))),
    ("searchsorted_shape", lambda m: m.searchsorted(m.ones(2, 3), m.ones(3, 3))),
    ("bucketize_2d", lambda m: m.bucketize(m.ones(3), m.ones(2, 2))),
    ("outer_2d", lambda m: m.outer(m.ones(2, 2), m.ones(2))),
    ("cross_no_3", lambda m: m.linalg.cross(m.ones(2, 2), m.ones(2, 2))),
    ("trace_1d", lambda m: m.trace(m.ones(3))),
    ("cdist_columns", lambda m: m.cdist(m.ones(2, 3), m.ones(2, 2))),
    ("nanmean_int", lambda m: m.nanmean(m.ones(2, dtype=m.int64))),
    ("polygamma_negative", lambda m: m.polygamma(-1, m.ones(2))),
    ("inv_nonsquare", lambda m: m.linalg.inv(m.ones(2, 3))),
    ("inv_singular", lambda m: m.linalg.inv(m.zeros(2, 2))),
    ("inv_int", lambda m: m.linalg.inv(m.ones(2, 2, dtype=m.int64))),
    ("cholesky_not_pd", lambda m: m.linalg.cholesky(-m.eye(2))),
    ("solve_shapes", lambda m: m.linalg.solve(m.eye(2), m.ones(3, 1))),
    ("matrix_norm_1d", lambda m: m.linalg.matrix_norm(m.ones(3))),
    ("matrix_power_nonsquare", lambda m: m.linalg.matrix_power(m.ones(2, 3), 2)),
    ("multi_dot_one", lambda m: m.linalg.multi_dot([m.ones(2, 2)])),
    ("vector_norm_int", lambda m: m.linalg.vector_norm(m.ones(2, dtype=m.int64))),
    ("qr_bad_mode", lambda m: m.linalg.qr(m.ones(2, 2), mode="full")),
    ("fft_bad_norm", lambda m: m.fft.fft(m.ones(4), norm="unit")),
    ("view_as_complex_int", lambda m: m.view_as_complex(m.ones(3, 2, dtype=m.int64))),
]


def _builtin_class(exc: BaseException) -> type:
    """The first builtin exception class of ``exc`` (torch's LinAlgError is a RuntimeError)."""
    return next(c for c in type(exc).__mro__ if c.__module__ == "builtins")


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_types_match_torch(torch, name, call):
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(Exception) as raised:
        call(tensor)
    assert issubclass(raised.type, _builtin_class(expected.value)), (
        f"{name}: torch raises {expected.type.__name__}, we raise {raised.type.__name__}: {raised.value}"
    )
    if "LinAlgError" in expected.type.__name__:
        assert raised.type is tensor.linalg.LinAlgError


def test_lgamma_matches_math_over_its_range():
    x = np.concatenate([np.linspace(-30.5, 0.99, 400), np.geomspace(1e-8, 1e6, 400), [1.0, 2.0, 1e300]])
    x = x[(x > 0) | (x != np.round(x))]  # no poles
    ours = tensor.lgamma(tensor.tensor(x, dtype=tensor.float64)).numpy()
    expected = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(ours, expected, rtol=1e-13, atol=2e-14)


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_polygamma_matches_torch(torch, n):
    x = np.concatenate([np.geomspace(0.01, 100, 200), np.linspace(-3.95, -0.05, 40)])  # no poles
    ours = tensor.polygamma(n, tensor.tensor(x, dtype=tensor.float64)).numpy()
    ref = torch.polygamma(n, torch.tensor(x)).numpy()
    # torch's trigamma is accurate to ~1e-9 only (ours gives pi^2/6 at 1 exactly)
    np.testing.assert_allclose(ours, ref, rtol=1e-8 if n == 1 else 1e-11)
    if n == 1:
        assert tensor.polygamma(1, tensor.tensor([1.0], dtype=tensor.float64)).item() == pytest.approx(
            math.pi**2 / 6, rel=1e-15
        )


def test_erfinv_round_trips_and_matches_torch(torch):
    y = np.concatenate([np.linspace(-1, 1, 4001), [1e-300, 1e-12, 1 - 1e-15, -(1 - 2**-52)]])
    ours = tensor.erfinv(tensor.tensor(y, dtype=tensor.float64)).numpy()
    ref = torch.erfinv(torch.tensor(y)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=0)
    assert np.isnan(tensor.erfinv(tensor.tensor([1.5, float("nan")])).numpy()).all()


def test_digamma_poles_and_signed_zero_match_torch(torch):
    x = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-300])
    for name in ("digamma", "lgamma"):
        ours = getattr(tensor, name)(tensor.tensor(x, dtype=tensor.float64)).numpy()
        np.testing.assert_allclose(ours, getattr(torch, name)(torch.tensor(x)).numpy(), rtol=1e-15)
