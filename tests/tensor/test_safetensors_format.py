"""``.safetensors`` files through ``tensor.save``/``tensor.load`` (the safetensors package's numpy
API), checked against safetensors' own torch API, and ``load_state_dict(assign=True)`` with them."""

from __future__ import annotations

import numpy as np
import pytest

import nn
import tensor
from tensor import serialization

pytest.importorskip("safetensors", reason="safetensors is not installed (pip install 'distrib[formats]')")

SHARED = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _values(dtype_name: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 4)) * 50).astype(np.dtype(dtype_name if dtype_name != "bool" else "?"))


def test_round_trip_with_metadata_by_suffix(tmp_path):
    base = tensor.from_numpy(_values("float32"))
    saved = {name: tensor.from_numpy(_values(name)) for name in SHARED}
    saved.update({"t": base.T, "strided": base[:, ::2], "scalar": tensor.tensor(2.5)})
    path = tmp_path / "w.safetensors"
    tensor.save(saved, path, metadata={"format": "pt", "step": "10"})
    assert serialization.read_safetensors_metadata(path) == {"format": "pt", "step": "10"}
    loaded = tensor.load(path)
    assert sorted(loaded) == sorted(saved)
    for key, value in saved.items():
        assert loaded[key].dtype == value.dtype and loaded[key].shape == value.shape
        assert loaded[key].numpy().tobytes() == np.ascontiguousarray(value.numpy()).tobytes(), key
    loaded["t"].add_(1.0)  # loaded tensors are ordinary, writable tensors


def test_format_is_recognised_from_the_bytes(tmp_path):
    tensor.save({"w": tensor.ones(2)}, tmp_path / "weights.bin", format="safetensors")
    assert tensor.load(tmp_path / "weights.bin")["w"].tolist() == [1.0, 1.0]


def test_only_flat_tensor_dicts(tmp_path):
    with pytest.raises(TypeError, match="flat \\{str: tensor\\} dict; entry 'a' is dict"):
        tensor.save({"a": {"b": tensor.ones(1)}}, tmp_path / "w.safetensors")
    with pytest.raises(ValueError, match="metadata is stored only by format='safetensors'"):
        tensor.save({"a": tensor.ones(1)}, tmp_path / "w.pt", metadata={"a": "b"})
    assert not list(tmp_path.iterdir())


def test_both_ways_with_safetensors_torch(tmp_path, torch):
    from safetensors.torch import load_file, save_file

    theirs = {name: torch.from_numpy(_values(name)) for name in SHARED}
    save_file(theirs, tmp_path / "t.safetensors")
    ours = tensor.load(tmp_path / "t.safetensors")
    tensor.save(ours, tmp_path / "o.safetensors")
    back = load_file(tmp_path / "o.safetensors")
    for name in SHARED:
        assert ours[name].numpy().tobytes() == theirs[name].numpy().tobytes()
        assert back[name].dtype == theirs[name].dtype and torch.equal(back[name], theirs[name])


def test_load_state_dict_assign_takes_the_loaded_tensors(tmp_path):
    source = nn.Linear(3, 2)
    tensor.save(source.state_dict(), tmp_path / "w.safetensors")
    loaded = tensor.load(tmp_path / "w.safetensors")
    model = nn.Linear(3, 2)
    model.load_state_dict(loaded, assign=True)
    assert isinstance(model.weight, nn.Parameter) and model.weight.requires_grad
    loaded["weight"].zero_()
    assert model.weight.abs().sum().item() == 0.0  # the parameter is the loaded tensor's memory
    copied = nn.Linear(3, 2)
    copied.load_state_dict(tensor.load(tmp_path / "w.safetensors"))
    assert copied.weight.tolist() == source.weight.tolist()
