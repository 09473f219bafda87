"""tensor.onnx.export: the captured graph as ONNX, accepted by onnx.checker and run by onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor

onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install 'distrib[onnx]')")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install 'distrib[onnx]')")

RNG = np.random.default_rng(2)


def _run(path, *arrays):
    session = ort.InferenceSession(str(path))
    return session.run(None, {f"input_{i}": a for i, a in enumerate(arrays)})


def test_mlp_module_exports_and_runs(tmp_path):
    tensor.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 8), nn.GELU(),
                          nn.Linear(8, 3), nn.Softmax(-1))
    x = tensor.randn(5, 6)
    proto = tensor.onnx.export(model, (x,), tmp_path / "mlp.onnx")
    assert len(proto.graph.initializer) >= 6  # the parameters
    (out,) = _run(tmp_path / "mlp.onnx", x.numpy())
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def kmeans(X, means):
    return (X - means[:, None]).pow(2).sum(2).sqrt().argmin(0)


def mixed(a, i):
    """Scalars, int/float promotion, comparisons, where, clamp, slicing, reductions, views."""
    y = (a * 2 + i) / 3 - a[:, ::2].sum(1, keepdim=True).exp().clamp(max=5.0)
    z = tensor.where(a > 0.5, y, -y).T[1:, None].reshape(-1)
    return z.abs().sqrt(), (i > 1).all(1), a.amax(0) - a.amin(1)[0] + a[2].mean()


def test_kmeans_and_mixed_ops_match(tmp_path):
    X, means = tensor.tensor(RNG.standard_normal((200, 2))), tensor.tensor(RNG.standard_normal((4, 2)))
    tensor.onnx.export(kmeans, (X, means), tmp_path / "k.onnx")
    (out,) = _run(tmp_path / "k.onnx", X.numpy(), means.numpy())
    np.testing.assert_array_equal(out, kmeans(X, means).numpy())
    a = tensor.tensor(RNG.uniform(-1, 1, (4, 6)), dtype=tensor.float32)
    i = tensor.tensor(RNG.integers(0, 4, (4, 6)))
    tensor.onnx.export(mixed, (a, i), tmp_path / "m.onnx")
    for got, want in zip(_run(tmp_path / "m.onnx", a.numpy(), i.numpy()), mixed(a, i)):
        assert got.dtype == want.numpy().dtype and got.shape == tuple(want.shape)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-6)


def test_unsupported_op_and_graph_break_are_errors(tmp_path):
    with pytest.raises(NotImplementedError, match=r"'cat' at test_onnx_export.py:\d+"):
        tensor.onnx.export(lambda x: tensor.cat([x, x]), (tensor.ones(2),), tmp_path / "c.onnx")
    with pytest.raises(tensor.compile.GraphBreakError, match="item"):
        tensor.onnx.export(lambda x: x * 2 if x.sum() > 0 else x, (tensor.ones(2),), tmp_path / "b.onnx")
