"""tensor.compile keeps eager's memory layouts in a compiled training step (Note [Eager layouts]
in tensor/_compile/layout.py): a small CNN's fused kernels write their values with the strides
eager code gives them (the batch dim innermost after a convolution) and its gradients match
eager's. Max pooling's window scans and gradient scatter as fused loop code
(tensor/_compile/window_code.py) give eager's values on ties and NaN."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tensor._compile import fusion, lowering
from tensor._compile.layout import memory_order
from tests.helpers import assert_close

pytest.importorskip("numba", reason="numba is not installed (pip install 'distrib[compile]')")


def _cnn():
    tensor.manual_seed(3)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(24, 5),
    ).double()


def _grads(model, x, y):
    model.zero_grad()
    F.cross_entropy(model(x), y).backward()
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.slow  # ~6.5 s with a cold kernel cache (eight numba kernels), 0.3 s warm
def test_a_compiled_cnn_step_keeps_eager_layouts_and_gradients():
    rng = np.random.default_rng(0)
    model = _cnn()
    compiled = tensor.compile(model)
    for _ in range(3):
        x = tensor.tensor(rng.standard_normal((6, 1, 14, 14)))
        y = tensor.tensor(rng.integers(0, 5, 6))
        for got, want in zip(_grads(compiled, x, y), _grads(model, x, y), strict=True):
            assert_close(got, want, rtol=1e-10, atol=1e-12)
    segment = next(iter(compiled._compiled.cache.values())).paths[0]._runners[(0, True)]
    assert segment.fallback is None  # trained through the fused joint graph
    joint, layouts = segment.joint, segment.joint.layouts
    # Rerun the lowered forward and backward and compare every value's memory order with the
    # eager run's: the ReLU after each convolution (a fused bias + ReLU kernel) is among them,
    # stored with the batch innermost as eager stores it.
    tensors = segment._tensors([x])
    env = [None] * len(joint.nodes)
    segment.forward(env, tensors + [None])
    out = env[segment.out_node]
    env[segment.grad_node] = tensor.ones_like(out).double()
    segment.backward_fused(env, [])
    relus = [n.id for n in joint.nodes if n.kind == "call" and n.op.name == "relu"]
    assert len(relus) == 2 and all(layouts[r][-1] == 0 for r in relus)  # batch innermost
    checked = 0
    for node_id, order in layouts.items():
        value = env[node_id]
        if value is not None and value._data.ndim >= 2 and all(s > 1 for s in value.shape):
            assert memory_order(value._data) == order, joint.nodes[node_id].describe()
            checked += 1
    assert checked >= 10
    # Note [Views of stored values]: the ReLU-masked pooling gradient is stored once, in its eager
    # order; the weight gradient's permute and reshape view it, and the bias gradient's sum reads it.
    backward = fusion.plan(joint, segment.out_node + 1, len(joint.nodes))
    views = [joint.nodes[s.node] for s in backward if s.kind == "eager" and joint.nodes[s.node].op.name == "permute"]
    stored = [s.node for s in backward if s.kind == "kernel" and joint.nodes[s.node].op.name == "threshold_backward"]
    assert len(stored) == 2 and all(any(v.args[0] == m for v in views) for m in stored)
    sums = [s for s in backward if s.kind == "kernel" and any(joint.nodes[m].op.name == "sum" for m in s.members)]
    assert sums and not any(joint.nodes[m].op.name == "put_windows" for s in sums for m in s.members)


def _pool_block(x):
    return F.max_pool2d(F.relu(x), 2) * 3


def _library_calls(segment) -> set:
    """The ops of a compiled segment's joint graph that run through the dispatcher, not fused."""
    nodes = segment.joint.nodes
    return {n.op.name for n in nodes if n.kind == "call" and fusion.classify(n, nodes) is None}


@pytest.mark.parametrize("plane", [(4, 6), pytest.param((5, 5), marks=pytest.mark.slow)])  # ~4 s each, cold cache
def test_fused_max_pool_matches_eager_on_ties_and_nan(plane):
    rng = np.random.default_rng(1)
    data = rng.integers(-2, 3, (2, 3, *plane)).astype(np.float64)  # ReLU zeros and equal integers tie
    data[0, 1, 1, 0] = np.nan
    compiled = tensor.compile(_pool_block)
    for _ in range(2):
        x, ref = (tensor.tensor(data, requires_grad=True) for _ in range(2))
        g = tensor.tensor(rng.standard_normal((2, 3, plane[0] // 2, plane[1] // 2)))
        out = compiled(x)
        out.backward(g)
        want = _pool_block(ref)
        want.backward(g)
        assert_close(out, want, rtol=0, atol=0)
        assert_close(x.grad, ref.grad, rtol=0, atol=0)
    segment = next(iter(compiled.cache.values())).paths[0]._runners[(0, True)]
    assert segment.fallback is None
    # the windows tile a 4x6 plane, so the scatter is a gather too; a 5x5 plane keeps it a library call
    fused = {"window_argmax", "take_windows"} | ({"put_windows"} if plane == (4, 6) else set())
    assert not fused & _library_calls(segment)
    assert plane == (4, 6) or "put_windows" in _library_calls(segment)
    # a window's element is a computed index: read unsigned, so numba does not wrap it (Note [Unsigned indices])
    sources = [k.source for k in lowering.kernels_of(segment.joint, 0, segment.out_node + 1)]
    assert any("window_argmax" in src and "np.uint64(" in src for src in sources)


def test_max_pool_scans_that_stay_library_calls():
    """Integer inputs (no NaN-propagating float max) and windows too large to unroll."""
    cases = [
        (lambda x: F.max_pool2d(x, 2), np.arange(36).reshape(1, 1, 6, 6) % 7),
        (lambda x: F.max_pool2d(x, 6), None),
    ]
    for fn, data in cases:
        data = np.random.default_rng(2).standard_normal((1, 2, 6, 6)) if data is None else data
        x = tensor.tensor(data)
        compiled = tensor.compile(fn)
        for _ in range(2):
            assert_close(compiled(x), fn(x), rtol=0, atol=0)
        graph = next(iter(compiled.cache.values())).paths[0].graph
        calls = [n for n in graph.nodes if n.kind == "call" and n.op.name in ("window_argmax", "take_windows")]
        assert calls and all(fusion.classify(n, graph.nodes) is None for n in calls)
