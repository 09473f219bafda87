"""tensor.compile's split regions (tensor/_compile/split_region.py, Note [Split regions]):
products sharing a dim, and the kernels between them, run one slice per thread. Values and
gradients are compared with eager (and torch where installed); which thread ran which slice
is recorded by wrapping the region's per-thread body: the generated native slice function
(Note [Native regions] in native.py) or, with that turned off, the op-by-op Python one."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nn.functional as F
import tensor
from tensor import _threads
from tensor._compile import native, native_region, region_pool, region_runner, split_region
from tests.helpers import assert_close, needs_split

pytest.importorskip("numba", reason="numba is not installed (pip install 'distrib[compile]')")

RNG = np.random.default_rng(11)
HIDDEN = 512


def _param(*shape, grad=True):
    return tensor.tensor(RNG.standard_normal(shape) * 0.05, dtype=tensor.float64, requires_grad=grad)


W1, W2 = _param(256, HIDDEN), _param(HIDDEN, 256)


def gelu_block(x):
    """The benchmark's GELU MLP block, smaller: a hidden dim of 512 between two products, and
    GELU kernels of 256x512 elements (a region needs one of 128k at least)."""
    return ((F.gelu(x @ W1, approximate="tanh") @ W2 + x) ** 2).mean()


@pytest.fixture(params=["native", "python"])
def slices(request, monkeypatch):
    """Records ``(region, thread, block)`` for every slice a split region runs, natively where
    it can (products of 3 dims run op by op) or, with the param ``python``, op by op only."""
    runs = []
    real_slice = region_runner.SplitRegion._slice

    def spy(self, arrays, parts, t, block):
        if block[1] > block[0]:  # the first call's empty slice compiles the kernels
            runs.append((self, threading.get_ident(), block))
        real_slice(self, arrays, parts, t, block)

    monkeypatch.setattr(region_runner.SplitRegion, "_slice", spy)
    if request.param == "python":
        monkeypatch.setattr(native_region, "build", lambda region, nodes: None)
        return runs
    if not native.AVAILABLE:
        pytest.skip("native regions need numpy's OpenBLAS symbols and Linux futexes")
    real_native, real_run, current = region_runner.SplitRegion._run_native, region_pool.run, []

    def run_native(self, arrays, parts, blocks):
        current[:] = [self]
        return real_native(self, arrays, parts, blocks)

    def run(fn, args, linger):
        region = current[0]

        def traced(flags, post, seq, spins, lo, hi, *rest):
            if hi > lo:
                runs.append((region, threading.get_ident(), (lo, hi)))
            return fn(flags, post, seq, spins, lo, hi, *rest)

        return real_run(traced, args, linger)

    monkeypatch.setattr(region_runner.SplitRegion, "_run_native", run_native)
    monkeypatch.setattr(region_pool, "run", run)
    return runs


def _step(fn, x, params=(W1, W2)):
    """``fn(x)`` trained one step: the loss and the gradients of ``params``."""
    for p in params:
        p.grad = None
    loss = fn(x)
    loss.backward()
    return [loss.detach(), *(p.grad for p in params)]


def _regions_of_training(fn, x, params, slices, steps=3):
    """Train ``fn`` compiled for ``steps`` steps (the capture, the joint graph's build, then
    replays), each step's loss and gradients checked against eager; the regions the last step
    ran, in order."""
    compiled = tensor.compile(fn)
    for _ in range(steps):
        slices.clear()
        for g, e in zip(_step(compiled, x, params), _step(fn, x, params)):
            assert_close(g, e, rtol=1e-10, atol=1e-13)
    return list(dict.fromkeys(region for region, _, _ in slices))


def _check_against_eager(compiled, x, rtol=1e-10):
    got = _step(compiled, x)
    expected = _step(gelu_block, x)
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=rtol, atol=1e-13)
    return got


@needs_split
def test_the_gelu_block_splits_its_hidden_dim_across_threads(two_threads, slices):
    compiled = tensor.compile(gelu_block)
    x = _param(256, 256, grad=False)
    for _ in range(3):  # the capture, the joint graph's build, a replay
        slices.clear()
        _check_against_eager(compiled, x)
    regions = list(dict.fromkeys(region for region, _, _ in slices))
    assert len(regions) == 2  # the forward's and the backward's
    for region in regions:
        runs = [(thread, block) for r, thread, block in slices if r is region]
        assert sorted(block for _, block in runs) == [(0, HIDDEN // 2), (HIDDEN // 2, HIDDEN)]
        assert len({thread for thread, _ in runs}) == 2
        assert region.region.extent == HIDDEN
    forward, backward = regions
    assert len(forward.partials) == 1  # gelu(.) @ W2: each thread sums its half of the hidden dim
    assert not backward.partials  # the three backward products split their outputs
    kernels = [op.args[0] for region in regions for op in region.ops if not isinstance(op, region_runner._Product)]
    assert len(kernels) == 2  # GELU and its derivative, each on its slice
    for kernel in kernels:
        assert "range(np.uint64(sz[" in kernel.source and "nogil=True" in kernel.source
        assert "prange" not in kernel.source


@needs_split
def test_the_split_block_matches_torch(two_threads):
    torch = pytest.importorskip("torch")
    compiled = tensor.compile(gelu_block)
    x = _param(256, 256, grad=False)
    compiled(x)
    loss, g1, g2 = _check_against_eager(compiled, x)
    tw1, tw2 = (torch.tensor(w.detach().numpy(), requires_grad=True) for w in (W1, W2))
    tx = torch.tensor(x.numpy())
    expected = ((torch.nn.functional.gelu(tx @ tw1, approximate="tanh") @ tw2 + tx) ** 2).mean()
    expected.backward()
    assert_close(loss, expected.detach().numpy(), rtol=1e-10)
    assert_close(g1, tw1.grad.numpy(), rtol=1e-9, atol=1e-13)
    assert_close(g2, tw2.grad.numpy(), rtol=1e-9, atol=1e-13)


@needs_split
def test_linear_layers_with_biases_split_as_products_do(two_threads, slices):
    # nn.Linear's op: each thread adds its slice of the first bias, and the first thread the
    # whole second bias to its partial sum (the others would add it again).
    b1, b2 = _param(HIDDEN), _param(256)

    def block(x):
        return (F.linear(F.gelu(F.linear(x, W1.T, b1), approximate="tanh"), W2.T, b2) ** 2).mean()

    regions = _regions_of_training(block, _param(256, 256, grad=False), (W1, W2, b1, b2), slices)
    assert len(regions) == 2 and len(regions[0].partials) == 1
    assert {op.mode for region in regions for op in region.ops if isinstance(op, region_runner._Product)} == {
        "columns", "partial", "rows"
    }


def test_float32_partial_sums_stay_within_rounding(two_threads):
    w1, w2 = (tensor.tensor(w.detach().numpy(), dtype=tensor.float32) for w in (W1, W2))
    x = tensor.tensor(RNG.standard_normal((256, 256)), dtype=tensor.float32)

    def block(x):
        return F.gelu(x @ w1, approximate="tanh") @ w2

    compiled = tensor.compile(block)
    for _ in range(2):
        assert_close(compiled(x), block(x), rtol=1e-4, atol=1e-5)


@needs_split
def test_one_thread_or_a_busy_pool_runs_the_steps_unsplit(two_threads, slices):
    compiled = tensor.compile(gelu_block)
    x = _param(256, 256, grad=False)
    _check_against_eager(compiled, x)
    _check_against_eager(compiled, x)
    slices.clear()
    with _threads._split_lock:  # another thread is splitting: the region must not wait for it
        _check_against_eager(compiled, x)
    tensor.set_num_threads(1)
    _check_against_eager(compiled, x)
    assert slices == []


@needs_split
def test_the_option_turns_regions_off(two_threads, slices):
    compiled = tensor.compile(gelu_block, options={"split_regions": False})
    x = _param(256, 256, grad=False)
    for _ in range(3):
        _check_against_eager(compiled, x)
    assert slices == []


@needs_split
def test_inference_splits_the_forward(two_threads, slices):
    def mlp(x):
        return (x @ W1).relu() @ W2

    compiled = tensor.compile(mlp)
    x = _param(256, 256, grad=False)
    with tensor.no_grad():
        for _ in range(2):
            assert_close(compiled(x), mlp(x), rtol=1e-10, atol=1e-13)
    assert {block for _, _, block in slices} == {(0, HIDDEN // 2), (HIDDEN // 2, HIDDEN)}


@needs_split
def test_a_softmax_over_the_split_dim_is_not_sliced(two_threads, slices):
    # Each thread would see half of every row: the softmax needs all of it, so it runs after
    # the region, and the product reading it too; one product is left, not worth a region.
    def block(x):
        return F.softmax(x @ W1, -1) @ W2

    compiled = tensor.compile(block)
    x = _param(256, 256, grad=False)
    with tensor.no_grad():
        for _ in range(2):
            assert_close(compiled(x), block(x), rtol=1e-10, atol=1e-13)
    assert slices == []


@needs_split
def test_a_value_with_two_dims_in_the_class_is_not_sliced(two_threads, slices):
    # h.T @ h: both dims of the product are the hidden dim, so no slice of it is one thread's
    # along that dim; the batch dim it contracts is split instead (a partial sum).
    def gram(x):
        h = (x @ W1).relu()
        return (h.T @ h) @ W1.T

    compiled = tensor.compile(gram)
    x = _param(512, 256, grad=False)
    with tensor.no_grad():
        for _ in range(2):
            assert_close(compiled(x), gram(x), rtol=1e-10, atol=1e-10)
    regions = {region for region, _, _ in slices}
    assert len(regions) == 1
    (region,) = regions
    assert len(region.partials) == 1 and region.partials[0][1] == (HIDDEN, HIDDEN)  # h.T @ h
    assert all(n in region.region.partial or region.region.axis.get(n) is not None for n in region.nodes)


@pytest.mark.parametrize(("extent", "threads"), [(512, 2), (1000, 3), (130, 2), (64, 4)])
def test_slices_cover_the_dim_and_start_on_vector_bounds(extent, threads):
    blocks = region_runner._blocks(extent, threads)
    assert len(blocks) == threads
    assert blocks[0][0] == 0 and blocks[-1][1] == extent
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert all(lo % region_runner._ALIGN == 0 and lo <= hi for lo, hi in blocks)


@needs_split
def test_an_mlp_with_light_kernels_keeps_its_products_whole(two_threads, slices):
    # A 784-512-512-10 MLP at batch 128: its only kernels are 128x512 ReLU masks, and slicing
    # its products cost more than the hand-offs it saved (Note [Split regions]'s thresholds).
    model = [_param(784, 512), _param(512, 512), _param(512, 10)]

    def loss(x):
        h = x
        for w in model[:-1]:
            h = (h @ w).relu()
        return F.cross_entropy(h @ model[-1], tensor.zeros(128, dtype=tensor.int64))

    compiled = tensor.compile(loss)
    x = _param(128, 784, grad=False)
    for _ in range(3):
        compiled(x).backward()
    assert slices == []


@needs_split
def test_dynamic_batch_sizes_stay_correct(two_threads, slices):
    # Sizes kept symbolic (Note [Dynamic sizes]) are not sliced: the region allocates its
    # buffers, so it needs their sizes; each new batch size still matches eager.
    compiled = tensor.compile(gelu_block, dynamic=True)
    for rows in (256, 320, 288):
        _check_against_eager(compiled, _param(rows, 256, grad=False))


@needs_split
def test_each_block_of_a_stack_gets_its_own_region(two_threads, slices):
    # One class per block's hidden dim: the best is taken first, then the steps before and
    # after it are searched again.
    w3, w4 = _param(256, HIDDEN), _param(HIDDEN, 256)

    def stack(x):
        for a, b in ((W1, W2), (w3, w4)):
            x = F.gelu(x @ a, approximate="tanh") @ b + x
        return (x**2).mean()

    regions = _regions_of_training(stack, _param(256, 256, grad=False), (W1, W2, w3, w4), slices)
    assert len(regions) == 4  # two blocks, forward and backward
    # Partial sums: each block's forward output, and the second block's input gradient
    # (``dh @ w3.T`` contracts its hidden dim); the first block's input needs none.
    assert sum(len(region.partials) for region in regions) == 3


@needs_split
def test_a_transformer_feed_forward_on_3d_inputs_splits(two_threads, slices):
    # (batch, seq, features) through nn.Linear's op: the products take a of 3 dims, and the
    # backward's reshapes to (batch * seq, features) keep the hidden dim (_kept_dims).
    b1, b2 = _param(HIDDEN), _param(256)

    def feed_forward(x):
        return (F.linear(F.gelu(F.linear(x, W1.T, b1)), W2.T, b2) ** 2).mean()

    regions = _regions_of_training(feed_forward, _param(4, 64, 256, grad=False), (W1, W2, b1, b2), slices)
    assert len(regions) == 2
    assert regions[0].native is None  # its products take 3-D inputs: they run op by op
    assert all(region.region.extent == HIDDEN for region in regions)
    forward, backward = regions
    assert [op.mode for op in forward.ops if isinstance(op, region_runner._Product)] == ["columns", "partial"]
    assert sum(isinstance(op, region_runner._Product) for op in backward.ops) == 3  # w2's and w1's grads, dh


@pytest.mark.parametrize(
    ("source", "shape", "kept"),
    [
        ((8, 64, 1024), (512, 1024), [(2, 1)]),
        ((512, 1024), (8, 64, 1024), [(1, 2)]),
        ((4, 6, 5), (4, 30), [(0, 0)]),
        ((2, 3, 4), (3, 2, 4), [(2, 2)]),
        ((2, 3), (2, 3), [(0, 0), (1, 1)]),
        ((6,), (2, 3), []),
    ],
)
def test_reshapes_keep_their_equal_leading_and_trailing_dims(source, shape, kept):
    assert split_region._kept_dims(source, shape) == kept
    for d, e in kept:  # each element's index along a kept dim is the same in both
        index = np.indices(source)[d].reshape(-1)
        assert np.array_equal(index, np.indices(shape)[e].reshape(-1))
