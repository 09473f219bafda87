"""torch.gradient and torch.histogramdd (tensor/ops/numeric_extra.py) against torch (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck, gradgradcheck

pytestmark = pytest.mark.usefixtures("torch_one_thread")  # tests/tensor/conftest.py


def _both(torch, value, device):
    """``value`` (an array, a number, or a list of them) as our tensor(s) and torch's."""
    if isinstance(value, list):
        pairs = [_both(torch, v, device) for v in value]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    if isinstance(value, np.ndarray):
        return tensor.tensor(value, device=device), torch.tensor(value)
    return value, value


def test_gradient_matches_torch(torch, device):
    rng = np.random.default_rng(0)
    f = rng.standard_normal((5, 6, 3))
    coords = [np.cumsum(rng.uniform(0.5, 2.0, n)) for n in f.shape]
    cases = [
        {},
        {"spacing": 2.0},
        {"spacing": [0.5, 3.0, 1.5], "edge_order": 2},
        {"dim": 1, "edge_order": 2},
        {"dim": [0, -1], "spacing": [coords[0], coords[2]]},
        {"spacing": coords, "edge_order": 2},
        {"spacing": [coords[1]], "dim": 1},
    ]
    x, ref = tensor.tensor(f, device=device), torch.tensor(f)
    for kwargs in cases:
        ours_kw, torch_kw = {}, {}
        for key, value in kwargs.items():
            ours_kw[key], torch_kw[key] = _both(torch, value, device)
        got, expected = tensor.gradient(x, **ours_kw), torch.gradient(ref, **torch_kw)
        assert isinstance(got, tuple) and len(got) == len(expected), kwargs
        for g, e in zip(got, expected):
            assert g.device.type == device
            np.testing.assert_allclose(g.cpu().numpy(), e.numpy(), rtol=1e-12, atol=1e-12, err_msg=str(kwargs))
    ints = tensor.gradient(tensor.tensor([1, 4, 9, 16], device=device), spacing=2)[0]
    assert ints.dtype is tensor.float32 and ints.cpu().tolist() == [1.5, 2.0, 3.0, 3.5]
    low_dtype = tensor.bfloat16 if device == "cpu" else tensor.float16  # no bfloat16 arrays in CuPy
    low = tensor.gradient(tensor.tensor([1.0, 4.0, 9.0], dtype=low_dtype, device=device))[0]
    assert low.dtype is low_dtype and low.float().cpu().tolist() == [3.0, 4.0, 5.0]


def test_gradient_errors_and_derivative():
    x = tensor.rand(3, 4)
    with pytest.raises(RuntimeError, match="only supports edge_order=1 and edge_order=2"):
        tensor.gradient(x, edge_order=3)
    with pytest.raises(RuntimeError, match="dimension size to be at least edge_order\\+1"):
        tensor.gradient(tensor.rand(2, 4), edge_order=2)
    with pytest.raises(RuntimeError, match="'self.dim\\(\\) = 2', since dim argument was not given"):
        tensor.gradient(x, spacing=[1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="as many elements"):
        tensor.gradient(x, spacing=[tensor.arange(3.0)], dim=1)
    f = tensor.rand(4, 5, dtype=tensor.float64, requires_grad=True)
    coords = tensor.tensor([0.0, 0.5, 2.0, 2.5, 4.0], dtype=tensor.float64, requires_grad=True)
    assert gradcheck(lambda t, c: tensor.gradient(t, spacing=[c], dim=1, edge_order=2)[0], (f, coords))
    for order in (1, 2):  # uniform steps: numpy's gradient, with the transposed differences as derivative
        both_dims = lambda t, order=order: tensor.stack(tensor.gradient(t, spacing=[0.5, 2.0], edge_order=order))  # noqa: E731
        small = tensor.rand(3, 3, dtype=tensor.float64, requires_grad=True)
        assert gradcheck(both_dims, (small,))
        assert gradgradcheck(both_dims, (small,))


def test_histogramdd_matches_torch(torch, device):
    rng = np.random.default_rng(1)
    points, weight = rng.standard_normal((2, 50, 3)), rng.uniform(size=(2, 50))
    edges = [np.array([-3.0, 0.0, 0.5, 3.0]), np.array([-1.0, 1.0]), np.array([-2.0, 0.0, 2.0])]
    cases = [
        {"bins": 4},
        {"bins": [2, 3, 4], "density": True},
        {"bins": 3, "range": [-1.0, 1.0, -2.0, 2.0, 0.0, 1.0], "weight": weight},
        {"bins": edges, "weight": weight, "density": True},
    ]
    x, ref = tensor.tensor(points, device=device), torch.tensor(points)
    for kwargs in cases:
        ours_kw, torch_kw = {}, {}
        for key, value in kwargs.items():
            ours_kw[key], torch_kw[key] = _both(torch, value, device)
        got, expected = tensor.histogramdd(x, **ours_kw), torch.histogramdd(ref, **torch_kw)
        assert got.hist.dtype is tensor.float64 and got.hist.device.type == device
        np.testing.assert_allclose(got.hist.cpu().numpy(), expected.hist.numpy(), rtol=1e-12, err_msg=str(kwargs))
        for g, e in zip(got.bin_edges, expected.bin_edges, strict=True):
            np.testing.assert_allclose(g.cpu().numpy(), e.numpy(), rtol=1e-12)
    flat = tensor.histogramdd(tensor.ones(5, 2, device=device), [2, 3])  # constant data: +-0.5 around it
    expected = torch.histogramdd(torch.ones(5, 2), [2, 3])
    np.testing.assert_array_equal(flat.hist.cpu().numpy(), expected.hist.numpy())
    np.testing.assert_allclose(flat.bin_edges[1].cpu().numpy(), expected.bin_edges[1].numpy(), rtol=1e-6)


def test_histogramdd_errors():
    x = tensor.rand(10, 2)
    with pytest.raises(RuntimeError, match="expected 2 sequences"):
        tensor.histogramdd(x, [2, 2, 2])
    with pytest.raises(RuntimeError, match="expected 4 values for range"):
        tensor.histogramdd(x, 2, range=[0.0, 1.0])
    with pytest.raises(RuntimeError, match="weight of shape \\[10\\]"):
        tensor.histogramdd(x, 2, weight=tensor.ones(3))
    with pytest.raises(RuntimeError, match="floating dtype"):
        tensor.histogramdd(tensor.ones(4, 2, dtype=tensor.int64), 2)
