"""tensor.compile's default backend: fusion and numba code generation on the CPU.

Each compiled function is built once per module (numba takes seconds per kernel); the
first call of a compiled function is its eager capture, so results are compared on the
second and third calls, which run the fused kernels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nn.functional as F
import tensor
from tensor._compile import fusion, lowering
from tests.helpers import assert_close

pytest.importorskip("numba", reason="numba is not installed (pip install 'distrib[compile]')")

RNG = np.random.default_rng(11)


def zoo(x, y):
    """Every pointwise family, views and broadcasting in one expression (one fused kernel)."""
    a = x * 2.5 - y / (y.abs() + 1)
    b = a.exp().log1p() + a.tanh() * a.sigmoid() - a.relu() + a.clamp(-0.5, 0.5) - (-a).expm1().abs().sqrt()
    c = tensor.where(x > y, a.sin(), a.cos()) + tensor.maximum(a, y) * tensor.minimum(a, 0.25)
    c = c + (a.abs() + 0.5).rsqrt() + a.isnan()
    d = F.gelu(a) + F.gelu(a, approximate="tanh") + F.silu(a) + F.leaky_relu(a, 0.1) + F.elu(a) + tensor.erf(a)
    e = ((x >= 0) & (y < 0.5) | ~(x == y)).to(x.dtype) + (a.floor() - a.ceil() + a.round() * a.trunc()) * a.sign()
    f = a.reciprocal().clamp(-3, 3) + (a.abs() + 1) ** 1.5 + x.T.T[:, None].squeeze(1)
    return b + c + d + e + f


def reductions(x):
    """The reductions, with and without keepdim, over several dims, inlined into one kernel."""
    r = x.sum(1) + x.amax(1) - x.amin(-1) + x.argmax(1).to(x.dtype) - x.argmin(1).to(x.dtype)
    r = r + x.mean(1) + (x > 0).all(1).to(x.dtype) + (x > 1).any(1).to(x.dtype)
    return r + x.exp().sum((1,), keepdim=True).log().view(-1) + (x * x).sum(1).sqrt()


def kmeans(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def _pair(dtype, layout):
    if layout == "broadcast":
        x = tensor.tensor(RNG.uniform(-2, 2, (4, 6)), dtype=dtype)
        y = tensor.tensor(RNG.uniform(-2, 2, (6,)), dtype=dtype)
    else:  # non-contiguous: a transposed and a strided view
        x = tensor.tensor(RNG.uniform(-2, 2, (6, 4)), dtype=dtype).T
        y = tensor.tensor(RNG.uniform(-2, 2, (4, 12)), dtype=dtype)[:, ::2]
    return x, y


@pytest.fixture(scope="module")
def compiled_zoo():
    return {layout: tensor.compile(zoo) for layout in ("broadcast", "strided")}


@pytest.mark.parametrize("dtype,layout", [(tensor.float32, "broadcast"), (tensor.float64, "strided")])
def test_pointwise_families_fused_match_eager(compiled_zoo, dtype, layout):
    compiled = compiled_zoo[layout]
    for _ in range(3):
        x, y = _pair(dtype, layout)
        tol = 1e-5 if dtype == tensor.float32 else 1e-10
        assert_close(compiled(x, y), zoo(x, y), rtol=tol, atol=tol)
    path = next(iter(compiled.cache.values())).paths[0]
    kernels = lowering.kernels_of(path.graph, 0, len(path.graph.nodes))
    assert len(kernels) == 1, [k.source for k in kernels]


@pytest.mark.parametrize("dtype", [tensor.float32, tensor.float64])
def test_reductions_fused_match_eager(dtype):
    compiled = tensor.compile(reductions)
    for _ in range(3):
        x = tensor.tensor(RNG.uniform(-2, 2, (5, 7)), dtype=dtype)
        tol = 1e-5 if dtype == tensor.float32 else 1e-10
        assert_close(compiled(x), reductions(x), rtol=tol, atol=tol)


def test_integer_ops_fused_match_eager():
    def f(a, b):
        return tensor.where(a > b, a * 3 - b, tensor.maximum(a, b)).sum(0) + (a % 5 == 0).to(tensor.int64).amax(0)

    compiled = tensor.compile(f)
    for _ in range(3):
        a = tensor.tensor(RNG.integers(-9, 9, (5, 3)))
        b = tensor.tensor(RNG.integers(-9, 9, (3,)))
        assert_close(compiled(a, b), f(a, b))


def test_library_calls_split_fusion_groups():
    def mlp(x, w1, w2):
        return ((x @ w1).tanh() * 2 + 1) @ w2

    x, w1, w2 = (tensor.tensor(RNG.standard_normal(s), dtype=tensor.float32) for s in ((3, 4), (4, 5), (5, 2)))
    graph = tensor.compile.explain(mlp)(x, w1, w2).graph
    steps = fusion.plan(graph, 0, len(graph.nodes))
    calls = [(s.kind, graph.nodes[s.node].op.name) for s in steps if graph.nodes[s.node].kind == "call"]
    assert calls == [("eager", "matmul"), ("kernel", "add"), ("eager", "matmul")]
    compiled = tensor.compile(mlp)
    for _ in range(2):
        assert_close(compiled(x, w1, w2), mlp(x, w1, w2), rtol=1e-5, atol=1e-6)


def test_a_mean_broadcast_back_is_computed_once_not_per_element():
    def center(x):
        return x - x.mean(1, keepdim=True)

    graph = tensor.compile.explain(center)(tensor.ones(3, 4)).graph
    kernels = [s for s in fusion.plan(graph, 0, len(graph.nodes)) if s.kind == "kernel"]
    assert len(kernels) == 2  # the row means, then the subtraction reading them


@pytest.fixture(scope="module")
def kmeans_run():
    X = RNG.standard_normal((120_000, 2))  # 1.2M loop trips: above Note [Parallel threshold]
    means = RNG.standard_normal((5, 2))
    compiled = tensor.compile(kmeans)
    outs = [compiled(X, means) for _ in range(2)]
    return compiled, X, means, outs


def test_kmeans_is_one_parallel_fused_kernel(kmeans_run):
    compiled, X, means, outs = kmeans_run
    for out in outs:
        np.testing.assert_array_equal(out, kmeans(X, means))
    graph = next(iter(compiled.cache.values())).paths[0].graph
    steps = fusion.plan(graph, 0, len(graph.nodes))
    assert [s.kind for s in steps if graph.nodes[s.node].kind == "call"] == ["kernel"]
    (kernel,) = lowering.kernels_of(graph, 0, len(graph.nodes))
    assert "prange" in kernel.source and "parallel=True" in kernel.source
    assert kernel.source.count("a0[") == 1  # X is read once per (point, mean, coordinate)
    assert "range(5)" in kernel.source and "range(2)" in kernel.source  # Note [Small reductions]
    assert "assume_equal(a0.shape[1], 2)" in kernel.source  # Note [Static shapes]: vectorised over points
    assert "fastmath" not in kernel.source  # Note [Fast-math flags]: distances rounded as numpy rounds them


def test_kmeans_argmin_is_numpys_on_ties_nan_and_inf(kmeans_run):
    compiled, X, means, _ = kmeans_run  # the same shapes: its kernel, no recompile
    t = RNG.standard_normal(len(X))
    X = np.stack([t, t], 1)  # on the diagonal: equally far from (a, b) and (b, a)
    X[::97, 0], X[1::89, 1], X[2::83] = np.nan, np.inf, -np.inf
    a, b = RNG.standard_normal(2)
    means = np.array([[a, b], [b, a], [a, b], [9.0, 9.0], [9.0, 9.0]])  # exact ties; first index wins
    want = kmeans(X, means)
    assert (want == 0).mean() > 0.9
    np.testing.assert_array_equal(compiled(X, means), want)
    means[2] = np.nan, 0.0  # a NaN distance wins over every later or smaller one, as in numpy
    means[4] = np.inf, 0.0
    want = kmeans(X, means)
    assert set(np.unique(want)) == {0, 2}  # 2 for every point with a finite or infinite distance
    np.testing.assert_array_equal(compiled(X, means), want)


def test_only_long_accumulations_reassociate():
    # Note [Fast-math flags]: reassociation for a row sum over a runtime extent, no flag for a
    # sum over 3 elements (rounded in numpy's order) nor for an argmax; contraction never.
    def f(x, y):
        return x.sum(1), (y * y).sum(1), y.argmax(1)

    graph = tensor.compile.explain(f)(tensor.ones(4, 40), tensor.ones(4, 3)).graph
    sources = [k.source for k in lowering.kernels_of(graph, 0, len(graph.nodes))]
    assert len(sources) == 3
    assert [("fastmath" in s, "contract" in s) for s in sources] == [(True, False), (False, False), (False, False)]


def test_output_code_prints_the_generated_kernel(kmeans_run, capsys, monkeypatch):
    compiled, X, means, _ = kmeans_run
    monkeypatch.setattr(tensor.compile.config, "output_code", True)
    fresh = tensor.compile(kmeans)
    fresh(X, means)
    fresh(X, means)
    err = capsys.readouterr().err
    assert "def kernel(out, sz, a0, a1):" in err and "argmin" in err


def test_a_second_process_loads_the_kernel_from_the_disk_cache(tmp_path):
    # Note [Warm start]: a cached kernel loads without refreshing numba's target context (a compile does).
    script = textwrap.dedent("""
        import json, numpy as np, tensor
        from tensor._compile import codegen_numba
        f = tensor.compile(lambda x: (x * 3 + 1).sum(0))
        from numba.core import cpu
        refreshes, refresh = [], cpu.CPUContext.refresh
        cpu.CPUContext.refresh = lambda ctx: (refreshes.append(1), refresh(ctx))[1]
        x = np.arange(12.0).reshape(4, 3)
        f(x); out = f(x)
        (kernel,) = codegen_numba._LOADED.values()
        print(json.dumps({"hits": sum(kernel.stats.cache_hits.values()), "refreshes": len(refreshes),
                          "misses": sum(kernel.stats.cache_misses.values()), "out": out.tolist()}))
    """)
    env = dict(os.environ, TENSOR_COMPILE_CACHE=str(tmp_path))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.splitlines()[-1]))
    assert runs[0]["misses"] == 1 and runs[0]["hits"] == 0 and runs[0]["refreshes"] >= 1
    assert runs[1]["misses"] == 0 and runs[1]["hits"] == 1 and runs[1]["refreshes"] == 0
    assert runs[1]["out"] == [58.0, 70.0, 82.0]  # (3 * x + 1).sum(0)


def _raise_runtime_error(*args):
    raise RuntimeError("not this numba")


def test_load_cached_installs_the_disk_cached_kernel_and_leaves_failures_to_numba(tmp_path, monkeypatch):
    from tensor._compile import codegen_numba

    monkeypatch.setattr(tensor.compile.config, "cache_dir", str(tmp_path))
    source = "@njit(cache=True)\ndef kernel(out, sz, a0):\n    for i in range(sz[0]):\n        out[i] = a0[i] * 2.0\n"

    def fresh():  # a new dispatcher over the same file, as another process would have
        monkeypatch.setattr(codegen_numba, "_LOADED", {})
        return codegen_numba.load_kernel(source)

    a, sz, out = np.arange(5.0), np.array([5]), np.zeros(5)
    fresh()(out, sz, a)  # compiles and writes numba's cache
    loaded = fresh()
    assert codegen_numba.load_cached(loaded, (out, sz, a)) and len(loaded.overloads) == 1
    out[:] = 0
    loaded(out, sz, a)
    np.testing.assert_array_equal(out, 2 * a)
    assert sum(loaded.stats.cache_misses.values()) == 0
    broken = fresh()
    with monkeypatch.context() as m:
        m.setattr(type(broken._cache), "_load_overload", _raise_runtime_error)  # numba internals changed
        assert not codegen_numba.load_cached(broken, (out, sz, a)) and not broken.overloads
    out[:] = 0
    broken(out, sz, a)  # numba's own path: refresh, then load from disk
    np.testing.assert_array_equal(out, 2 * a)
    assert sum(broken.stats.cache_hits.values()) == 1


def test_a_new_size_reuses_the_compiled_kernels():
    from tensor._compile import codegen_numba

    compiled = tensor.compile(reductions)
    for rows in (5, 9, 5, 9):
        x = tensor.tensor(RNG.uniform(-2, 2, (rows, 7)), dtype=tensor.float64)
        compiled(x)
        assert_close(compiled(x), reductions(x), rtol=1e-10, atol=1e-10)
        if rows == 5:
            kernels = dict(codegen_numba._LOADED)
    assert codegen_numba._LOADED == kernels  # the size-9 graph compiled nothing new
    assert len(compiled.cache) == 2  # one entry per size (captured, or loaded from the disk cache)


def column_sums(x, y):
    """Reductions that keep the last dim (bias and LayerNorm weight gradients), each a kernel's result."""
    g = x * y + 1.5
    return g.sum(0), g.amax(0), (x - y).amin((0,), keepdim=True).view(*x.shape[1:]), (g * g).sum((0, 1))


