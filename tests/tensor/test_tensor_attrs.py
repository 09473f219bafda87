"""Tensor attributes and Python protocol: shape/stride/numel, item/tolist, clone/detach,
repr (compared with torch's), bool/len/iter, pickling and deepcopy."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tensor
from tests.helpers import assert_close


def test_shape_and_size_attributes(device):
    t = tensor.zeros(2, 3, 4, device=device)
    assert t.shape == (2, 3, 4) and t.size() == (2, 3, 4)
    assert t.size(1) == 3 and t.size(-1) == 4
    assert t.ndim == 3 and t.dim() == 3
    assert t.numel() == 24 and tensor.numel(t) == 24
    assert t.element_size() == 4 and t.itemsize == 4 and t.nbytes == 96
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.is_contiguous()
    assert t.is_floating_point() and not tensor.zeros(1, dtype=tensor.int32).is_floating_point()


def test_transposed_tensor_strides_and_contiguity(device):
    t = tensor.zeros(2, 3, device=device).t()
    assert t.shape == (3, 2)
    assert t.stride() == (1, 3)
    assert not t.is_contiguous()
    assert t.contiguous().is_contiguous()


def test_0d_tensor_size(device):
    t = tensor.tensor(5.0, device=device)
    assert t.shape == () and t.ndim == 0 and t.numel() == 1


# ------------------------------------------------------------ item / tolist
ITEM_CASES = [
    (tensor.tensor(2.5), 2.5, float),
    (tensor.tensor([3]), 3, int),
    (tensor.tensor([[True]]), True, bool),
    (tensor.tensor(7, dtype=tensor.uint8), 7, int),
]


@pytest.mark.parametrize(("t", "value", "kind"), ITEM_CASES)
def test_item_returns_python_number(t, value, kind):
    assert t.item() == value and type(t.item()) is kind


def test_item_of_many_elements_raises():
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        tensor.ones(2).item()


def test_tolist_nested_and_0d(device):
    assert tensor.tensor([[1, 2], [3, 4]], device=device).tolist() == [[1, 2], [3, 4]]
    assert tensor.tensor(1.5, device=device).tolist() == 1.5
    assert tensor.zeros(2, 0, device=device).tolist() == [[], []]


def test_number_conversions():
    assert float(tensor.tensor([2.5])) == 2.5
    assert int(tensor.tensor(3.9)) == 3
    assert [10, 20, 30][tensor.tensor(1)] == 20
    with pytest.raises(
        TypeError, match="only integer tensors of a single element can be converted to an index"
    ):
        [1, 2][tensor.tensor(1.0)]


def test_bool_len_iter():
    assert bool(tensor.tensor([1.0])) and not bool(tensor.tensor(0))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(tensor.ones(2))
    assert len(tensor.zeros(4, 2)) == 4
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(tensor.tensor(1.0))
    rows = list(tensor.tensor([[1, 2], [3, 4]]))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(tensor.tensor(1.0))


# ------------------------------------------------------------ clone / detach
def test_clone_copies_storage_and_keeps_history(device):
    x = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    c = x.clone()
    assert c.data_ptr() != x.data_ptr()
    assert c.requires_grad and c.grad_fn is not None
    c.sum().backward()
    assert_close(x.grad, tensor.ones(2))


def test_clone_of_non_contiguous_tensor(device):
    t = tensor.arange(6.0, device=device).reshape(2, 3).t()
    assert_close(t.clone(), np.arange(6.0, dtype=np.float32).reshape(2, 3).T)


def test_detach_shares_storage_and_version_counter(device):
    x = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    d = x.detach()
    assert d.data_ptr() == x.data_ptr() and not d.requires_grad
    version = x._version
    d.add_(1)
    assert x._version == version + 1
    assert x.tolist() == [2.0, 3.0]


def test_detach_in_place(device):
    y = tensor.ones(1, device=device, requires_grad=True) * 2
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad


def test_data_property_is_a_detached_alias(device):
    x = tensor.ones(2, device=device, requires_grad=True)
    assert not x.data.requires_grad
    x.data.mul_(3)
    assert x.tolist() == [3.0, 3.0]
    x.data = tensor.zeros(2, device=device)
    assert x.tolist() == [0.0, 0.0] and x.requires_grad


# ------------------------------------------------------------ repr
REPR_CASES = [
    [1.0, 2.0],
    [0.0, 0.3, 0.6],
    [1e-5, 1.0],
    [-0.5, 2.25],
    [[1.0, 2.5], [3.0, 4.0]],
    [float("nan"), 1.5, float("inf")],
    [2.0, -3.0],
    2.5,
    [1, 2, 3],
    [True, False],
]


@pytest.mark.parametrize("data", REPR_CASES, ids=str)
def test_repr_matches_torch_apart_from_module_name(torch, data):
    ours = repr(tensor.tensor(data))
    theirs = repr(torch.tensor(data)).replace("torch.", "tensor.")
    assert ours == theirs


@pytest.mark.parametrize(("make_ours", "make_theirs"), [
    (lambda: tensor.tensor([1, 2], dtype=tensor.int32), lambda t: t.tensor([1, 2], dtype=t.int32)),
    (lambda: tensor.tensor([1.5], dtype=tensor.float64), lambda t: t.tensor([1.5], dtype=t.float64)),
    (lambda: tensor.tensor([], dtype=tensor.int64), lambda t: t.tensor([], dtype=t.int64)),
    (lambda: tensor.zeros(0, 2, dtype=tensor.float64), lambda t: t.zeros(0, 2, dtype=t.float64)),
    (lambda: tensor.ones(2, requires_grad=True), lambda t: t.ones(2, requires_grad=True)),
    (lambda: tensor.ones(2, requires_grad=True) * 1.5, lambda t: t.ones(2, requires_grad=True) * 1.5),
])
def test_repr_extras_match_torch(torch, make_ours, make_theirs):
    assert repr(make_ours()) == repr(make_theirs(torch)).replace("torch.", "tensor.")


def test_repr_follows_the_default_dtype():
    try:
        tensor.set_default_dtype(tensor.float64)
        assert repr(tensor.tensor([1.5])) == "tensor([1.5000])"
        assert repr(tensor.tensor([1.5], dtype=tensor.float32)) == "tensor([1.5000], dtype=tensor.float32)"
    finally:
        tensor.set_default_dtype(tensor.float32)


# ------------------------------------------------------------ pickling and deepcopy
@pytest.mark.parametrize("dtype", [tensor.float16, tensor.float32, tensor.float64, tensor.int8,
                                   tensor.int32, tensor.int64, tensor.uint8, tensor.bool])
def test_pickle_round_trip_all_dtypes(device, dtype):
    t = tensor.tensor([[1, 0], [0, 1]], dtype=dtype, device=device)
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype is dtype and back.device == t.device
    assert_close(back, t)


def test_pickle_keeps_requires_grad_and_copies_data(device):
    t = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    back = pickle.loads(pickle.dumps(t))
    assert back.requires_grad and back.is_leaf
    assert back.data_ptr() != t.data_ptr()


def test_pickle_non_contiguous_and_empty(device):
    t = tensor.arange(6.0, device=device).reshape(2, 3).t()
    assert_close(pickle.loads(pickle.dumps(t)), t)
    e = tensor.zeros(0, 3, device=device)
    assert pickle.loads(pickle.dumps(e)).shape == (0, 3)


def test_pickle_of_non_leaf_that_requires_grad_raises(device):
    y = tensor.ones(2, device=device, requires_grad=True) * 2
    with pytest.raises(
        RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"
    ):
        pickle.dumps(y)


def test_dtype_and_device_pickle_to_the_same_objects():
    assert pickle.loads(pickle.dumps(tensor.float16)) is tensor.float16
    assert pickle.loads(pickle.dumps(tensor.device("cuda:1"))) is tensor.device("cuda:1")


def test_deepcopy_copies_data_requires_grad_and_grad(device):
    x = tensor.tensor([1.0, 2.0], device=device, requires_grad=True)
    (x * 3).sum().backward()
    c = copy.deepcopy(x)
    assert c is not x and c.data_ptr() != x.data_ptr()
    assert c.requires_grad and c.is_leaf
    assert_close(c.grad, x.grad)
    assert c.grad.data_ptr() != x.grad.data_ptr()
    c.data.add_(1)
    assert x.tolist() == [1.0, 2.0]


def test_deepcopy_keeps_shared_tensors_shared():
    t = tensor.ones(2)
    a, b = copy.deepcopy([t, t])
    assert a is b


def test_deepcopy_of_non_leaf_raises(device):
    y = tensor.ones(2, device=device, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(y)


def test_higher_layers_load_on_first_access_only():
    # torch.autograd / torch.nn / torch.optim / torch.utils.data / torch.distributed spelled through tensor
    code = (
        "import sys, tensor\n"
        "assert not any(m.split('.')[0] in ('nn', 'distrib', 'autograd') for m in sys.modules)\n"
        "grad = tensor.autograd.grad\n"
        "assert grad is sys.modules['autograd'].grad\n"
        "import nn, nn.optim, distrib, distrib.data\n"
        "assert tensor.nn is nn and tensor.optim is nn.optim and tensor.distributed is distrib\n"
        "import nn.hub, distrib.multiprocessing\n"
        "assert tensor.hub is nn.hub and tensor.multiprocessing is distrib.multiprocessing\n"
        "assert tensor.utils.data is distrib.data\n"
        "try:\n    tensor.no_such_thing\nexcept AttributeError as e:\n    assert 'no_such_thing' in str(e)\n"
        "else:\n    raise SystemExit('no AttributeError')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


CAST_METHODS = {
    "float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16", "cfloat": "complex64",
    "cdouble": "complex128", "long": "int64", "int": "int32", "short": "int16", "char": "int8", "byte": "uint8",
    "bool": "bool",
}


@pytest.mark.parametrize(("method", "dtype"), CAST_METHODS.items(), ids=list(CAST_METHODS))
def test_cast_methods(device, method, dtype):
    if dtype == "bfloat16" and device != "cpu":  # CuPy has no bfloat16 arrays: a clear error instead
        with pytest.raises(TypeError, match="bfloat16 is not supported on cuda"):
            getattr(tensor.tensor([0.0, 2.0], device=device), method)()
        return
    t = getattr(tensor.tensor([0.0, 2.0], device=device), method)()
    assert t.dtype == getattr(tensor, dtype)
    assert t.to(tensor.float64).tolist() == [0.0, 1.0 if dtype == "bool" else 2.0]


def test_cast_methods_as_torch(torch):
    for method, dtype in CAST_METHODS.items():
        assert getattr(torch.tensor([1.0]), method)().dtype == getattr(torch, dtype), method


def test_size_of_a_dim_of_a_0d_tensor_raises_as_torch():
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        tensor.tensor(1.0).size(0)
    assert tensor.tensor(1.0).size() == () and tensor.ones(2, 3).size(-1) == 3


@pytest.mark.parametrize("call", [
    lambda m: int(m.ones(2)),
    lambda m: float(m.ones(0)),
    lambda m: float(m.tensor(1 + 1j)),
    lambda m: int(m.tensor(1 + 1j)),
])
def test_int_and_float_raise_as_torch(torch, call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type):
        call(tensor)


def test_int_and_float_of_one_element():
    assert int(tensor.tensor([2.7])) == 2 and float(tensor.tensor(1 + 0j)) == 1.0 and int(tensor.tensor(True)) == 1


@pytest.mark.parametrize("value", [1 + 2j, [0.5j], 3.0])
def test_complex_of_a_one_element_tensor(torch, value):
    assert complex(tensor.tensor(value)) == complex(torch.tensor(value))


def test_complex_of_many_elements_raises(torch):
    for L in (tensor, torch):
        with pytest.raises(ValueError):
            complex(L.tensor([1j, 2j]))


def test_a_bool_tensor_is_an_index(torch):
    assert [10, 20][tensor.tensor(True)] == [10, 20][torch.tensor(True)] == 20


@pytest.mark.parametrize("method", ["float", "double", "half", "int", "long", "bool", "cfloat", "byte"])
def test_cast_methods_take_memory_format(torch, method):
    x = tensor.ones(2, 3, 4, 5)
    out = getattr(x, method)(memory_format=tensor.channels_last)
    expected = getattr(torch.ones(2, 3, 4, 5), method)(memory_format=torch.channels_last)
    assert out.stride() == expected.stride() and out.dtype.name == str(expected.dtype).removeprefix("torch.")


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64"])
def test_finfo_prints_and_compares_as_torch(torch, name):
    ours, theirs = tensor.finfo(getattr(tensor, name)), torch.finfo(getattr(torch, name))
    assert str(ours) == str(theirs) and repr(ours) == repr(theirs)
    assert ours == tensor.finfo(getattr(tensor, name)) and ours != tensor.finfo(tensor.float8_e5m2)


@pytest.mark.parametrize("name", ["int32", "int64", "uint8"])
def test_iinfo_prints_and_compares_as_torch(torch, name):
    ours, theirs = tensor.iinfo(getattr(tensor, name)), torch.iinfo(getattr(torch, name))
    assert str(ours) == str(theirs)
    assert ours == tensor.iinfo(getattr(tensor, name)) and ours != tensor.iinfo(tensor.int8)


def test_finfo_of_none_raises_and_of_nothing_is_the_default(torch):
    for L in (tensor, torch):
        with pytest.raises(TypeError):
            L.finfo(None)
    assert tensor.finfo().dtype == "float32"
