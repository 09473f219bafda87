"""tensor.compile, capture and replay (backend="eager", no code generation): the printed graph,
guards and recompiles, the recompile limit, graph breaks, fullgraph errors, explain, and
NumPy programs captured through NumPy's dispatch protocols."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

RNG = np.random.default_rng(3)


def _t(*shape, dtype=tensor.float32):
    return tensor.tensor(RNG.standard_normal(shape), dtype=dtype)


def _chain(x, y):
    return (x * 2 + y).relu().sum(1)


def test_capture_records_a_printable_graph_and_replays_it():
    compiled = tensor.compile(_chain, backend="eager")
    x, y = _t(3, 4), _t(4)
    assert_close(compiled(x, y), _chain(x, y))
    x2, y2 = _t(3, 4), _t(4)
    assert_close(compiled(x2, y2), _chain(x2, y2))  # replayed with new values
    assert compiled.captures == 1
    text = str(tensor.compile.explain(_chain)(x, y).graph)
    for op in ("mul(%0, 2)", "add(%2, %1)", "relu(%3)", "sum(%4"):
        assert op in text, text
    assert "test_compile_capture.py" in text  # each op names its source line


@pytest.mark.parametrize("change", ["shape", "dtype", "requires_grad", "python value"])
def test_a_changed_guard_recompiles(change):
    compiled = tensor.compile(lambda x, k: x * k + 1, backend="eager", dynamic=False)
    x = _t(2, 3)
    compiled(x, 2.0)
    compiled(x, 2.0)
    assert compiled.captures == 1
    other = {
        "shape": (_t(5, 3), 2.0),
        "dtype": (_t(2, 3, dtype=tensor.float64), 2.0),
        "requires_grad": (_t(2, 3).requires_grad_(), 2.0),
        "python value": (x, 3.0),
    }[change]
    out = compiled(*other)
    assert compiled.captures == 2
    assert_close(out, other[0] * other[1] + 1)


SCALE = 2.0


def _reads_global(x):
    return x * SCALE


def test_a_changed_global_python_value_recompiles():
    global SCALE
    compiled = tensor.compile(_reads_global, backend="eager")
    x = _t(3)
    assert_close(compiled(x), x * 2.0)
    SCALE = 5.0
    try:
        assert_close(compiled(x), x * 5.0)
    finally:
        SCALE = 2.0
    assert compiled.captures == 2


def test_recompile_limit_falls_back_to_eager_and_says_why_once():
    compiled = tensor.compile(lambda x: x + 1, backend="eager", dynamic=False, options={"cache_size_limit": 2})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 6):
            x = _t(n)
            assert_close(compiled(x), x + 1)
    assert compiled.captures == 2
    messages = [str(w.message) for w in caught if "cache_size_limit=2" in str(w.message)]
    assert len(messages) == 1, messages


def _branchy(x):
    y = x.exp() - 1.5
    if y.sum() > 0:  # data-dependent control flow: a graph break
        return y * 2
    return y - 10


def test_graph_break_splits_the_graph_and_both_branches_replay():
    compiled = tensor.compile(_branchy, backend="eager")
    pos, neg = tensor.full((4,), 2.0), tensor.full((4,), -2.0)
    for x in (pos, neg, pos, neg):
        assert_close(compiled(x), _branchy(x))
    assert compiled.captures == 2  # one per branch, then both replay
    report = tensor.compile.explain(_branchy)(pos)
    assert report.graph_count == 2 and report.graph_break_count == 1
    assert "test_compile_capture.py" in report.break_reasons[0], report.break_reasons
    assert "Graph Break Count: 1" in str(report)


def test_fullgraph_raises_naming_the_op_and_line():
    compiled = tensor.compile(_branchy, fullgraph=True)
    with pytest.raises(tensor.compile.GraphBreakError, match=r"item.*test_compile_capture.py:\d+"):
        compiled(tensor.ones(3))


def test_boolean_mask_index_runs_eagerly_between_two_graphs():
    def f(x):
        y = x * 2
        return y[y > 0].sum() + 1

    compiled = tensor.compile(f, backend="eager")
    for _ in range(2):
        x = _t(10)
        assert_close(compiled(x), f(x))
    report = tensor.compile.explain(f)(_t(10))
    assert report.graph_break_count == 1 and "data-dependent shape" in report.break_reasons[0]
    with pytest.raises(tensor.compile.GraphBreakError, match="getitem"):
        tensor.compile(f, fullgraph=True)(_t(10))


def test_random_numbers_make_the_function_run_eagerly():
    def f(x):
        return x + tensor.rand(3)

    compiled = tensor.compile(f, backend="eager")
    x = tensor.zeros(3)
    first, second = compiled(x), compiled(x)
    assert not np.allclose(first.numpy(), second.numpy())  # not frozen at capture
    assert "random" in tensor.compile.explain(f)(x).eager_reason


def test_in_place_ops_are_functionalised_and_written_back():
    def f(x, buf):
        buf.mul_(0.5)
        y = x.clone()
        y.add_(buf)
        return y.relu_()

    compiled = tensor.compile(f, backend="eager")
    x = _t(5)
    buf_eager, buf_compiled = tensor.ones(5), tensor.ones(5)
    for _ in range(3):
        assert_close(compiled(x, buf_compiled), f(x, buf_eager))
        assert_close(buf_compiled, buf_eager)
    assert compiled.captures == 1


def test_outside_tensors_are_read_live():
    weight = tensor.ones(3)
    compiled = tensor.compile(lambda x: x * weight, backend="eager")
    x = _t(3)
    compiled(x)
    weight.mul_(3.0)
    assert_close(compiled(x), x * 3.0)


def test_an_outside_tensor_given_new_storage_or_flags_recompiles():
    # Path.consts_ok skips its metadata check while each outside tensor keeps its array and flag.
    weight = tensor.ones(3)
    compiled = tensor.compile(lambda x: x * weight)
    x = _t(3)
    for _ in range(2):
        assert_close(compiled(x), x)
    weight.data = tensor.full((3,), 2.0)  # same metadata, new array: replayed, read live
    assert_close(compiled(x), x * 2.0)
    assert compiled.captures == 1
    weight.data = tensor.ones(2, 3)
    assert_close(compiled(x), x * tensor.ones(2, 3))
    weight.requires_grad_()
    compiled(x).sum().backward()
    assert_close(weight.grad, x.expand(2, 3))
    assert compiled.captures == 3


def test_flatten_call_gives_flattens_spec_and_leaves():
    from tensor._compile import guards

    a, b = _t(2), _t(3)
    for _ in range(2):  # the second call of each arity reuses its spec
        for args, kwargs in (((a, b), {}), ((a,), {"k": b}), ((a, 2.0), {}), ((), {})):
            leaves: list = []
            spec = guards.flatten((args, kwargs), leaves)
            got_spec, got_leaves = guards.flatten_call(args, kwargs)
            assert got_spec == spec and [id(t) for t in got_leaves] == [id(t) for t in leaves]


def test_bad_backend_and_mode_are_refused():
    with pytest.raises(ValueError, match="backend"):
        tensor.compile(lambda x: x, backend="nope")
    with pytest.raises(ValueError, match="mode"):
        tensor.compile(lambda x: x, mode="fastest")


def test_decorator_forms():
    @tensor.compile
    def a(x):
        return x + 1

    @tensor.compile(backend="eager", fullgraph=True)
    def b(x):
        return x - 1

    x = _t(2)
    assert_close(a(x), x + 1)
    assert_close(b(x), x - 1)


# ------------------------------------------------------------ NumPy programs


def kmeans(X, means):
    return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)


def test_numpy_kmeans_compiles_unchanged_and_returns_ndarrays():
    compiled = tensor.compile(kmeans, backend="eager")
    X, means = RNG.standard_normal((500, 2)), RNG.standard_normal((4, 2))
    for _ in range(2):
        out = compiled(X, means)
        assert isinstance(out, np.ndarray) and out.dtype == np.int64
        np.testing.assert_array_equal(out, kmeans(X, means))
    report = tensor.compile.explain(kmeans)(X, means)
    assert report.graph_break_count == 0 and report.op_count == 6, str(report)


def _numpy_ops(a, b):
    return (
        np.where(a > 0, a, 0.5),
        a / 2,
        (a * b).sum(axis=0),
        np.maximum(a, b).max(axis=1),
        np.sqrt(np.abs(b)).mean(),
        np.argmax(b, axis=1),
        np.exp(b[:, 1:3]) - 1,
        3 - a.T,
    )


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
def test_numpy_results_and_nep50_dtypes_match_numpy(dtype):
    a = RNG.integers(-5, 5, (4, 6)).astype(dtype)
    b = RNG.standard_normal((4, 6)).astype(np.float32)
    compiled = tensor.compile(_numpy_ops, backend="eager")
    for _ in range(2):
        for got, want in zip(compiled(a, b), _numpy_ops(a, b)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_unsupported_numpy_call_is_a_graph_break():
    def f(a):
        return np.sort(a * 2, axis=0) + 1  # np.sort has no tensor op

    compiled = tensor.compile(f, backend="eager")
    a = RNG.standard_normal((5, 3))
    for _ in range(2):
        np.testing.assert_allclose(compiled(a), f(a))
    assert tensor.compile.explain(f)(a).graph_break_count >= 1


def test_numpy_inside_a_tensor_function_is_free():
    def f(t):
        a = t.numpy()
        return tensor.from_numpy(np.exp(a) + 1) * 2

    compiled = tensor.compile(f, backend="eager")
    x = _t(4)
    assert_close(compiled(x), (x.exp() + 1) * 2)
    report = tensor.compile.explain(f)(x)
    assert report.graph_break_count == 0, str(report)


def test_compiled_function_on_each_device_with_a_device_move(device):
    def f(x):
        return ((x.to(device) * 2 + 1).relu().sum(0), x.exp())

    compiled = tensor.compile(f)
    for _ in range(3):
        x = _t(4, 3)
        for got, want in zip(compiled(x), f(x)):
            assert got.device == want.device
            assert_close(got, want)


def test_numpy_program_runs_on_the_default_device(device):
    X, means = RNG.standard_normal((300, 2)), RNG.standard_normal((3, 2))
    with tensor.device(device):
        compiled = tensor.compile(kmeans)
        for _ in range(2):
            np.testing.assert_array_equal(compiled(X, means), kmeans(X, means))
        graph = tensor.compile.explain(kmeans)(X, means).graph
    assert {n.device.type for n in graph.nodes} == {device}


@pytest.mark.parametrize("default_float", ["float64", "float32"])
def test_numpy_default_float_sets_the_dtype_of_arrays_made_inside(default_float, monkeypatch):
    def f(a):
        return a * np.linspace(0.0, 1.0, a.shape[0])

    monkeypatch.setattr(tensor.compile.config, "numpy_default_float", default_float)
    a = RNG.standard_normal(5).astype(np.float32)
    compiled = tensor.compile(f, backend="eager")
    out = compiled(a)
    assert out.dtype == np.dtype(default_float)
    np.testing.assert_allclose(out, f(a), rtol=1e-6)


# ------------------------------------------------------------ Note [Proxy capture]


@pytest.fixture
def proxies(monkeypatch):
    """Proxy capture from 500 elements on (the default threshold is 1M)."""
    from tensor._compile import proxy

    monkeypatch.setattr(proxy, "PROXY_MIN_ELEMENTS", 500)
    return proxy


def test_a_large_call_is_captured_on_small_proxies_not_on_its_data(proxies):
    seen = []

    def f(x, y):
        seen.append(x)
        return (x * 2 + y).relu().sum(1) - x.amax(1)

    compiled = tensor.compile(f)
    x, y = _t(300, 200), _t(200)
    assert_close(compiled(x, y), f(x, y))
    captured = seen[:-1]  # the last call was the eager one above
    assert len(captured) == 2 and all(t.numel() < 1000 and t._data.base is None for t in captured)
    assert compiled.proxy_captures == 1 and compiled.captures == 1
    x2 = _t(300, 200)
    assert_close(compiled(x2, y), f(x2, y))  # replayed: the function did not run again
    assert len(seen) == 4 and compiled.captures == 1


def test_a_large_numpy_program_is_captured_on_proxies(proxies):
    def kmeans(X, means):
        return np.argmin(np.linalg.norm(X - means[:, None], axis=2), axis=0)

    X, means = RNG.standard_normal((400, 2)), RNG.standard_normal((5, 2))
    compiled = tensor.compile(kmeans)
    np.testing.assert_array_equal(compiled(X, means), kmeans(X, means))
    assert compiled.proxy_captures == 1


@pytest.mark.parametrize("case", ["value read", "in-place write", "size read", "random"])
def test_proxy_capture_gives_up_and_captures_the_real_call(proxies, case):
    calls = []

    def f(x):
        calls.append(x)
        if case == "value read":
            return x * 2 if x.sum() > -1e9 else x
        if case == "in-place write":
            x.mul_(2)
            return x + 1
        if case == "size read":
            return x[: x.shape[0] // 2] * 3
        return x + tensor.rand(x.shape[1]) * 0

    x = _t(300, 200)
    expected = f(x.clone())
    compiled = tensor.compile(f)
    assert_close(compiled(x), expected)
    assert compiled.proxy_captures == 0
    assert calls[-1] is x  # the real call was captured (or run eagerly)
    if case == "in-place write":
        assert_close(x, calls[0])  # doubled once, by the real call, as the eager call doubled its clone