@pytest.mark.parametrize("rows", [1, 3, 9])
def test_column_reductions_read_rows_contiguously_and_match_eager(rows):
    x3 = tensor.tensor(RNG.uniform(-2, 2, (rows, 4, 6)), dtype=tensor.float32)
    y3 = tensor.tensor(RNG.uniform(-2, 2, (6,)), dtype=tensor.float32)
    x3._data[0, 1, 2] = np.nan  # amax/amin propagate NaN, as numpy does
    compiled = tensor.compile(column_sums)
    for _ in range(2):
        for got, expected in zip(compiled(x3, y3), column_sums(x3, y3), strict=True):
            assert_close(got, expected, rtol=1e-5, atol=1e-5)
    graph = tensor.compile.explain(column_sums)(x3, y3).graph
    sources = [k.source for k in lowering.kernels_of(graph, 0, len(graph.nodes))]
    columns = [s for s in sources if "for c in range(" in s]
    assert len(columns) == 4, sources
    for source in columns:  # the innermost loop walks the last (contiguous) dim
        inner = [line for line in source.splitlines() if "for " in line][-2]
        assert "for c in range(" in inner, source


def test_column_reduction_with_a_kept_outer_dim_matches_eager():
    def f(x):
        return (x.exp() * 2).sum(1) + x.amin(1)

    x = tensor.tensor(RNG.uniform(-2, 2, (3, 5, 4)), dtype=tensor.float64)
    compiled = tensor.compile(f)
    for _ in range(2):
        assert_close(compiled(x), f(x), rtol=1e-12, atol=1e-12)


