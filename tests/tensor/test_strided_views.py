"""as_strided and its copy/scatter/in-place forms, slice_inverse, storage_offset, resize_as_,
nonzero_static, hash_tensor (issue 16, coverage): compared with torch, gradients included."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from autograd import gradcheck

# (base length, slice of the base to start from, size, stride, storage_offset or None)
AS_STRIDED_CASES = [
    (9, slice(None), (2, 2), (3, 1), 1),
    (9, slice(None), (3, 3), (1, 3), None),  # a transpose
    (10, slice(2, None), (2, 3), (1, 1), None),  # overlapping windows; offset from the slice (2)
    (10, slice(3, 8), (2,), (2,), 0),  # offset 0: before the view's own first element
    (6, slice(None), (0, 4), (4, 1), 6),  # empty: no bytes needed
    (6, slice(None), (), (), 5),  # 0-d
    (12, slice(None), (2, 1, 3), (6, 0, 2), 0),  # a zero stride
]


def _both(torch, device, n, sl):
    data = np.arange(n, dtype=np.float64) + 1
    ours = tensor.tensor(data, device=device)[sl]
    theirs = torch.tensor(data)[sl]
    return ours, theirs


def test_as_strided_matches_torch_values_offsets_and_gradients(torch, device):
    for n, sl, size, stride, offset in AS_STRIDED_CASES:
        ours, theirs = _both(torch, device, n, sl)
        assert ours.storage_offset() == theirs.storage_offset()
        out, ref = ours.as_strided(size, stride, offset), theirs.as_strided(size, stride, offset)
        assert out.shape == tuple(ref.shape)
        assert out.stride() == ref.stride() or out.numel() == 0  # CuPy zeroes an empty array's strides
        np.testing.assert_array_equal(out.cpu().numpy(), ref.numpy())
        assert out.storage_offset() == ref.storage_offset()
        np.testing.assert_array_equal(tensor.as_strided_copy(ours, size, stride, offset).cpu().numpy(), ref.numpy())
        # gradients through the view, overlapping elements summed (as torch)
        leaf = tensor.tensor(ours.cpu().numpy(), device=device, requires_grad=True)
        tleaf = torch.tensor(theirs.numpy(), requires_grad=True)
        local = offset if offset is None else offset - ours.storage_offset()
        if local is not None and local < 0:
            continue  # reaches before the slice: only the shared-storage form above can do that
        weights = np.arange(1, np.prod(size, dtype=int) + 1, dtype=np.float64).reshape(size)
        (leaf.as_strided(size, stride, local) * tensor.tensor(weights, device=device)).sum().backward()
        (tleaf.as_strided(size, stride, local) * torch.tensor(weights)).sum().backward()
        np.testing.assert_array_equal(leaf.grad.cpu().numpy(), tleaf.grad.numpy())


def test_as_strided_writes_reach_the_base_and_double_backward(device):
    base = tensor.zeros(6, device=device)
    base.as_strided((2, 2), (3, 1), 1).fill_(1.0)
    assert base.tolist() == [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    x = tensor.tensor(np.linspace(0.5, 2.0, 8), dtype=tensor.float64, device=device, requires_grad=True)
    assert gradcheck(lambda t: (t.as_strided((3, 2), (2, 1), 1) ** 2).sum(), (x,))
    y = x * 1.0  # a non-leaf, written through an as_strided view: the base's history is rebased
    y.as_strided((2,), (3,), 2).mul_(3.0)
    y.sum().backward()
    expected = np.ones(8)
    expected[[2, 5]] = 3.0
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expected)


def test_as_strided_gradient_of_an_overlapping_input_matches_torch(torch):
    weights = np.arange(1.0, 7.0).reshape(2, 3)
    leaf, tleaf = tensor.ones(4, requires_grad=True), torch.ones(4, requires_grad=True)
    (leaf.expand(3, 4).as_strided((2, 3), (1, 1), 0) * tensor.tensor(weights)).sum().backward()
    (tleaf.expand(3, 4).as_strided((2, 3), (1, 1), 0) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), tleaf.grad.numpy())


def test_as_strided_errors_match_torch(torch):
    cases = [((3, 3), (3, 1), 2), ((2,), (-1,), None), ((2, 2), (1,), None), ((2,), (1,), -1), ((-2,), (1,), None)]
    for size, stride, offset in cases:
        with pytest.raises(RuntimeError) as theirs:
            torch.arange(9.0).as_strided(size, stride, offset)
        with pytest.raises(RuntimeError) as ours:
            tensor.arange(9.0).as_strided(size, stride, offset)
        assert str(ours.value) == str(theirs.value)


def test_as_strided_scatter_inplace_and_slice_inverse(torch, device):
    src = np.arange(1.0, 5.0).reshape(2, 2)
    out = tensor.as_strided_scatter(
        tensor.zeros(6, device=device), tensor.tensor(src, device=device), (2, 2), (3, 1), 1
    )
    ref = torch.as_strided_scatter(torch.zeros(6), torch.tensor(src), (2, 2), (3, 1), 1)
    np.testing.assert_array_equal(out.cpu().numpy(), ref.numpy())
    with pytest.raises(RuntimeError, match="src size = \\[3\\], slice size = \\[2, 2\\]"):
        tensor.as_strided_scatter(tensor.zeros(6), tensor.ones(3), (2, 2), (3, 1), 1)
    x = tensor.zeros(6, device=device, requires_grad=True)
    s = tensor.tensor(src, device=device, requires_grad=True)
    tensor.as_strided_scatter(x, s, (2, 2), (3, 1), 1).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0] and s.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]

    w = tensor.arange(6.0, device=device)
    assert w.as_strided_((2,), (2,)) is w and w.tolist() == [0.0, 2.0] and w.stride() == (2,)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        tensor.ones(3, requires_grad=True).as_strided_((2,), (1,))

    base, tbase = tensor.arange(6.0, device=device), torch.arange(6.0)
    inverse = tensor.slice_inverse(base[1:5:2], base, 0, 1, 5, 2)
    np.testing.assert_array_equal(inverse.cpu().numpy(), torch.slice_inverse(tbase[1:5:2], tbase, 0, 1, 5, 2).numpy())


def test_resize_as_(torch):
    for start, template in ((6, (2, 2)), (4, (2, 2)), (2, (3,))):
        ours, theirs = tensor.arange(float(start)), torch.arange(float(start))
        version = ours._version
        tensor.resize_as_(ours, tensor.ones(template))
        torch.resize_as_(theirs, torch.ones(template))
        keep = min(start, int(np.prod(template)))
        assert ours.shape == template and ours._version == version + 1
        np.testing.assert_array_equal(ours.reshape(-1)[:keep].numpy(), theirs.reshape(-1)[:keep].numpy())
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        tensor.ones(2, requires_grad=True).resize_as_(tensor.ones(3))


def test_nonzero_static_and_hash_tensor_match_torch(torch, device):
    data = np.array([[0, 3, 0], [5, 0, 7]])
    for size, fill in ((0, -1), (2, -1), (3, -1), (6, 9)):
        ours = tensor.tensor(data, device=device).nonzero_static(size=size, fill_value=fill)
        np.testing.assert_array_equal(ours.cpu().numpy(), torch.tensor(data).nonzero_static(size=size, fill_value=fill))
        assert ours.dtype is tensor.int64
    with pytest.raises(RuntimeError, match="non-negative"):
        tensor.nonzero_static(tensor.ones(2), size=-1)

    samples = [
        (np.array([1.5, -2.0, 3.0, 0.1]), "float64", {}),
        (np.array([1.5, -2.0], dtype=np.float32), "float32", {}),
        (np.array([[1, 2, 9], [3, 7, 1]]), "int64", {"dim": 1}),
        (np.arange(24).reshape(2, 3, 4), "int32", {"dim": (0, 2), "keepdim": True}),
        (np.array([True, False, True]), "bool", {}),
        (np.array(2.5), "float32", {}),
        (np.arange(12.0).reshape(3, 4).T, "float64", {"dim": 0}),  # non-contiguous
        (np.zeros((0, 3)), "float64", {"dim": 1}),
    ]
    for data, dtype, kwargs in samples:
        ours = tensor.hash_tensor(tensor.tensor(data, dtype=getattr(tensor, dtype), device=device), **kwargs)
        ref = torch.hash_tensor(torch.tensor(data, dtype=getattr(torch, dtype)), **kwargs)
        np.testing.assert_array_equal(ours.cpu().numpy(), ref.view(torch.int64).numpy())
    for call, message in (
        (lambda: tensor.hash_tensor(tensor.ones(1), mode=1), "Unknown hash_tensor mode: 1"),
        (lambda: tensor.hash_tensor(tensor.ones(0)), "Expected reduction dim to be specified"),
    ):
        with pytest.raises(RuntimeError, match=message):
            call()
    with pytest.raises(IndexError, match="dim 0 to have non-zero size"):
        tensor.hash_tensor(tensor.ones(0, 3), 0)
