"""Assertion and waiting helpers shared by the test suite."""

from __future__ import annotations

import contextlib
import os
import time

import numpy as np
import pytest

import tensor
from tensor import _threads


def child_pythonpath(root: str) -> str:
    """PYTHONPATH for a test's subprocess: ``root``, then what this process was given (the CuPy
    stand-in's directory under ``DISTRIB_CUPY_STANDIN=1``)."""
    inherited = os.environ.get("PYTHONPATH")
    return os.pathsep.join([root, inherited]) if inherited else root


# For tests of our own intra-op splitting (tensor/_threads.py), which BLAS threading replaces.
needs_split = pytest.mark.skipif(
    not _threads.splits_matmuls(), reason="numpy's BLAS is not an OpenBLAS we control"
)


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


def wait_until(condition, timeout: float = 20.0) -> bool:
    """Poll ``condition()`` until it is true or ``timeout`` seconds pass; returns whether it
    became true. For effects that another process completes (a reaped child, a removed
    segment), which give no event to wait on."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@contextlib.contextmanager
def raises_by_next_sync(device, error: type, match: str):
    """``pytest.raises`` for a checked op: on the CPU it raises at once; on a GPU its device-side
    assert raises at the next synchronisation (Note [Device-side asserts]), made here."""
    with pytest.raises(error, match=match):
        yield
        if str(device).startswith("cuda"):
            tensor.cuda.synchronize()