def test_float32_tanh_vectorises_and_keeps_nan_and_signs():
    def f(x):
        return x.tanh() + F.gelu(x, approximate="tanh")

    values = np.concatenate([np.linspace(-12, 12, 997), [np.nan, np.inf, -np.inf, 0.0, 1e-30, -1e-40]])
    x = tensor.tensor(values, dtype=tensor.float32)
    compiled = tensor.compile(f)
    compiled(x)
    out = compiled(x).numpy()
    assert_close(out, f(x).numpy(), rtol=3e-6, atol=3e-7)
    assert np.isnan(out[-6]) and out[-5] == np.inf and out[0] == -1  # saturated exactly: gelu(-12) is 0
    graph = tensor.compile.explain(f)(x).graph
    (kernel,) = lowering.kernels_of(graph, 0, len(graph.nodes))
    assert "tanh_f32(" in kernel.source and "np.tanh" not in kernel.source and 'error_model="numpy"' in kernel.source


def test_small_constant_powers_are_multiplications():
    def f(x):
        return x**2 + x**3 - x**1 + (x.abs() + 1) ** 0.5 + (x.abs() + 1) ** -1 + (x.abs() + 1) ** 2.5

    x = tensor.tensor(RNG.uniform(-2, 2, (4, 5)), dtype=tensor.float64)
    compiled = tensor.compile(f)
    for _ in range(2):
        assert_close(compiled(x), f(x), rtol=1e-12, atol=1e-12)
    graph = tensor.compile.explain(f)(x).graph
    (kernel,) = lowering.kernels_of(graph, 0, len(graph.nodes))
    assert kernel.source.count("**") == 1  # only the 2.5 power calls pow


