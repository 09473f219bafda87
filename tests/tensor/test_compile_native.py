"""Native split regions (Note [Native regions] in tensor/_compile/native.py): the BLAS
products numba code calls, the thread pool that runs one slice per thread without the GIL,
and compiled blocks that use them, checked against numpy and eager."""

from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest

import nn.functional as F
import tensor
from tests.helpers import assert_close, needs_split

pytest.importorskip("numba", reason="numba is not installed (pip install 'distrib[compile]')")

from tensor._compile import native, region_pool, region_runner  # noqa: E402 - needs numba

pytestmark = pytest.mark.skipif(
    not native.AVAILABLE, reason="native regions need numpy's OpenBLAS symbols and Linux futexes"
)
RNG = np.random.default_rng(5)


def _layouts(m, k, dtype):
    """The same m x k matrix as BLAS reads it in place in several ways."""
    a = RNG.standard_normal((m, k)).astype(dtype)
    wide = np.zeros((m, k + 7), dtype)
    wide[:, 3 : 3 + k] = a
    return {
        "C": a,
        "F": np.asfortranarray(a),
        "column slice": wide[:, 3 : 3 + k],
        "transposed slice": np.ascontiguousarray(wide.T)[3 : 3 + k].T,
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_layout", ["C", "F", "column slice", "transposed slice"])
@pytest.mark.parametrize("b_layout", ["C", "F", "column slice", "transposed slice"])
def test_gemm_matches_numpy_for_every_layout_blas_reads(dtype, a_layout, b_layout):
    a, b = _layouts(37, 50, dtype)[a_layout], _layouts(50, 23, dtype)[b_layout]
    out = np.full((37, 30), np.nan, dtype)
    native.gemm(a, b, out[:, 4:27], 0.0)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    expected = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(out[:, 4:27], expected, rtol=rtol, atol=rtol, check_dtype=False)
    assert np.isnan(out[:, :4]).all() and np.isnan(out[:, 27:]).all()  # nothing outside the slice
    native.gemm(a, b, out[:, 4:27], 1.0)  # beta=1 accumulates
    assert_close(out[:, 4:27], 2 * expected, rtol=rtol, atol=rtol, check_dtype=False)


@pytest.mark.parametrize(("m", "k", "n"), [(0, 4, 3), (4, 0, 3), (4, 3, 0), (1, 1, 1), (1, 5, 1)])
def test_gemm_handles_empty_and_single_element_sizes(m, k, n):
    a, b = RNG.standard_normal((m, k)), RNG.standard_normal((k, n))
    out = np.full((m, n), 7.0)
    native.gemm(a, b, out, 0.0)
    assert_close(out, a @ b, rtol=1e-12, atol=1e-12)  # K = 0: all zeros, as numpy


@pytest.mark.parametrize(
    ("strides", "shape", "expected"),
    [
        ((8, 1), (4, 8), (111, 8)),  # row-major
        ((10, 1), (4, 8), (111, 10)),  # a column slice of a wider matrix
        ((1, 4), (4, 8), (112, 4)),  # column-major: BLAS reads the transpose
        ((3, 1), (1, 8), (111, 8)),  # one row: any row stride
        ((16, 2), (4, 8), (0, 0)),  # no unit stride: BLAS cannot read it in place
        ((1, 1), (4, 8), (0, 0)),  # overlapping rows
    ],
)
def test_blas_layout_names_the_transpose_and_leading_dimension(strides, shape, expected):
    assert native.blas_layout(*strides, *shape) == expected


def _slice_fn(record):
    """A Python slice function with the generated ones' signature: records its slice."""

    def fn(flags, post, seq, spins, lo, hi, *rest):
        if post:
            native.post(flags, seq)
        record.append((threading.get_ident(), lo, hi))

    return fn


def test_the_pool_runs_one_slice_per_thread_and_the_first_in_the_caller():
    record = []
    for threads in (2, 3, 2):  # a new thread count replaces the pool
        record.clear()
        args = [(t, t + 1) for t in range(threads)]
        assert region_pool.run(_slice_fn(record), args, False)
        assert sorted((lo, hi) for _, lo, hi in record) == args
        assert len({ident for ident, _, _ in record}) == threads
        assert (threading.get_ident(), 0, 1) in record


def test_an_error_in_a_worker_slice_is_raised_by_the_caller_after_the_join():
    finished = []

    def fn(flags, post, seq, spins, lo, hi):
        if post:
            native.post(flags, seq)
        if lo:
            raise ValueError(f"slice {lo} failed")
        time.sleep(0.01)
        finished.append(lo)

    with pytest.raises(ValueError, match="slice 1 failed"):
        region_pool.run(fn, [(0, 1), (1, 2)], False)
    assert finished == [0]
    record = []
    assert region_pool.run(_slice_fn(record), [(0, 1), (1, 2)], False)  # the pool still works
    assert len(record) == 2


def test_a_caller_slice_that_fails_before_posting_does_not_hang_the_join():
    def fn(flags, post, seq, spins, lo, hi):
        if post:
            raise TypeError("bad arguments")  # as a dispatcher that cannot type the call
        native.post(flags, seq)  # never reached by the caller

    with pytest.raises(TypeError, match="bad arguments"):
        region_pool.run(fn, [(0, 1), (1, 2)], False)
    record = []
    assert region_pool.run(_slice_fn(record), [(0, 1), (1, 2)], False)


def test_the_pool_keeps_no_region_array_alive_after_the_join():
    import weakref

    arrays = [np.ones(4) for _ in range(2)]
    refs = [weakref.ref(a) for a in arrays]
    assert region_pool.run(_slice_fn([]), [(0, 1, arrays[0]), (1, 2, arrays[1])], True)
    del arrays
    assert [ref() for ref in refs] == [None, None]  # neither the jobs nor a waiting worker hold them


def test_a_busy_pool_runs_nothing():
    from tensor import _threads

    with _threads.split_lock():
        assert not region_pool.run(_slice_fn([]), [(0, 1), (1, 2)], False)


def _worker_asleep(within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if region_pool._pool.flags[native.asleep_flag(0)]:
            return True
        time.sleep(0.001)
    return False


def test_workers_poll_only_while_a_region_follows_and_parallel_work_stops_them(two_threads, monkeypatch):
    from tensor import _threads

    record = []
    region_pool.run(_slice_fn(record), [(0, 1), (1, 2)], False)
    assert _worker_asleep(1.0)  # after a last region: asleep within its 10 us tail
    monkeypatch.setattr(region_pool, "_LINGER_US", 5_000_000)
    monkeypatch.setattr(region_pool, "_pool", None)  # a pool that polls 5 s after a lingering region
    try:
        region_pool.run(_slice_fn(record), [(0, 1), (1, 2)], True)
        assert not _worker_asleep(0.05)
        _threads.run_parallel([lambda: None, lambda: None])  # other work for the cores
        assert _worker_asleep(1.0)
        region_pool.run(_slice_fn(record), [(0, 1), (1, 2)], False)  # and wakes for the next region
        assert len(record) == 6
    finally:
        region_pool._pool.close()  # its worker ends


def _fork_child(queue) -> None:
    record = []
    ok = region_pool.run(_slice_fn(record), [(0, 1), (1, 2)], False)
    queue.put(ok and len({ident for ident, _, _ in record}) == 2)


def test_a_forked_child_starts_its_own_workers():
    region_pool.run(_slice_fn([]), [(0, 1), (1, 2)], False)  # the parent's workers exist
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_fork_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=30)
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0


def _gelu_block(w1, w2):
    def block(x):
        return ((F.gelu(x @ w1, approximate="tanh") @ w2 + x) ** 2).mean()

    return block


def _native_regions(compiled_step, monkeypatch) -> list:
    seen = []
    real = region_runner.SplitRegion._run_native

    def spy(self, arrays, parts, blocks):
        seen.append(self)
        return real(self, arrays, parts, blocks)

    monkeypatch.setattr(region_runner.SplitRegion, "_run_native", spy)
    compiled_step()
    return seen


@needs_split
@pytest.mark.parametrize("dtype", [tensor.float32, tensor.float64])
def test_a_compiled_block_on_strided_inputs_matches_eager(two_threads, monkeypatch, dtype):
    # x[:, ::2] has no unit stride (BLAS copies it first); w1.T is column-major.
    w1 = tensor.tensor(RNG.standard_normal((512, 256)) * 0.05, dtype=dtype).requires_grad_()
    w2 = tensor.tensor(RNG.standard_normal((512, 256)) * 0.05, dtype=dtype).requires_grad_()
    block = _gelu_block(w1.T, w2)
    x = tensor.tensor(RNG.standard_normal((256, 512)), dtype=dtype)[:, ::2]
    compiled = tensor.compile(block)

    def step(fn):
        w1.grad = w2.grad = None
        loss = fn(x)
        loss.backward()
        return loss.detach(), w1.grad, w2.grad

    rtol, atol = (1e-4, 1e-6) if dtype == tensor.float32 else (1e-10, 1e-13)
    for _ in range(2):
        for got, expected in zip(step(compiled), step(block)):
            assert_close(got, expected, rtol=rtol, atol=atol)
    assert len(_native_regions(lambda: step(compiled), monkeypatch)) == 2  # forward and backward
