"""tensor.save / tensor.load: round trips of nested containers and plain values, map_location,
atomic writes, file objects, and clear errors for corrupt, truncated, foreign and unsafe files."""

from __future__ import annotations

import io
import math
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tensor
from tensor import serialization
from tests.helpers import assert_close

ALL_DTYPES = [tensor.float16, tensor.float32, tensor.float64, tensor.int8, tensor.int16, tensor.int32,
              tensor.int64, tensor.uint8, tensor.bool]


def _assert_same_tree(got, expected):
    assert type(got) is type(expected), f"{type(got).__name__} != {type(expected).__name__}"
    if tensor.is_tensor(expected):
        assert got.dtype is expected.dtype and got.requires_grad == expected.requires_grad
        assert_close(got, expected)
    elif isinstance(expected, dict):
        assert list(got) == list(expected)
        for key in expected:
            _assert_same_tree(got[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same_tree(g, e)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected


def _round_trip(obj, path, **load_kwargs):
    tensor.save(obj, path)
    return tensor.load(path, **load_kwargs)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_round_trip_every_dtype(tmp_path, device, dtype):
    t = tensor.tensor([[0, 1, 1], [1, 0, 1]], dtype=dtype, device=device)
    back = _round_trip({"t": t, "empty": tensor.zeros(0, 2, dtype=dtype), "scalar": t[0, 1]},
                       tmp_path / "ckpt.pt")
    _assert_same_tree(back["t"], t)
    assert back["t"].device == t.device
    assert back["empty"].shape == (0, 2) and back["empty"].dtype is dtype
    assert back["scalar"].shape == ()


PLAIN_VALUES = {
    "int": 3,
    "negative": -17,
    "big_int": 2 ** 100 + 1,
    "neg_big_int": -(2 ** 70),
    "float": 0.1,
    "nan": float("nan"),
    "inf": float("inf"),
    "neg_inf": float("-inf"),
    "str": "héllo\n\"quoted\"",
    "bytes": b"\x00\xffbinary",
    "none": None,
    "true": True,
    "false": False,
    "dtype": tensor.float16,
    "device": tensor.device("cuda:1"),
    # what torch.load(weights_only=True) also accepts
    "complex": complex(1.5, float("-inf")),
    "set": {1, "a", (2, 3)},
    "bytearray": bytearray(b"\x00ab"),
    "size": tensor.Size([2, 3]),
    "shape": tensor.ones(2, 3).shape,
}


def test_round_trip_plain_values(tmp_path):
    back = _round_trip(PLAIN_VALUES, tmp_path / "plain.pt")
    _assert_same_tree(back, PLAIN_VALUES)
    assert type(back["true"]) is bool and type(back["int"]) is int
    assert back["dtype"] is tensor.float16


def test_round_trip_nested_containers(tmp_path):
    weights = tensor.randn(3, 2)
    obj = {
        "model": OrderedDict([("layer.weight", weights), ("layer.bias", tensor.zeros(2))]),
        "optim": {"state": {0: {"step": 10, "exp_avg": tensor.ones(3, 2, dtype=tensor.float64)}},
                  "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0]}]},
        "history": [1.5, (2, [tensor.arange(4)]), []],
        "empty": {},
        (1, 2): "tuple key",
        5: "int key",
    }
    back = _round_trip(obj, tmp_path / "nested.pt")
    _assert_same_tree(back, obj)
    assert isinstance(back["model"], OrderedDict)
    assert isinstance(back["optim"]["param_groups"][0]["betas"], tuple)


def test_round_trip_keeps_requires_grad_and_non_contiguous_values(tmp_path):
    leaf = tensor.randn(2, 3, requires_grad=True)
    transposed = tensor.arange(6.0).reshape(2, 3).t()
    back = _round_trip([leaf, transposed], tmp_path / "x.pt")
    assert back[0].requires_grad and back[0].is_leaf
    assert_close(back[1], transposed)


def test_parameters_round_trip_as_parameters(tmp_path, torch):
    import nn

    real, cplx = nn.Parameter(tensor.ones(2)), nn.Parameter(tensor.ones(2, dtype=tensor.complex64))
    frozen = nn.Parameter(tensor.ones(1), requires_grad=False)
    back = _round_trip({"p": real, "again": real, "c": cplx, "f": frozen, "t": tensor.ones(1)}, tmp_path / "p.pt")
    theirs = torch.nn.Parameter(torch.ones(2, dtype=torch.complex64))
    assert back["p"] is back["again"]
    for key, requires_grad in (("p", True), ("c", theirs.requires_grad), ("f", False)):
        assert type(back[key]) is nn.Parameter and back[key].requires_grad is requires_grad, key
    assert back["c"].dtype is tensor.complex64 and back["c"].tolist() == theirs.tolist()
    assert type(back["t"]) is tensor.Tensor


def test_shared_tensor_is_loaded_once(tmp_path):
    t = tensor.ones(2)
    a, b = _round_trip([t, t], tmp_path / "shared.pt")
    assert a is b


def test_numpy_arrays_and_scalars(tmp_path):
    back = _round_trip({"a": np.arange(3, dtype=np.int16), "s": np.float32(2.5)}, tmp_path / "np.pt")
    assert isinstance(back["a"], np.ndarray) and back["a"].dtype == np.int16
    assert back["s"] == 2.5


# ------------------------------------------------------------ map_location
@pytest.mark.parametrize("location", ["cpu", tensor.device("cpu"), {"cpu": "cpu"}])
def test_map_location_forms(tmp_path, location):
    path = tmp_path / "m.pt"
    tensor.save({"w": tensor.ones(2)}, path)
    back = tensor.load(path, map_location=location)
    assert back["w"].device is tensor.device("cpu")


def test_map_location_callable_gets_tensor_and_saved_location(tmp_path):
    path = tmp_path / "m.pt"
    tensor.save({"w": tensor.ones(2), "b": tensor.zeros(1)}, path)
    calls = []

    def relocate(t, saved_location):
        calls.append(saved_location)
        return t * 2

    back = tensor.load(path, map_location=relocate)
    assert calls == ["cpu", "cpu"]
    assert back["w"].tolist() == [2.0, 2.0]


def test_map_location_bad_string_raises(tmp_path):
    path = tmp_path / "m.pt"
    tensor.save(tensor.ones(1), path)
    with pytest.raises(RuntimeError, match="'tpu'"):
        tensor.load(path, map_location="tpu")


# ------------------------------------------------------------ atomic writes and file objects
def test_save_overwrites_atomically_and_crash_leaves_original_intact(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    tensor.save({"version": 1}, path)

    def crash(src, dst):
        raise OSError("simulated crash during rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        tensor.save({"version": 2, "w": tensor.ones(1000)}, path)
    monkeypatch.undo()
    assert tensor.load(path) == {"version": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"], "no temporary file may remain"
    tensor.save({"version": 3}, path)
    assert tensor.load(path) == {"version": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]


@pytest.mark.parametrize("format", ["distrib", "torch", "safetensors"])
def test_save_into_a_missing_directory_or_onto_a_directory_is_a_runtime_error(tmp_path, torch, format):
    for target in (tmp_path / "absent" / "w.pt", tmp_path):
        with pytest.raises(RuntimeError):
            torch.save({"w": torch.ones(1)}, target)
        with pytest.raises(RuntimeError, match="Parent directory .*absent does not exist|is a directory"):
            tensor.save({"w": tensor.ones(1)}, target, format=format)
    assert os.listdir(tmp_path) == []  # no directory made, no temporary file left


def test_save_accepts_str_paths(tmp_path):
    path = str(tmp_path / "s.pt")
    tensor.save([1, 2], path)
    assert tensor.load(path) == [1, 2]


def test_save_and_load_with_bytesio():
    buffer = io.BytesIO()
    tensor.save({"w": tensor.arange(3)}, buffer)
    buffer.seek(0)
    back = tensor.load(buffer)
    assert back["w"].tolist() == [0, 1, 2]


def test_save_unsupported_dtype_raises(tmp_path):
    with pytest.raises(TypeError, match="unsupported dtype dtype\\('<M8\\[s\\]'\\)"):
        tensor.save({"a": np.zeros(2, dtype="datetime64[s]")}, tmp_path / "c.pt")


def test_complex_arrays_round_trip(tmp_path):
    value = np.array([1 + 2j, -3j], dtype=np.complex64)
    tensor.save({"a": value, "t": tensor.tensor([0.5 - 1j])}, tmp_path / "c.pt")
    loaded = tensor.load(tmp_path / "c.pt")
    assert loaded["a"].dtype == np.complex64 and np.array_equal(loaded["a"], value)
    assert loaded["t"].dtype == tensor.complex64 and loaded["t"].tolist() == [0.5 - 1j]


# ------------------------------------------------------------ errors
def _saved_bytes(tmp_path) -> tuple:
    path = tmp_path / "good.pt"
    tensor.save({"w": tensor.arange(100.0), "meta": "x" * 50}, path)
    return path, path.read_bytes()


@pytest.mark.parametrize("where", ["length-field", "header", "payload", "tail"])
def test_corrupt_file_raises_naming_it(tmp_path, where):
    path, data = _saved_bytes(tmp_path)
    position = {"length-field": serialization._HEAD.size - 8, "header": serialization._HEAD.size + 5,
                "payload": len(data) - 100, "tail": len(data) - 10}[where]
    corrupt = bytearray(data)
    corrupt[position] ^= 0xFF
    path.write_bytes(bytes(corrupt))
    with pytest.raises(RuntimeError, match=f"{path.name}: checkpoint is (truncated or )?corrupt"):
        tensor.load(path)


@pytest.mark.parametrize("keep", [0.9, 0.5, 0.1])
def test_truncated_file_raises_naming_it(tmp_path, keep):
    path, data = _saved_bytes(tmp_path)
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(RuntimeError, match=f"{path.name}: checkpoint is (truncated|corrupt)"):
        tensor.load(path)


@pytest.mark.parametrize(("content", "message"), [
    (b"just some text, not a checkpoint\n" * 10, "not a distrib checkpoint \\(bad magic bytes\\)$"),
    (b"", "not a distrib checkpoint"),
    (b"PK\x03\x04" + b"\x00" * 40, "not a PyTorch checkpoint \\(a corrupt or truncated zip file"),
    (pickle.dumps({"a": 1}), "invalid magic number: a pickle, but not a PyTorch checkpoint"),
], ids=["text", "empty", "zip", "pickle"])
def test_foreign_file_raises_naming_it(tmp_path, content, message):
    path = tmp_path / "other.bin"
    path.write_bytes(content)
    with pytest.raises(RuntimeError, match=f"other.bin: {message}"):
        tensor.load(path)


def test_random_bytes_file_raises(tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 500, dtype=np.uint8).tobytes())
    with pytest.raises(RuntimeError, match="random.bin: not a distrib checkpoint"):
        tensor.load(path)


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        tensor.load(tmp_path / "absent.pt")


def test_torch_checkpoint_is_recognised_and_read(tmp_path, torch):
    path = tmp_path / "torch.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert tensor.load(path)["w"].tolist() == [1.0, 1.0]


# ------------------------------------------------------------ unsafe objects
class _Marker:
    """Pickles to a call that creates a marker file when unpickled."""

    def __init__(self, marker_path: str) -> None:
        self.marker_path = marker_path

    def __reduce__(self):
        return (_create_marker, (self.marker_path,))


def _create_marker(marker_path: str):
    with open(marker_path, "w") as handle:
        handle.write("code ran")
    return {"unpickled": True}


def test_pickled_object_refused_by_default_without_running_code(tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "unsafe.pt"
    tensor.save({"weights": tensor.ones(2), "obj": _Marker(str(marker))}, path)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed: .*unsafe.pt.*_Marker"):
        tensor.load(path)
    assert not marker.exists(), "the object's code must not run when weights_only=True"
    back = tensor.load(path, weights_only=False)
    assert marker.exists()
    assert back["obj"] == {"unpickled": True}
    assert back["weights"].tolist() == [1.0, 1.0]


def test_frozenset_and_custom_containers_need_weights_only_false(tmp_path):
    path = tmp_path / "frozenset.pt"
    tensor.save({"s": frozenset({1, 2})}, path)  # torch.load(weights_only=True) refuses frozenset too
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        tensor.load(path)
    assert tensor.load(path, weights_only=False) == {"s": frozenset({1, 2})}


def _in_torch_zip(pickled: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("archive/data.pkl", pickled)
        zf.writestr("archive/byteorder", "little")
        zf.writestr("archive/version", "3\n")
    return buffer.getvalue()


def _in_legacy_torch_file(pickled: bytes) -> bytes:
    """As torch.save(..., _use_new_zipfile_serialization=False) lays a file out, with no storages."""
    sys_info = {"protocol_version": 1001, "little_endian": True, "type_sizes": {"short": 2, "int": 4, "long": 4}}
    header = (0x1950A86A20F9469CFC6C, 1001, sys_info)
    return b"".join(pickle.dumps(v, protocol=2) for v in header) + pickled + pickle.dumps([], protocol=2)


def _in_our_format(marker) -> bytes:
    buffer = io.BytesIO()
    tensor.save({"w": tensor.ones(1), "obj": _Marker(str(marker))}, buffer)
    return buffer.getvalue()


CONTAINERS = {
    "torch-zip": lambda marker: _in_torch_zip(pickle.dumps({"obj": _Marker(str(marker))}, protocol=2)),
    "torch-legacy": lambda marker: _in_legacy_torch_file(pickle.dumps({"obj": _Marker(str(marker))}, protocol=2)),
    "plain-pickle": lambda marker: pickle.dumps({"obj": _Marker(str(marker))}),
    "distrib": _in_our_format,
}


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("map_location", [None, "cpu"])
def test_malicious_pickle_is_refused_in_every_format_without_running(tmp_path, container, map_location):
    marker = tmp_path / "marker"
    path = tmp_path / "evil.pt"
    path.write_bytes(CONTAINERS[container](marker))
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed.*_Marker|_create_marker"):
        tensor.load(path, map_location=map_location)
    assert not marker.exists(), "weights_only=True must never run code from the file"
    if container != "plain-pickle":  # a checkpoint's own layout: the caller's explicit trust runs it
        assert tensor.load(path, weights_only=False)["obj"] == {"unpickled": True}
        assert marker.exists()


# ------------------------------------------------------------ checkpoints from a GPU machine
@pytest.fixture
def cuda_checkpoint(tmp_path, monkeypatch):
    """A checkpoint whose tensors are recorded as saved on cuda:0 (written on the CPU)."""
    original = serialization._Encoder._add_tensor

    def as_if_on_cuda(self, t):
        index = original(self, t)
        self.tensors[index]["device"] = "cuda:0"
        return index

    monkeypatch.setattr(serialization._Encoder, "_add_tensor", as_if_on_cuda)
    path = tmp_path / "gpu.pt"
    tensor.save({"w": tensor.ones(2)}, path)
    monkeypatch.undo()
    return path


@pytest.mark.skipif(tensor.cuda.is_available(), reason="checks loading on a CPU-only machine")
def test_cuda_checkpoint_on_cpu_only_machine_says_to_use_map_location(cuda_checkpoint):
    with pytest.raises(RuntimeError, match="gpu.pt: attempting to deserialize a tensor saved on cuda:0 .*"
                                           "map_location='cpu'"):
        tensor.load(cuda_checkpoint)


@pytest.mark.parametrize("location", ["cpu", {"cuda:0": "cpu"}, lambda t, saved: t])
def test_cuda_checkpoint_loads_with_map_location(cuda_checkpoint, location):
    back = tensor.load(cuda_checkpoint, map_location=location)
    assert back["w"].device is tensor.device("cpu")
    assert back["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("format", [None, "torch"])
def test_state_dict_metadata_survives_a_round_trip(format):
    import nn

    buffer = io.BytesIO()
    tensor.save(nn.BatchNorm1d(2).state_dict(), buffer, format=format)
    buffer.seek(0)
    loaded = tensor.load(buffer)
    assert loaded._metadata == OrderedDict([("", {"version": 2})])


def test_torch_reads_the_metadata_we_write(torch):
    import nn

    buffer = io.BytesIO()
    tensor.save(nn.BatchNorm1d(2).state_dict(), buffer, format="torch")
    buffer.seek(0)
    assert torch.load(buffer, weights_only=True)._metadata == OrderedDict([("", {"version": 2})])


def test_numpy_scalars_round_trip_in_the_default_format(tmp_path):
    """numpy's float64 is a Python float whose repr is ``np.float64(1.5)``: it was written so."""
    path = tmp_path / "scalars.pt"
    tensor.save({"f64": np.float64(1.5), "f32": np.float32(2.0), "i64": np.int64(3), "c": np.complex128(1 + 2j)}, path)
    assert tensor.load(path) == {"f64": 1.5, "f32": 2.0, "i64": 3, "c": 1 + 2j}