def _only_kernel(f, *args):
    graph = tensor.compile.explain(f)(*args).graph
    (kernel,) = lowering.kernels_of(graph, 0, len(graph.nodes))
    return kernel


def test_reshapes_index_without_division_where_dims_split_or_end_the_kernel():
    def f(x, y):
        return ((x * 2).view(6, 2, 5) + y).view(-1)  # a split inside, a flattening at the end

    x, y = _t2(12, 5), _t2(2, 5)
    compiled = tensor.compile(f)
    for _ in range(2):
        assert_close(compiled(x, y), f(x, y))
    kernel = _only_kernel(f, x, y)
    assert "//" not in kernel.source and kernel.spec.out_shape == (6, 2, 5)


def test_a_permuted_result_is_computed_in_its_own_order_and_written_transposed():
    def f(x, y):
        return (x * y + 1).permute(2, 0, 1)

    x, y = _t2(3, 4, 5), _t2(3, 4, 5)
    compiled = tensor.compile(f)
    for _ in range(2):
        assert_close(compiled(x, y), f(x, y))
    source = _only_kernel(f, x, y).source
    loops = [line.split()[1] for line in source.splitlines() if line.strip().startswith("for ")]
    assert loops == ["i1", "i2", "i0"], source  # out dims in x's order: x is read row by row
    assert "out[i0, i1, i2]" in source and "a0[i1, i2, i0]" in source


