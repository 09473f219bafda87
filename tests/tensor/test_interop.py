"""Interop with numpy and torch: from_numpy / .numpy() zero-copy, __array__, and
DLPack round trips that share memory."""

from __future__ import annotations

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close

NUMPY_DTYPES = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.bool_]


@pytest.mark.parametrize("np_dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_from_numpy_keeps_dtype_and_shares_memory(np_dtype):
    array = np.zeros((2, 3), dtype=np_dtype)
    t = tensor.from_numpy(array)
    assert t.dtype.numpy == np.dtype(np_dtype)
    assert t.shape == (2, 3)
    array[1, 2] = 1
    assert t[1, 2].item() == 1
    t[0, 0] = 1
    assert array[0, 0] == 1


def test_from_numpy_of_non_contiguous_array_shares_memory():
    array = np.arange(12.0).reshape(3, 4)[:, ::2]
    t = tensor.from_numpy(array)
    assert_close(t, array)
    array[0, 1] = -1.0
    assert t[0, 1].item() == -1.0


@pytest.mark.parametrize(("bad", "error", "message"), [
    ([1.0, 2.0], TypeError, "expected np.ndarray \\(got list\\)"),
    (np.zeros(2, dtype=np.clongdouble), TypeError, "unsupported dtype"),
    (np.array(["a"]), TypeError, "unsupported dtype"),
])
def test_from_numpy_rejects_bad_input(bad, error, message):
    with pytest.raises(error, match=message):
        tensor.from_numpy(bad)


def test_numpy_shares_memory_with_the_tensor():
    t = tensor.zeros(3)
    array = t.numpy()
    array[1] = 4.0
    assert t.tolist() == [0.0, 4.0, 0.0]
    t[2] = 5.0
    assert array[2] == 5.0


def test_numpy_of_tensor_that_requires_grad_raises():
    t = tensor.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        t.numpy()
    assert_close(t.detach().numpy(), np.ones(2, np.float32))


def test_numpy_of_gpu_tensor_raises(device):
    if device == "cpu":
        assert tensor.ones(1).numpy().shape == (1,)
        return
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        tensor.ones(1, device=device).numpy()


def test_array_protocol(device):
    t = tensor.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert_close(np.asarray(t), np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.add(t, 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]


def test_np_array_copies_but_np_asarray_shares():
    t = tensor.zeros(3)
    copied = np.array(t)
    copied[0] = 99.0
    assert t[0].item() == 0.0, "np.array(t) must copy (numpy 2 passes copy=True)"
    shared = np.asarray(t)
    shared[1] = 7.0
    assert t[1].item() == 7.0
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(t, dtype=np.float64, copy=False)


# ------------------------------------------------------------ DLPack
def test_dlpack_round_trip_with_numpy_shares_memory():
    t = tensor.arange(6.0).reshape(2, 3)
    array = np.from_dlpack(t)
    array[0, 0] = 100.0
    assert t[0, 0].item() == 100.0
    source = np.arange(4, dtype=np.int32)
    back = tensor.from_dlpack(source)
    assert back.dtype is tensor.int32
    source[3] = -1
    assert back[3].item() == -1


def test_dlpack_device_of_cpu_tensor():
    assert tensor.ones(1).__dlpack_device__() == (1, 0)


def test_torch_from_dlpack_of_our_tensor_shares_memory(torch):
    ours = tensor.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tensor.float64)
    theirs = torch.from_dlpack(ours)
    assert theirs.dtype == torch.float64 and tuple(theirs.shape) == (2, 2)
    theirs[1, 1] = -4.0
    assert ours[1, 1].item() == -4.0
    ours[0, 0] = 10.0
    assert theirs[0, 0].item() == 10.0


def test_from_dlpack_of_torch_tensor_shares_memory(torch):
    theirs = torch.arange(5, dtype=torch.int64)
    ours = tensor.from_dlpack(theirs)
    assert ours.dtype is tensor.int64 and ours.tolist() == [0, 1, 2, 3, 4]
    theirs[0] = 42
    assert ours[0].item() == 42
    ours[4] = -7
    assert theirs[4].item() == -7


def test_dlpack_of_non_contiguous_torch_tensor(torch):
    theirs = torch.arange(6.0).reshape(2, 3).t()
    ours = tensor.from_dlpack(theirs)
    assert_close(ours, theirs.numpy())


def test_dlpack_of_tensor_that_requires_grad_raises(torch):
    t = tensor.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="Can't export tensors that require gradient, use tensor.detach\\(\\)"
    ):
        torch.from_dlpack(t)


def test_from_dlpack_of_our_tensor_returns_it():
    t = tensor.ones(2)
    assert tensor.from_dlpack(t) is t


def test_torch_tensor_values_via_tensor_constructor(torch):
    theirs = torch.tensor([1.5, 2.5], dtype=torch.float64)
    ours = tensor.tensor(theirs.numpy())
    assert ours.dtype is tensor.float64 and ours.tolist() == [1.5, 2.5]
