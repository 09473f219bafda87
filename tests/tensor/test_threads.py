"""Intra-op threads (``tensor._threads``): ``set_num_threads``/``get_num_threads`` and the
matmul that splits a large product across threads (Note [Intra-op matmul]).

Split products are compared with a float64 numpy reference for every way a product is
split (rows, columns, batch entries) and for the products that are never split; the
thread setting is checked in fresh interpreters, including the ``DISTRIB_INTRAOP=blas``
opt-out and a forked child.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import tensor
from tensor import _threads
from tensor.ops.special import linear
from tests.helpers import needs_split

RNG = np.random.default_rng(5)


def _run(code: str, **env) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, **env}, check=True)
    return out.stdout.strip()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_num_threads_rejects_non_positive_integers(bad):
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        tensor.set_num_threads(bad)


def test_set_num_threads_round_trips(two_threads):
    tensor.set_num_threads(3)
    assert tensor.get_num_threads() == 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_shape,b_shape,transposed", [
    ((256, 300), (300, 200), False),  # rows
    ((12, 2000), (2000, 600), False),  # columns (few rows)
    ((256, 300), (200, 300), True),  # a transposed weight, as linear passes it
    ((6, 64, 128), (6, 128, 96), False),  # batch entries
    ((6, 64, 128), (128, 96), False),  # batch entries sharing one matrix
    ((8, 2000), (2000, 8), False),  # long inner dim only: not split
    ((3, 4), (4, 5), False),  # small: not split
])
def test_matmul_matches_numpy(two_threads, dtype, a_shape, b_shape, transposed):
    a = RNG.standard_normal(a_shape).astype(dtype)
    b = RNG.standard_normal(b_shape).astype(dtype)
    b = b.T if transposed else b
    out = _threads.matmul(a, b)
    assert out.dtype == dtype and out.shape == np.matmul(a, b).shape
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, np.matmul(a.astype(np.float64), b.astype(np.float64)), rtol=tol, atol=tol)


@needs_split
def test_a_large_product_really_runs_on_the_pool(two_threads):
    seen = []
    a, b = RNG.standard_normal((256, 256)), RNG.standard_normal((256, 256))
    original = np.matmul

    def spy(x, y, *args, **kwargs):
        seen.append(x.shape)
        return original(x, y, *args, **kwargs)

    np.matmul = spy
    try:
        _threads.matmul(a, b)
    finally:
        np.matmul = original
    assert seen == [(128, 256), (128, 256)]


def test_tensor_matmul_and_linear_go_through_the_split(two_threads):
    x = tensor.randn(256, 300, dtype=tensor.float64, requires_grad=True)
    w = tensor.randn(200, 300, dtype=tensor.float64, requires_grad=True)
    out = linear(x, w)
    out.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy() @ w.detach().numpy().T, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), np.ones((256, 200)) @ w.detach().numpy(), rtol=1e-12)


def test_mismatched_shapes_raise_like_numpy(two_threads):
    with pytest.raises(ValueError):
        _threads.matmul(np.ones((300, 200)), np.ones((300, 200)))


@needs_split
def test_openblas_runs_single_threaded_while_we_split():
    out = _run("import tensor; from tensor import _threads as t; "
               "print(t._openblas.get_threads(), tensor.get_num_threads())",
               OMP_NUM_THREADS="3", OPENBLAS_NUM_THREADS="3")
    assert out == "1 3"


@needs_split
def test_distrib_intraop_blas_leaves_blas_threading_alone():
    out = _run("import tensor; from tensor import _threads as t; print(t._splitting, t._openblas.get_threads(), "
               "tensor.get_num_threads())", DISTRIB_INTRAOP="blas", OMP_NUM_THREADS="2", OPENBLAS_NUM_THREADS="2")
    assert out == "False 2 2"


def test_a_forked_child_splits_on_its_own_pool():
    code = (
        "import os, numpy as np, tensor\n"
        "from tensor import _threads\n"
        "tensor.set_num_threads(2)\n"
        "a = np.random.default_rng(0).standard_normal((256, 256))\n"
        "_threads.matmul(a, a)\n"  # the parent's pool exists now
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ok = np.allclose(_threads.matmul(a, a), a @ a)\n"
        "    os._exit(0 if ok else 1)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status))\n"
    )
    assert _run(code) == "0"


def test_describe_names_the_blas_and_who_threads_it():
    text = _threads.describe()
    assert ("split by tensor across" in text) == _threads._splitting
    if _threads._openblas is not None:
        assert "OpenBLAS" in text and "kernels" in text


def test_run_parallel_runs_every_job_on_its_own_thread_and_reraises_a_workers_error(two_threads):
    seen = []

    def job(k):
        seen.append((k, threading.get_ident()))

    assert _threads.run_parallel([functools.partial(job, k) for k in range(2)])
    assert _threads.run_parallel([functools.partial(job, k) for k in range(2, 5)])  # more jobs than threads
    assert sorted(k for k, _ in seen) == [0, 1, 2, 3, 4]
    ran_on = dict(seen)
    assert ran_on[0] == ran_on[2] == threading.get_ident() != ran_on[1]  # the first job runs in the caller

    def fail():
        raise ValueError("from a worker")

    with pytest.raises(ValueError, match="from a worker"):
        _threads.run_parallel([lambda: None, fail])
    done = []
    assert _threads.run_parallel([lambda: done.append(0), lambda: done.append(1)])  # the pool still works
    assert sorted(done) == [0, 1]


def test_a_busy_pool_refuses_a_second_caller(two_threads):
    inner = []

    def nested():
        inner.append(_threads.run_parallel([lambda: None, lambda: None]))

    assert _threads.run_parallel([nested, lambda: None])
    assert inner == [False]
