"""tensor.compile with dynamic sizes (Note [Dynamic sizes] in tensor/_compile/symbolic.py): a
second size generalises the graph, later sizes replay it without capturing; guards on the
relations the graph depends on; sizes user code reads, and sizes 0 and 1, are specialised."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(5)
BATCHES = (3, 5, 7, 64)


def _t(*shape):
    return tensor.tensor(RNG.standard_normal(shape), dtype=tensor.float64)


W = _t(4, 6)


def block(x):
    """A matmul, GELU, a broadcast of a row statistic, reductions and a mean over the batch."""
    h = F.gelu(x @ W)
    return (h - h.amax(1, keepdim=True)).exp().sum(1) + x.mean()


def _run(compiled, fn, batches=BATCHES):
    for b in batches:
        x = _t(b, 4)
        assert_close(compiled(x), fn(x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dynamic", [None, True])
def test_new_batch_sizes_replay_one_graph(dynamic):
    compiled = tensor.compile(block, backend="eager", dynamic=dynamic)
    _run(compiled, block)
    assert compiled.captures == 2  # the second size generalises; 7 and 64 replay
    assert compiled.dynamic_replays == 2
    (generic,) = compiled.dynamic_graphs.values()
    assert generic.input_shapes[0][1] == 4 and str(generic.input_shapes[0][0]) == "s0"


def test_dynamic_false_captures_every_size():
    compiled = tensor.compile(block, backend="eager", dynamic=False)
    _run(compiled, block)
    assert compiled.captures == len(BATCHES) and not compiled.dynamic_graphs


def test_mark_dynamic_generalises_a_marked_dim_even_with_dynamic_false():
    compiled = tensor.compile(block, backend="eager", dynamic=False)
    for b in BATCHES:
        x = _t(b, 4)
        tensor.compile.mark_dynamic(x, 0)
        assert_close(compiled(x), block(x), rtol=1e-10, atol=1e-12)
    assert compiled.captures == 2
    with pytest.raises(IndexError, match="dim 2"):
        tensor.compile.mark_dynamic(_t(2, 3), 2)


def test_fused_kernels_are_reused_at_new_sizes(tmp_path, monkeypatch):
    pytest.importorskip("numba", reason="numba is not installed (pip install 'distrib[compile]')")
    from tensor._compile import codegen_numba

    monkeypatch.setattr(tensor.compile.config, "cache_dir", str(tmp_path))  # no graphs of earlier runs

    def chain(x):
        return F.gelu(x @ W).sum(1) * 2 + x.mean()  # the mean's count follows the batch size

    compiled = tensor.compile(chain)
    _run(compiled, chain, BATCHES[:3])
    loaded = dict(codegen_numba._LOADED)
    _run(compiled, chain, (64, 9, 3))
    assert compiled.captures == 2
    assert codegen_numba._LOADED == loaded  # no kernel compiled for 64 or 9


def test_equal_sizes_of_a_broadcast_are_guarded():
    compiled = tensor.compile(lambda x, y: (x + y).sum(), backend="eager")
    for n in (3, 5, 7):
        x, y = _t(n), _t(n)
        assert_close(compiled(x, y), (x + y).sum(), rtol=1e-12)
    assert compiled.captures == 2
    with pytest.raises((ValueError, RuntimeError)):
        compiled(_t(6), _t(8))  # not the same symbol: captured, and fails as eager does


def test_sizes_zero_and_one_are_specialised():
    compiled = tensor.compile(block, backend="eager")
    _run(compiled, block, (3, 5, 7))
    _run(compiled, block, (1,))
    assert compiled.captures == 3  # size 1 broadcasts differently: its own capture
    _run(compiled, block, (9,))
    assert compiled.captures == 3


def _branches_on_size(x):
    if x.shape[0] > 6:
        return x * 3
    return x * 2


def _reshapes_by_size(x):
    return x.reshape(len(x), -1).sum(1)


@pytest.mark.parametrize("fn", [_branches_on_size, _reshapes_by_size])
def test_sizes_read_by_python_are_specialised(fn):
    compiled = tensor.compile(fn, backend="eager")
    for b in (3, 5, 7, 64, 3, 7):
        x = _t(b, 2)
        assert_close(compiled(x), fn(x))
    assert compiled.captures == 4 and not compiled.dynamic_graphs


def _kmeans(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def test_numpy_program_generalises_over_the_number_of_points():
    compiled = tensor.compile(_kmeans, backend="eager")
    means = RNG.standard_normal((3, 2))
    for n in (10, 20, 33, 50):
        X = RNG.standard_normal((n, 2))
        out = compiled(X, means)
        assert isinstance(out, np.ndarray)
        np.testing.assert_array_equal(out, _kmeans(X, means))
    assert compiled.captures == 2 and compiled.dynamic_replays == 2


def test_explain_reports_the_dynamic_sizes():
    compiled = tensor.compile(block, backend="eager")
    _run(compiled, block, (3, 5))
    text = str(tensor.compile.explain(compiled)(_t(7, 4)))
    assert "Captures so far: 2 (calls replayed at new sizes: 0)" in text
    assert "Dynamic sizes" in text and "input[0]: [s0, 4]" in text, text


@pytest.mark.slow  # numba compiles the forward and backward kernels (~5-30 s)
def test_a_compiled_model_trains_at_new_batch_sizes_without_capturing():
    tensor.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 1)).double()
    compiled = tensor.compile(model)
    for b in BATCHES:
        x, y = _t(b, 4), _t(b, 1)
        grads = []
        for run in (compiled, model):
            for p in model.parameters():
                p.grad = None
            loss = F.mse_loss(run(x), y)
            loss.backward()
            grads.append((loss, [p.grad for p in model.parameters()]))
        (loss, got), (expected, want) = grads
        assert_close(loss, expected, rtol=1e-10)
        for g, w in zip(got, want):
            assert_close(g, w, rtol=1e-9, atol=1e-12)
    (inner,) = [v for v in vars(compiled).values() if hasattr(v, "captures")]
    assert inner.captures == 2 and inner.dynamic_replays == 2


def _normalise(x):
    return (x - x.mean(0)) / x.std(0)  # divides by the batch size less one


def test_a_count_less_one_follows_the_batch_size():
    compiled = tensor.compile(_normalise, backend="eager")
    _run(compiled, _normalise)
    assert compiled.captures == 2 and compiled.dynamic_replays == 2
    (generic,) = compiled.dynamic_graphs.values()
    assert "s0-1" in str(generic.graph)


def test_a_slice_that_clips_at_a_new_size_is_a_guard_not_a_formula(tmp_path, monkeypatch):
    # x[:8] has n rows at n = 3 and 5, so two captures agree on "s0"; at 64 it has 8 (min(n, 8)).
    monkeypatch.setattr(tensor.compile.config, "cache_dir", str(tmp_path))  # no graphs of earlier runs

    def head(x):
        return x[:8] * 2 + x[-3:].sum()

    compiled = tensor.compile(head)
    for n in (3, 5, 64, 4):
        x = _t(n)
        assert_close(compiled(x), head(x), rtol=1e-12, atol=1e-12)
    assert compiled.captures == 3  # 64 failed the slice guard and was captured; 4 replays the 3/5 graph


def test_a_proxy_capture_does_not_take_a_clipped_slice_for_the_whole_dim(tmp_path, monkeypatch):
    # Captured on proxies of 17 and 19 elements, x[:100] looks like x (Note [Proxy capture]).
    monkeypatch.setattr(tensor.compile.config, "cache_dir", str(tmp_path))

    def head(x):
        return x[:100] + 1

    x = tensor.tensor(RNG.standard_normal(1 << 20), dtype=tensor.float32)
    compiled = tensor.compile(head)
    assert_close(compiled(x), head(x))
    assert compiled.proxy_captures == 0  # the generalised graph failed its guard at the real size