def test_the_parallel_loop_skips_dims_of_size_one():
    def f(x):
        return (x * 2).sum((0, 2), keepdim=True) + 1

    x = _t2(3, 7, 4)
    compiled = tensor.compile(f)
    for _ in range(2):
        assert_close(compiled(x), f(x))
    kernel = _only_kernel(f, x)
    assert kernel.spec.sizes[0] == 7, kernel.source  # the outer loop runs over the 7 channels


def _t2(*shape):
    return tensor.tensor(RNG.uniform(-2, 2, shape), dtype=tensor.float32)


def exp_family(x):
    """exp, softmax and log_softmax over the last and the first dim of a matrix, and softmax
    over the middle dim of a broadcast 3-D view of it: four kernels."""
    return x.exp(), F.softmax(x * 1.5, -1), F.log_softmax(x, 0), F.softmax(x.unsqueeze(0).expand(2, -1, -1), 1)


def _exp_inputs(dtype, layout):
    """Random rows plus rows at the edges: exp overflowing and underflowing (through subnormal
    results), a NaN, an infinity of each sign, a row of -inf, zeros of both signs."""
    big, subnormal, small = (88.8, -100.0, -104.5) if dtype == tensor.float32 else (709.9, -740.0, -746.0)
    edge = np.linspace(small, big, 24)
    edge[1] = subnormal
    rows = [RNG.standard_normal(24) * 4, edge, edge[::-1] * 0.999, np.full(24, -np.inf), np.zeros(24)]
    special = RNG.standard_normal(24)
    special[[2, 7, 11, 13]] = [np.nan, np.inf, -np.inf, -0.0]
    values = np.stack(rows + [special, np.where(np.arange(24) % 2 == 0, special, -np.inf)])
    if layout == "strided":
        return tensor.tensor(values.T.copy(), dtype=dtype).T  # a transposed view of the rows
    return tensor.tensor(values, dtype=dtype)


@pytest.mark.parametrize("dtype,layout", [(tensor.float32, "strided"), (tensor.float64, "contiguous")])
def test_exp_softmax_log_softmax_are_vectorised_fused_and_match_eager(dtype, layout):
    x = _exp_inputs(dtype, layout)
    compiled = tensor.compile(exp_family)
    with np.errstate(all="ignore"):
        expected = [t.numpy() for t in exp_family(x)]
        for _ in range(2):
            got = [t.numpy() for t in compiled(x)]
        graph = tensor.compile.explain(exp_family)(x).graph
    exp_got, exp_expected = got[0], expected[0]
    finite = np.isfinite(exp_expected)
    assert np.array_equal(exp_got[~finite], exp_expected[~finite], equal_nan=True)  # inf and NaN exactly
    np.testing.assert_array_max_ulp(exp_got[finite], exp_expected[finite], maxulp=2)  # each within 1 of exact
    assert exp_got[1, 0] == 0 and 0 < exp_got[1, 1] < np.finfo(exp_got.dtype).tiny and exp_got[1, -1] == np.inf
    tol = 2e-6 if dtype == tensor.float32 else 1e-13
    for g, e in zip(got[1:], expected[1:], strict=True):
        assert np.array_equal(np.isnan(g), np.isnan(e))  # NaN and -inf rows give NaN, as eagerly
        assert_close(g, e, rtol=tol, atol=tol)
    steps = fusion.plan(graph, 0, len(graph.nodes))
    assert not [s for s in steps if s.kind == "eager" and graph.nodes[s.node].kind == "call"]  # softmax fused too
    source = "".join(k.source for k in lowering.kernels_of(graph, 0, len(graph.nodes)))
    name = "exp_f32(" if dtype == tensor.float32 else "exp_f64("
    assert name in source and "np.exp(" not in source and "fmaximum(" in source  # the row maxima vectorise


