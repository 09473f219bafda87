"""tensor.save / tensor.load: round trips of nested containers and plain values, map_location,
atomic writes, file objects, and clear errors for corrupt, truncated, foreign and unsafe files."""

from __future__ import annotations

import base64
import io
import json
import math
import os
import pickle
import zipfile
import zlib
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


def test_a_file_cut_inside_its_magic_bytes_is_truncated(tmp_path):
    # A writer killed after its first small write leaves a prefix of the magic (the file is
    # written in pieces): that is a truncated checkpoint, not a foreign file.
    path, data = _saved_bytes(tmp_path)
    path.write_bytes(data[:4])
    with pytest.raises(RuntimeError, match=f"{path.name}: checkpoint is truncated: 4 bytes"):
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


# ------------------------------------------------------------ shared memory (Note [Views in checkpoints])
def _views(lib):
    """A tensor and the views a state dict may hold of it, built alike in ``lib`` (torch or tensor)."""
    base = lib.arange(12.0).reshape(3, 4)
    return {"base": base, "t": base.t(), "row": base[1], "col": base[:, 2], "flat": base.view(-1)[5:9],
            "expanded": base[:, :1].expand(3, 5)}


def _torch_round_trip(torch, obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_views_share_memory_after_loading_as_in_torch(tmp_path, torch):
    ours, theirs = _round_trip(_views(tensor), tmp_path / "views.pt"), _torch_round_trip(torch, _views(torch))
    for key, t in theirs.items():
        assert ours[key].shape == tuple(t.shape), key
        assert ours[key].stride() == t.stride() and ours[key].storage_offset() == t.storage_offset(), key
        assert ours[key].tolist() == t.tolist(), key
        shared = ours[key].untyped_storage().data_ptr() == ours["base"].untyped_storage().data_ptr()
        assert shared == (t.untyped_storage().data_ptr() == theirs["base"].untyped_storage().data_ptr()), key
    ours["t"][3, 1] = -1.0
    theirs["t"][3, 1] = -1.0
    assert ours["base"][1, 3].item() == theirs["base"][1, 3].item() == -1.0
    assert ours["row"][3].item() == ours["flat"][2].item() == -1.0


def test_views_of_one_storage_as_another_dtype_share_memory(tmp_path, torch):
    base = torch.ones(2)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        torch.save([base, base.view(torch.int32)], io.BytesIO())  # torch refuses; we can keep them
    base = tensor.ones(2)
    floats, bits = _round_trip([base, base.view(tensor.int32)], tmp_path / "bits.pt")
    floats[1] = 2.0
    assert bits[1].item() == tensor.tensor(2.0).view(tensor.int32).item()


def test_expanded_tensor_comes_back_read_only_as_in_torch(tmp_path, torch):
    ours, theirs = _round_trip(_views(tensor), tmp_path / "e.pt"), _torch_round_trip(torch, _views(torch))
    for loaded in (theirs["expanded"], ours["expanded"]):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            loaded.add_(1)


def test_tied_parameters_over_one_array_share_memory_again(tmp_path, torch):
    import nn

    weight = tensor.randn(3, 2)
    loaded = _round_trip({"a": nn.Parameter(weight), "b": nn.Parameter(weight)}, tmp_path / "tied.pt")
    theirs = _torch_round_trip(torch, {"a": torch.nn.Parameter(torch.ones(1)), "b": torch.nn.Parameter(torch.ones(1))})
    assert type(loaded["a"]) is type(loaded["b"]) is nn.Parameter and loaded["a"] is not loaded["b"]
    assert loaded["a"].requires_grad is loaded["b"].requires_grad is theirs["a"].requires_grad
    with tensor.no_grad():
        loaded["a"][0, 0] = 42.0
    assert loaded["b"][0, 0].item() == 42.0


def test_each_storage_is_written_once_and_whole_as_in_torch(tmp_path, torch):
    base = tensor.randn(1000)
    path = tmp_path / "once.pt"
    tensor.save([base] + [base[i:i + 10] for i in range(10)], path)
    assert base.nbytes < os.path.getsize(path) < 2 * base.nbytes
    tensor.save({"slice": base[10:12]}, path)
    ours = tensor.load(path)["slice"]
    theirs = _torch_round_trip(torch, {"slice": torch.arange(1000.0)[10:12]})["slice"]
    assert ours.untyped_storage().nbytes() == theirs.untyped_storage().nbytes() == 4000
    assert ours.storage_offset() == theirs.storage_offset() == 10
    assert ours.tolist() == base[10:12].tolist()


def test_numpy_views_share_memory_and_unplaceable_arrays_are_copied(tmp_path):
    fortran = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    misaligned = np.frombuffer(bytes(2) + np.arange(3, dtype=np.float32).tobytes(), np.uint8)[2:].view(np.float32)
    obj = {"f": fortran, "col": tensor.from_numpy(fortran)[:, 1], "reversed": np.arange(4)[::-1],
           "misaligned": misaligned}
    back = _round_trip(obj, tmp_path / "np.pt")
    assert back["f"].strides == fortran.strides and np.array_equal(back["f"], fortran)
    back["f"][0, 1] = -1.0
    assert back["col"].tolist() == [-1.0, 4.0]
    assert back["reversed"].tolist() == [3, 2, 1, 0] and back["misaligned"].tolist() == [0.0, 1.0, 2.0]


def test_mmap_load_of_our_format_reads_it(tmp_path):
    path = tmp_path / "m.pt"
    tensor.save({"w": tensor.arange(3.0)}, path)
    assert tensor.load(path, mmap=True)["w"].tolist() == [0.0, 1.0, 2.0]


# A file of format version 1 (each tensor's elements on their own), as the version-1 encoder wrote
# {"w": nn.Parameter(arange(6.0).reshape(2, 3)), "w_t": w.detach().t(), "steps": tensor([7, -8]),
#  "half": tensor([1.5], dtype=bfloat16), "a": np.arange(3, dtype=int16), "again": w}.
VERSION_1_FILE = base64.b64decode(
    "RElTVFJJQlQBAAAA8wIAAAAAAAB7InRyZWUiOiB7InQiOiAiZGljdCIsICJrIjogWyJ3IiwgIndfdCIsICJzdGVwcyIsICJoYWxm"
    "IiwgImEiLCAiYWdhaW4iXSwgInYiOiBbeyJ0IjogInRlbnNvciIsICJpIjogMH0sIHsidCI6ICJ0ZW5zb3IiLCAiaSI6IDF9LCB7"
    "InQiOiAidGVuc29yIiwgImkiOiAyfSwgeyJ0IjogInRlbnNvciIsICJpIjogM30sIHsidCI6ICJuZGFycmF5IiwgImkiOiA0fSwg"
    "eyJ0IjogInRlbnNvciIsICJpIjogMH1dfSwgInRlbnNvcnMiOiBbeyJkdHlwZSI6ICI8ZjQiLCAic2hhcGUiOiBbMiwgM10sICJv"
    "ZmZzZXQiOiAwLCAibmJ5dGVzIjogMjQsICJkZXZpY2UiOiAiY3B1IiwgInJlcXVpcmVzX2dyYWQiOiB0cnVlLCAicGFyYW1ldGVy"
    "IjogdHJ1ZX0sIHsiZHR5cGUiOiAiPGY0IiwgInNoYXBlIjogWzMsIDJdLCAib2Zmc2V0IjogMjQsICJuYnl0ZXMiOiAyNCwgImRl"
    "dmljZSI6ICJjcHUiLCAicmVxdWlyZXNfZ3JhZCI6IGZhbHNlfSwgeyJkdHlwZSI6ICI8aTgiLCAic2hhcGUiOiBbMl0sICJvZmZz"
    "ZXQiOiA0OCwgIm5ieXRlcyI6IDE2LCAiZGV2aWNlIjogImNwdSIsICJyZXF1aXJlc19ncmFkIjogZmFsc2V9LCB7ImR0eXBlIjog"
    "ImJmbG9hdDE2IiwgInNoYXBlIjogWzFdLCAib2Zmc2V0IjogNjQsICJuYnl0ZXMiOiAyLCAiZGV2aWNlIjogImNwdSIsICJyZXF1"
    "aXJlc19ncmFkIjogZmFsc2V9LCB7ImR0eXBlIjogIjxpMiIsICJzaGFwZSI6IFszXSwgIm9mZnNldCI6IDY2LCAibmJ5dGVzIjog"
    "Nn1dLCAicGF5bG9hZF9ieXRlcyI6IDcyfQAAAAAAAIA/AAAAQAAAQEAAAIBAAACgQAAAAAAAAEBAAACAPwAAgEAAAABAAACgQAcA"
    "AAAAAAAA+P/////////APwAAAQACAM+oWdBUQklSVFNJRA=="
)


def test_version_1_files_load_as_before(tmp_path):
    import nn

    path = tmp_path / "v1.pt"
    path.write_bytes(VERSION_1_FILE)
    back = tensor.load(path)
    assert list(back) == ["w", "w_t", "steps", "half", "a", "again"]
    assert type(back["w"]) is nn.Parameter and back["w"].requires_grad and back["again"] is back["w"]
    assert back["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert back["w_t"].tolist() == back["w"].detach().t().tolist() and not back["w_t"].requires_grad
    assert back["steps"].dtype is tensor.int64 and back["steps"].tolist() == [7, -8]
    assert back["half"].dtype is tensor.bfloat16 and back["half"].tolist() == [1.5]
    assert back["a"].dtype == np.int16 and back["a"].tolist() == [0, 1, 2]
    back["w_t"][0, 1] = -1.0  # version 1 did not share memory
    assert back["w"][1, 0].item() == 3.0


def test_save_writes_version_2():
    buffer = io.BytesIO()
    tensor.save({"w": tensor.ones(1)}, buffer)
    assert serialization._HEAD.unpack_from(buffer.getvalue())[1] == serialization.FORMAT_VERSION == 2


def _with_header(data: bytes, edit) -> bytes:
    """``data`` (a saved file) with its JSON header changed by ``edit(header)``, checksummed anew."""
    head, tail = serialization._HEAD, serialization._TAIL
    _, version, length = head.unpack_from(data)
    header = json.loads(data[head.size:head.size + length])
    edit(header)
    new_header = json.dumps(header).encode()
    body = new_header + data[head.size + length:-tail.size]
    return (head.pack(serialization.MAGIC, version, len(new_header)) + body
            + tail.pack(zlib.crc32(body), serialization.END_MAGIC))


HOSTILE_HEADERS = {
    "offset past the end": ({"storage_offset": 1}, "out of bounds for storage of size 16"),
    "stride past the end": ({"stride": [2]}, "out of bounds for storage of size 16"),
    "huge shape": ({"shape": [2 ** 70]}, "out of bounds"),
    "negative stride": ({"stride": [-1]}, "Negative strides"),
    "rank mismatch": ({"shape": [2, 2]}, "mismatch in length of strides and shape"),
    "empty, offset past the end": ({"shape": [0], "storage_offset": 2 ** 70}, "past the end of a storage"),
    "wider dtype": ({"dtype": "<f8"}, "out of bounds for storage of size 16"),
    "float size": ({"shape": [1.5]}, "shape \\[1.5\\] is not a list of integers"),
    "no such storage": ({"storage": 1}, "no storage 1"),
    "negative storage": ({"storage": -1}, "no storage -1"),
}


@pytest.mark.parametrize("change", HOSTILE_HEADERS, ids=list(HOSTILE_HEADERS))
def test_hostile_tensor_geometry_raises_before_making_a_view(tmp_path, change):
    fields, message = HOSTILE_HEADERS[change]
    buffer = io.BytesIO()
    tensor.save({"w": tensor.ones(4)}, buffer)
    path = tmp_path / "hostile.pt"
    path.write_bytes(_with_header(buffer.getvalue(), lambda header: header["tensors"][0].update(fields)))
    with pytest.raises(RuntimeError, match=f"hostile.pt: checkpoint is corrupt \\(.*{message}"):
        tensor.load(path)


@pytest.mark.parametrize("byte_range", [{"nbytes": 17}, {"offset": -4}, {"offset": 1}, {"nbytes": "16"}])
def test_storage_byte_range_outside_the_file_raises(tmp_path, byte_range):
    buffer = io.BytesIO()
    tensor.save({"w": tensor.ones(4)}, buffer)
    path = tmp_path / "hostile.pt"
    path.write_bytes(_with_header(buffer.getvalue(), lambda header: header["storages"][0].update(byte_range)))
    with pytest.raises(RuntimeError, match="hostile.pt: checkpoint is corrupt \\((storage 0|storage byte range)"):
        tensor.load(path)
