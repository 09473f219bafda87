"""Assertion helpers shared by the test suite."""

from __future__ import annotations

import numpy as np

import tensor


def to_numpy(t) -> np.ndarray:
    """Host copy of a tensor (or pass-through for arrays and numbers)."""
    if isinstance(t, tensor.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)


def assert_close(actual, expected, *, rtol=1e-5, atol=1e-6, check_dtype=True) -> None:
    """Check shape, then dtype, then values, in that order (like tinygrad's op tests)."""
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"shape: got {a.shape}, expected {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"dtype: got {a.dtype}, expected {e.dtype}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