@pytest.mark.slow  # ~10 s: numba compiles the forward and backward kernels
def test_softmax_and_log_softmax_train_compiled_like_eager():
    def loss(x, w):
        return (F.softmax(x * w, -1) * w).sum() + F.log_softmax(x.T, 1).exp().mul(x.T).sum()

    x0 = RNG.standard_normal((6, 9))
    w0 = RNG.standard_normal(9)
    grads = []
    for fn in (tensor.compile(loss), tensor.compile(loss), loss):  # capture, compiled, eager
        x = tensor.tensor(x0, requires_grad=True)
        w = tensor.tensor(w0, requires_grad=True)
        out = fn(x, w)
        out.backward()
        grads.append((out.item(), x.grad.numpy(), w.grad.numpy()))
    for got in grads[:2]:
        for g, e in zip(got, grads[2], strict=True):
            assert_close(np.asarray(g), np.asarray(e), rtol=1e-10, atol=1e-12)


def test_a_chain_shared_by_two_kernels_is_stored_once_at_its_top():
    def f(x):
        c = (x.exp() * 3 + 1) * x  # a transcendental chain that two roots read
        return c.sum(1, keepdim=True) + c

    x = tensor.tensor(RNG.standard_normal((4, 5)))
    graph = tensor.compile.explain(f)(x).graph
    kernels = [s for s in fusion.plan(graph, 0, len(graph.nodes)) if s.kind == "kernel"]
    assert len(kernels) == 3, kernels  # the chain's top, its row sums, the output
    compiled = tensor.compile(f)
    for _ in range(2):
        assert_close(compiled(x), f(x), rtol=1e-12, atol=1e-12)


def test_repeated_subexpressions_are_computed_once_per_kernel():
    def f(x, y):
        return (x * y).exp() + (x * y)  # two equal multiplications in the graph

    x, y = (tensor.tensor(RNG.standard_normal((3, 4)), dtype=tensor.float32) for _ in range(2))
    kernel = _only_kernel(f, x, y)
    assert kernel.source.count("= mul(") == 1, kernel.source


@pytest.mark.slow  # ~10-20 s: numba compiles a forward and a backward of several kernels
def test_the_backward_recomputes_cheap_forward_values_instead_of_storing_them():
    def block(x, w):
        y = F.layer_norm(x, (x.shape[-1],), w) * 1.5 + 0.1
        return (F.softmax(y, -1) * y).sum()

    x0, w0 = RNG.standard_normal((6, 8)), RNG.standard_normal(8)
    compiled = tensor.compile(block)
    grads = []
    for fn in (compiled, compiled, block):  # capture, compiled, eager
        x, w = tensor.tensor(x0, requires_grad=True), tensor.tensor(w0, requires_grad=True)
        fn(x, w).backward()
        grads.append((x.grad, w.grad))
    for got in grads[:2]:
        for g, e in zip(got, grads[2], strict=True):
            assert_close(g, e, rtol=1e-10, atol=1e-12)
    segment = next(iter(compiled.cache.values())).paths[0]._runners[(0, True)]
    joint, end = segment.joint, segment.out_node + 1
    forward = [joint.nodes[s.node] for s in fusion.plan(joint, 0, end) if s.kind == "kernel"]
    stored = [n.op.name for n in forward if n.shape == (6, 8)]
    assert stored == ["softmax"], stored  # x - mean and the affine result are recomputed, not stored
    assert {"sub", "mul", "add"} <= {joint.nodes[r].op.name for r in fusion.recomputed(joint, end)}


def test_float16_stays_out_of_cpu_kernels():
    # numba has no float16 arrays: such nodes are library calls, and a cast from float16 too.
    def f(x):
        return F.softmax(x * 2 + 1, -1), (x.float() * 2).amax(1)

    x = tensor.tensor(RNG.standard_normal((4, 6)), dtype=tensor.float16)
    compiled = tensor.compile(f)
    for _ in range(2):
        for got, expected in zip(compiled(x), f(x), strict=True):
            assert_close(got, expected)
    graph = tensor.compile.explain(f)(x).graph
    steps = fusion.plan(graph, 0, len(graph.nodes))
    (kernel,) = [s for s in steps if s.kind == "kernel"]  # the float32 multiply and row max
    assert all(graph.nodes[m].dtype == np.float32 for m in kernel.members)
