"""default_collate and default_convert against torch.utils.data, leaf by leaf."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import tensor
from distrib.data import default_collate, default_convert
from tests.helpers import assert_close

Point = collections.namedtuple("Point", ["x", "y"])


def _to_ours(value):
    """A torch-side structure with its tensors turned into ours (for comparison)."""
    import torch

    if isinstance(value, torch.Tensor):
        return tensor.from_numpy(value.numpy().copy())
    if isinstance(value, dict):
        return {k: _to_ours(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_to_ours(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_ours(v) for v in value)
    return value


def _assert_same(ours, expected):
    assert type(ours) is type(expected), (type(ours), type(expected))
    if isinstance(expected, tensor.Tensor):
        assert_close(ours, expected)
    elif isinstance(expected, dict):
        assert list(ours) == list(expected)
        for key in expected:
            _assert_same(ours[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _assert_same(a, b)
    else:
        assert ours == expected


def _samples(lib_tensor):
    """(name, batch) cases; ``lib_tensor`` makes a tensor of the library under test."""
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((3, 2, 4)).astype(np.float32)
    return [
        ("ints", [0, 1, 2]),
        ("bools", [True, False]),
        ("floats", [0.5, 1.5]),
        ("ints and floats", [1, 2.5]),
        ("strings", ["a", "b"]),
        ("bytes", [b"a", b"b"]),
        ("numpy scalars float32", [np.float32(1.5), np.float32(2.0)]),
        ("numpy scalars int32", [np.int32(1), np.int32(2)]),
        ("numpy arrays", [rows[0], rows[1]]),
        ("numpy 0-d arrays", [np.array(1.0), np.array(2.0)]),
        ("numpy int8 arrays", [np.arange(3, dtype=np.int8), np.arange(3, dtype=np.int8)]),
        ("tensors", [lib_tensor(rows[0]), lib_tensor(rows[1]), lib_tensor(rows[2])]),
        ("transposed tensors", [lib_tensor(rows[0]).t(), lib_tensor(rows[1]).t()]),
        ("0-d tensors", [lib_tensor(np.float32(1.0)), lib_tensor(np.float32(2.0))]),
        ("empty tensors", [lib_tensor(np.zeros((0, 3), np.float32)), lib_tensor(np.zeros((0, 3), np.float32))]),
        ("tuples", [(lib_tensor(rows[0]), 1), (lib_tensor(rows[1]), 2)]),
        ("lists", [[1, 2.0], [3, 4.0]]),
        ("dicts", [{"x": lib_tensor(rows[0]), "label": 3, "name": "a"}, {"x": lib_tensor(rows[1]), "label": 4,
                                                                          "name": "b"}]),
        ("namedtuples", [Point(1, 2.0), Point(3, 4.0)]),
        ("nested", [{"p": Point(np.float64(1), [1, 2])}, {"p": Point(np.float64(2), [3, 4])}]),
    ]


@pytest.mark.parametrize("case", [name for name, _ in _samples(lambda a: tensor.from_numpy(np.array(a)))])
def test_default_collate_matches_torch(torch, case):
    ours_batch = dict(_samples(lambda a: tensor.from_numpy(np.array(a))))[case]
    torch_batch = dict(_samples(lambda a: torch.from_numpy(np.array(a))))[case]
    _assert_same(default_collate(ours_batch), _to_ours(torch.utils.data.default_collate(torch_batch)))


@pytest.mark.parametrize("case", ["ints", "numpy arrays", "numpy scalars float32", "strings", "tuples", "dicts",
                                  "namedtuples", "nested", "numpy 0-d arrays"])
def test_default_convert_matches_torch(torch, case):
    ours_batch = dict(_samples(lambda a: tensor.from_numpy(np.array(a))))[case]
    torch_batch = dict(_samples(lambda a: torch.from_numpy(np.array(a))))[case]
    for ours_sample, torch_sample in zip(ours_batch, torch_batch):
        _assert_same(default_convert(ours_sample), _to_ours(torch.utils.data.default_convert(torch_sample)))


def test_default_collate_of_cuda_tensors_stays_on_the_device(device):
    batch = [tensor.ones(2, device=device), tensor.zeros(2, device=device)]
    out = default_collate(batch)
    assert out.device.type == device
    assert_close(out, tensor.tensor([[1.0, 1.0], [0.0, 0.0]], device=device))


def test_default_collate_keeps_the_sample_dtypes_and_does_not_alias():
    rows = [tensor.arange(3, dtype=tensor.int32), tensor.arange(3, dtype=tensor.int32)]
    out = default_collate(rows)
    assert out.dtype == tensor.int32
    out[0, 0] = 7
    assert rows[0][0].item() == 0


@pytest.mark.parametrize(("batch", "error", "message"), [
    ([object(), object()], TypeError, "default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                      "or lists; found <class 'object'>"),
    ([np.array(["a"]), np.array(["b"])], TypeError, "default_collate: batch must contain tensors, numpy arrays, "
                                                    "numbers, dicts or lists; found <U1"),
    ([[1, 2], [3]], RuntimeError, "each element in list of batch should be of equal size"),
    ([tensor.zeros(3), tensor.zeros(4)], RuntimeError, r"stack expects each tensor to be equal size, but got \[3\] "
                                                       r"at entry 0 and \[4\] at entry 1"),
    ([np.zeros(2), np.zeros(3)], RuntimeError, "stack expects each tensor to be equal size"),
])
def test_default_collate_errors(batch, error, message):
    with pytest.raises(error, match=message):
        default_collate(batch)


def test_default_convert_leaves_strings_and_object_arrays():
    objects = np.array([object()], dtype=object)
    assert default_convert(objects) is objects
    assert default_convert("text") == "text"
    assert default_convert(np.str_("s")) == "s"


# ---------------------------------------------------------------- dtypes, autograd and bad leaves, as torch
_PAIRS = [("int32", "float32"), ("int64", "float16"), ("bfloat16", "float16"), ("bfloat16", "int64"),
          ("uint8", "int8"), ("bool", "int8"), ("complex64", "float64"), ("int64", "complex64")]


@pytest.mark.parametrize("shape", [(2,), ()])
@pytest.mark.parametrize(("a", "b"), _PAIRS)
def test_default_collate_promotes_tensors_as_torch(torch, a, b, shape):
    ours = default_collate([tensor.ones(shape, dtype=getattr(tensor, a)), tensor.ones(shape, dtype=getattr(tensor, b))])
    theirs = torch.utils.data.default_collate([torch.ones(shape, dtype=getattr(torch, a)),
                                               torch.ones(shape, dtype=getattr(torch, b))])
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize(("a", "b"), [pair for pair in _PAIRS if "bfloat16" not in pair])
def test_default_collate_promotes_numpy_arrays_as_torch(torch, a, b):
    batch = [np.ones(2, dtype=a), np.zeros(2, dtype=b)]
    ours, theirs = default_collate(batch), torch.utils.data.default_collate(batch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")


@pytest.mark.parametrize("batch", [
    [np.float32(1), 2.0], [np.int32(1), 2.5], [np.float16(1), 2], [1, 1 + 2j], [1, np.float16(2)],
    [1, np.float64(2.5)], [np.complex64(1), np.float64(2)], [np.int8(1), True], [1, 2.5], [1.0, 2**70],
    [1, np.array(2.0)], [True, 1],
], ids=repr)
@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")  # torch's, for a 0-d array
def test_default_collate_infers_number_dtypes_as_torch(torch, batch):
    ours, theirs = default_collate(batch), torch.utils.data.default_collate(batch)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("batch", [
    [1.0, None], [1.0, "2.5"], [1.0, [1]], [1.0, 1j], [1, None], [1, "a"], [1, [1]], [2**63, 1], [-2**63 - 1, 1],
    [2**70, 1], [np.int8(1), 2**63], [np.float32(1), "a"], [np.float32(1), None], [np.float32(1), np.ones(2)],
    [np.ones(2), np.ones(2, dtype=object)], [np.ones(2), np.array(["a", "b"])],
    [np.array(["2020-01-01"], "datetime64[D]")] * 2, [np.array([1], "timedelta64[s]")] * 2,
    [np.arange(3, dtype=">f4")] * 2, [np.ones(3, np.float32), np.arange(3, dtype=">f4")],
], ids=repr)
def test_default_collate_refuses_non_numbers_as_torch(torch, batch):
    with pytest.raises(Exception) as theirs:
        torch.utils.data.default_collate(batch)
    with pytest.raises(theirs.type):
        default_collate(batch)


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64])
def test_default_collate_refuses_unsigned_dtypes_tensors_lack(dtype):
    with pytest.raises(TypeError, match="unsupported dtype"):
        default_collate([np.ones(2, dtype), np.ones(2, dtype)])
    with pytest.raises(TypeError, match="unsupported dtype"):
        default_collate([dtype(1), dtype(2)])


def test_default_collate_keeps_autograd_as_torch(torch):
    leaf = tensor.ones(2, requires_grad=True)
    batch = default_collate([{"x": leaf}, {"x": tensor.zeros(2)}])["x"]
    theirs = torch.utils.data.default_collate([torch.ones(2, requires_grad=True), torch.zeros(2)])
    assert batch.requires_grad is theirs.requires_grad is True
    assert batch.grad_fn is not None
    (batch * tensor.tensor([[1.0], [2.0]])).sum().backward()
    assert_close(leaf.grad, tensor.ones(2))
    with tensor.no_grad():
        assert not default_collate([leaf, leaf]).requires_grad
