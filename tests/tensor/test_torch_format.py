"""PyTorch checkpoints (``tensor.save(..., format="torch")`` / ``tensor.load``) with torch as the oracle.

Round trips both ways: torch writes and we read, we write and ``torch.load(weights_only=True)``
reads. Values are compared bit for bit. The unsafe-pickle tests need no torch.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import zipfile

import numpy as np
import pytest

import tensor
from tensor import serialization

# every dtype torch and distrib share
SHARED = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"]


def _torch_values(torch, dtype_name: str):
    dtype = getattr(torch, dtype_name)
    if dtype_name == "bool":
        return torch.tensor([[True, False, True], [False, False, True]])
    if dtype.is_floating_point:
        return (torch.randn(2, 3, dtype=torch.float64) * 100).to(dtype)
    info = torch.iinfo(dtype)
    return torch.tensor([[info.min, info.max, 0], [1, -1 if info.min < 0 else 2, 7]], dtype=dtype)


def _same_bits(ours, theirs) -> None:
    mine, ref = ours.numpy(), theirs.numpy()
    assert mine.dtype == ref.dtype and mine.shape == ref.shape
    assert mine.tobytes() == np.ascontiguousarray(ref).tobytes()


@pytest.mark.parametrize("dtype_name", SHARED)
def test_torch_writes_we_read_bit_identical(tmp_path, torch, dtype_name):
    base = _torch_values(torch, dtype_name)
    saved = {"x": base, "row": base[1], "t": base.t(), "strided": base[:, ::2], "scalar": base[0, 0].clone()}
    torch.save(saved, tmp_path / "w.pt")
    loaded = tensor.load(tmp_path / "w.pt")
    assert list(loaded) == list(saved)
    for key, value in saved.items():
        _same_bits(loaded[key], value)
    assert loaded["scalar"].shape == ()


@pytest.mark.parametrize("dtype_name", SHARED)
def test_we_write_torch_reads_bit_identical(tmp_path, torch, dtype_name):
    base = tensor.from_numpy(_torch_values(torch, dtype_name).numpy().copy())
    saved = {"x": base, "row": base[1], "t": base.T, "strided": base[:, ::2], "scalar": base[0, 0].clone(),
             "empty": tensor.zeros(0, 3, dtype=base.dtype),
             "reversed": tensor.from_numpy(base.numpy()[::-1, ::-1])}  # negative strides: saved as a copy
    tensor.save(saved, tmp_path / "w.pt", format="torch")
    loaded = torch.load(tmp_path / "w.pt", weights_only=True)
    assert list(loaded) == list(saved)
    for key, value in saved.items():
        _same_bits(value, loaded[key])


def test_views_share_memory_after_loading(tmp_path, torch):
    base = torch.arange(12.0).reshape(3, 4)
    torch.save({"base": base, "row": base[1], "t": base.t()}, tmp_path / "w.pt")
    loaded = tensor.load(tmp_path / "w.pt")
    loaded["base"][1, 2] = -7.0
    assert loaded["row"][2].item() == -7.0 and loaded["t"][2, 1].item() == -7.0


def test_our_views_share_one_storage_in_torch(tmp_path, torch):
    base = tensor.arange(12.0).reshape(3, 4)
    tensor.save({"base": base, "row": base[1], "t": base.T}, tmp_path / "w.pt", format="torch")
    loaded = torch.load(tmp_path / "w.pt", weights_only=True)
    pointers = {loaded[k].untyped_storage().data_ptr() for k in ("base", "row", "t")}
    assert len(pointers) == 1
    assert len([n for n in zipfile.ZipFile(tmp_path / "w.pt").namelist() if "/data/" in n]) == 1
    loaded["base"][1, 2] = -7.0
    assert loaded["row"][2].item() == -7.0 and loaded["t"][2, 1].item() == -7.0


def test_requires_grad_and_parameters_survive(tmp_path, torch):
    torch.save({"p": torch.nn.Parameter(torch.ones(2)), "b": torch.zeros(2)}, tmp_path / "w.pt")
    loaded = tensor.load(tmp_path / "w.pt")
    assert loaded["p"].requires_grad and not loaded["b"].requires_grad
    tensor.save({"p": tensor.ones(2, requires_grad=True)}, tmp_path / "o.pt", format="torch")
    assert torch.load(tmp_path / "o.pt", weights_only=True)["p"].requires_grad


def test_torch_parameters_load_as_parameters(tmp_path, torch):
    import nn

    saved = {"p": torch.nn.Parameter(torch.ones(2)), "c": torch.nn.Parameter(torch.ones(2, dtype=torch.complex64)),
             "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False)}
    torch.save(saved, tmp_path / "w.pt")
    theirs, ours = torch.load(tmp_path / "w.pt", weights_only=True), tensor.load(tmp_path / "w.pt")
    for key in saved:
        assert type(theirs[key]) is torch.nn.Parameter and type(ours[key]) is nn.Parameter, key
        assert ours[key].requires_grad == theirs[key].requires_grad, key


def test_we_write_parameters_sets_bytes_complex_and_sizes(tmp_path, torch):
    import nn

    param, t = nn.Parameter(tensor.ones(2, dtype=tensor.complex64)), tensor.arange(3.0)
    plain = {"set": {1, (2, 3)}, "empty": b"", "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"), "complex": 1 - 2j,
             "size": tensor.Size([2, 3])}
    saved = {**plain, "p": param, "p_again": param, "frozen": nn.Parameter(tensor.ones(1), requires_grad=False),
             "t": t, "t_again": t}
    tensor.save(saved, tmp_path / "w.pt", format="torch")
    for loaded in (torch.load(tmp_path / "w.pt", weights_only=True), tensor.load(tmp_path / "w.pt")):
        assert {k: loaded[k] for k in plain} == plain
        assert {k: type(loaded[k]).__name__ for k in plain} == {k: type(v).__name__ for k, v in plain.items()}
        assert type(loaded["p"]).__name__ == "Parameter" and loaded["p"].requires_grad
        assert type(loaded["frozen"]).__name__ == "Parameter" and not loaded["frozen"].requires_grad
        assert loaded["p"] is loaded["p_again"] and loaded["t"] is loaded["t_again"]  # one object, as torch.save


def test_protocol_2_builtins_and_sizes_load_as_torch_loads_them(tmp_path, torch):
    saved = {"complex": 1 + 2j, "set": {1, 2}, "bytearray": bytearray(b"ab"), "bytes": b"\x00",
             "size": torch.Size([2, 3])}
    torch.save(saved, tmp_path / "w.pt")  # protocol 2 names them __builtin__.complex & co.
    theirs, ours = torch.load(tmp_path / "w.pt", weights_only=True), tensor.load(tmp_path / "w.pt")
    assert ours == theirs
    assert {k: type(v).__name__ for k, v in ours.items()} == {k: type(v).__name__ for k, v in theirs.items()}
    assert type(ours["size"]) is tensor.Size


def test_conjugate_and_negative_bits_are_applied(tmp_path, torch):
    z = torch.tensor([[1 + 3j, -2 + 4j], [0.5j, 2.0]])
    saved = {"conj": z.conj(), "conj_t": z.conj().t(), "neg": torch._neg_view(torch.tensor([1.0, -2.0])),
             "both": torch._neg_view(z.conj())}
    torch.save(saved, tmp_path / "w.pt")
    loaded = tensor.load(tmp_path / "w.pt")
    for key, value in saved.items():
        assert loaded[key].tolist() == value.resolve_conj().resolve_neg().tolist(), key


def test_legacy_files_load_as_torch_loads_them(tmp_path, torch):
    base = torch.arange(12.0).reshape(3, 4)
    saved = {"x": base, "row": base[1], "t": base.t(), "same": base, "half": torch.ones(3, dtype=torch.float16),
             "i": torch.arange(3), "scalar": torch.tensor(2.5), "p": torch.nn.Parameter(torch.ones(2)),
             "conj": torch.tensor([1 + 2j]).conj(), "meta": {"step": 3, "set": {1}, "size": torch.Size([2])}}
    path = tmp_path / "legacy.pt"
    torch.save(saved, path, _use_new_zipfile_serialization=False)
    theirs, ours = torch.load(path, weights_only=True), tensor.load(path)
    for key in ("x", "row", "t", "half", "i", "scalar"):
        _same_bits(ours[key], theirs[key])
    assert ours["conj"].tolist() == theirs["conj"].resolve_conj().tolist() and ours["meta"] == theirs["meta"]
    assert type(ours["p"]).__name__ == "Parameter" and ours["p"].requires_grad
    assert ours["x"] is ours["same"]
    ours["x"][1, 2] = -7.0
    assert ours["row"][2].item() == -7.0 and ours["t"][2, 1].item() == -7.0
    assert tensor.load(io.BytesIO(path.read_bytes()))["i"].tolist() == [0, 1, 2]
    for load in (torch.load, tensor.load):
        with pytest.raises(RuntimeError, match="mmap"):
            load(path, mmap=True)


def test_truncated_legacy_file_is_an_error(tmp_path, torch):
    path = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(100)}, path, _use_new_zipfile_serialization=False)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(RuntimeError, match="legacy.pt: checkpoint is truncated \\(storage"):
        tensor.load(path)


def _as_big_endian(src, dst, itemsizes: list[int]) -> None:
    """Rewrite a little-endian torch file as the same file written on a big-endian machine.

    ``itemsizes[i]`` is the element size of storage ``i`` (torch numbers storages in pickling order).
    """
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                size = itemsizes[int(info.filename.rsplit("/", 1)[-1])]
                data = np.frombuffer(data, f"<u{size}").astype(f">u{size}").tobytes() if size > 1 else data
            zout.writestr(info.filename, data)


def test_big_endian_files_both_ways(tmp_path, torch):
    saved = {name: _torch_values(torch, name) for name in SHARED}
    torch.save(saved, tmp_path / "little.pt")
    _as_big_endian(tmp_path / "little.pt", tmp_path / "big.pt", [t.element_size() for t in saved.values()])
    assert zipfile.ZipFile(tmp_path / "big.pt").read("little/byteorder") == b"big"
    from_big = tensor.load(tmp_path / "big.pt")
    for name in SHARED:
        _same_bits(from_big[name], saved[name])
    serialization._torch_format.save(from_big, tmp_path / "ours_big.pt", byteorder="big")
    by_torch = torch.load(tmp_path / "ours_big.pt", weights_only=True)
    for name in SHARED:
        _same_bits(from_big[name], by_torch[name])
        _same_bits(tensor.load(tmp_path / "ours_big.pt")[name], saved[name])


def test_mmap_maps_copy_on_write(tmp_path, torch):
    w = torch.randn(64, 32)
    saved = {"w": w, "row": w[1], "t": torch.arange(10)}
    torch.save(saved, tmp_path / "w.pt")
    before = (tmp_path / "w.pt").read_bytes()
    loaded = tensor.load(tmp_path / "w.pt", mmap=True)
    for key in saved:
        _same_bits(loaded[key], saved[key])
    assert not loaded["w"].numpy().flags.owndata  # a view of the mapping, not a copy
    loaded["w"].fill_(0.0)
    assert loaded["row"].abs().sum().item() == 0.0  # views of one storage share the mapping
    assert (tmp_path / "w.pt").read_bytes() == before
    with pytest.raises(ValueError, match="mmap=True needs a path"):
        tensor.load(io.BytesIO(before), mmap=True)


def test_map_location_forms(tmp_path, torch):
    torch.save({"w": torch.ones(3)}, tmp_path / "w.pt")
    assert tensor.load(tmp_path / "w.pt", map_location="cpu")["w"].device == tensor.device("cpu")
    assert tensor.load(tmp_path / "w.pt", map_location={"cpu": "cpu"})["w"].tolist() == [1.0] * 3
    seen = []
    tensor.load(tmp_path / "w.pt", map_location=lambda storage, loc: seen.append((storage.shape, loc)) or storage)
    assert seen == [((3,), "cpu")]
    if not tensor.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available.*map_location='cpu'"):
            tensor.load(tmp_path / "w.pt", map_location="cuda")


def test_missing_dtype_is_named(tmp_path, torch):
    torch.save({"w": torch.ones(2, dtype=torch.uint16)}, tmp_path / "w.pt")  # bfloat16 is read now
    with pytest.raises(TypeError, match="torch.uint16, which distrib does not have"):
        tensor.load(tmp_path / "w.pt")


def test_file_objects_and_optimizer_like_values(tmp_path, torch):
    obj = {"state": {0: {"step": tensor.tensor(3.0), "m": tensor.ones(2)}},
           "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "amsgrad": False, "foreach": None,
                             "params": [0], "big": 2 ** 70, "neg": -5, "name": "é"}]}
    buffer = io.BytesIO()
    tensor.save(obj, buffer, format="torch")
    buffer.seek(0)
    theirs = torch.load(buffer, weights_only=True)
    assert theirs["param_groups"] == obj["param_groups"]
    buffer.seek(0)
    ours = tensor.load(buffer)
    assert ours["param_groups"] == obj["param_groups"] and ours["state"][0]["step"].item() == 3.0


def test_unsupported_object_is_refused_on_save(tmp_path):
    with pytest.raises(TypeError, match="cannot save an object of type frozenset in the PyTorch format"):
        tensor.save({"s": frozenset({1, 2})}, tmp_path / "w.pt", format="torch")
    assert not (tmp_path / "w.pt").exists()


# ------------------------------------------------------------------ hostile files (no torch needed)
def _torch_zip(path, pickled: bytes, storages: dict[str, bytes] | None = None) -> None:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", pickled)
        zf.writestr("archive/byteorder", "little")
        for key, data in (storages or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")


class _System:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def test_pickle_calling_os_system_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    _torch_zip(tmp_path / "evil.pt", pickle.dumps({"x": _System(f"touch {marker}")}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"unsupported global posix\.system.*add_safe_globals"):
        tensor.load(tmp_path / "evil.pt")
    assert not marker.exists()
    tensor.load(tmp_path / "evil.pt", weights_only=False)  # the caller's explicit trust runs it
    assert marker.exists()


def test_refused_global_is_not_imported(tmp_path):
    assert "antigravity" not in sys.modules
    _torch_zip(tmp_path / "evil.pt", b"\x80\x02cantigravity\ngeohash\n)R.")
    with pytest.raises(pickle.UnpicklingError, match="antigravity.geohash"):
        tensor.load(tmp_path / "evil.pt")
    assert "antigravity" not in sys.modules


class Point:
    """A class a user trusts."""

    def __init__(self, x: int) -> None:
        self.x = x

    def __reduce__(self):
        return (Point, (self.x,))


def test_safe_globals_allow_a_trusted_class(tmp_path):
    _torch_zip(tmp_path / "p.pt", pickle.dumps({"p": Point(3)}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        tensor.load(tmp_path / "p.pt")
    with serialization.safe_globals([Point]):
        assert tensor.load(tmp_path / "p.pt")["p"].x == 3
    with pytest.raises(pickle.UnpicklingError):
        tensor.load(tmp_path / "p.pt")
    serialization.add_safe_globals([Point])
    try:
        assert (Point, f"{__name__}.Point") in serialization.get_safe_globals()
        assert tensor.load(tmp_path / "p.pt")["p"].x == 3
    finally:
        serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []


def test_view_outside_its_storage_is_refused(tmp_path):
    pickled = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
               b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00K\x64\x85K\x01\x85\x89ccollections\n"
               b"OrderedDict\n)RtR.")
    _torch_zip(tmp_path / "big.pt", pickled, {"0": np.zeros(4, np.float32).tobytes()})
    with pytest.raises(RuntimeError, match=r"size \[100\].*does not fit its storage of 4 elements"):
        tensor.load(tmp_path / "big.pt")


def test_truncated_pickle_is_an_error(tmp_path):
    _torch_zip(tmp_path / "cut.pt", b"\x80\x02}q\x00(X\x01\x00")
    with pytest.raises(RuntimeError, match="cut.pt: checkpoint is corrupt"):
        tensor.load(tmp_path / "cut.pt")


def test_truncated_storage_is_an_error(tmp_path):
    pickled = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
               b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00K\x04\x85K\x01\x85\x89ccollections\n"
               b"OrderedDict\n)RtR.")
    _torch_zip(tmp_path / "short.pt", pickled, {"0": b"\x00" * 8})
    with pytest.raises(RuntimeError, match="storage 0 has 8 bytes, expected 4 x 4"):
        tensor.load(tmp_path / "short.pt")
    _torch_zip(tmp_path / "ok.pt", pickled, {"0": np.arange(4, dtype=np.float32).tobytes()})
    assert tensor.load(tmp_path / "ok.pt").tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.gpu
def test_map_location_moves_storages_to_cuda(tmp_path):
    if not tensor.cuda.is_available():
        pytest.skip("no CUDA device")
    base = tensor.arange(6.0).reshape(2, 3)
    tensor.save({"base": base, "t": base.T}, tmp_path / "w.pt", format="torch")
    for location in ("cuda", {"cpu": "cuda:0"}, lambda storage, loc: storage.to("cuda")):
        loaded = tensor.load(tmp_path / "w.pt", map_location=location)
        assert loaded["t"].device.type == "cuda" and loaded["t"].cpu().tolist() == base.T.tolist()
    tensor.save(loaded, tmp_path / "back.pt", format="torch")  # saved from the device, read on the host
    assert tensor.load(tmp_path / "back.pt", map_location="cpu")["t"].tolist() == base.T.tolist()


def test_allow_list_is_exactly_torchs_weights_only_globals(torch):
    from torch import _weights_only_unpickler

    reader = serialization._torch_format._Reader.__new__(serialization._torch_format._Reader)
    reader.name = "x"
    assert set(reader.table()) == set(_weights_only_unpickler._get_allowed_globals())
