"""``tensor.accelerator``, ``tensor.backends``, ``Tensor.type`` and the device predicates."""

from __future__ import annotations

import pytest

import tensor


def test_accelerator_answers_like_torch_without_a_gpu(monkeypatch):
    monkeypatch.setattr(tensor.cuda, "is_available", lambda: False)
    assert tensor.accelerator.is_available() is False
    assert tensor.accelerator.current_accelerator() is None
    with pytest.raises(RuntimeError, match="no accelerator"):
        tensor.accelerator.current_device_index()
    with pytest.raises(RuntimeError, match="no accelerator"):
        tensor.accelerator.synchronize()


def test_accelerator_is_cuda_with_a_gpu(device):
    if device == "cpu":
        pytest.skip("needs a GPU (or the stand-in)")
    assert tensor.accelerator.is_available()
    assert tensor.accelerator.current_accelerator() == tensor.device("cuda")
    assert tensor.accelerator.device_count() >= 1
    tensor.accelerator.set_device_index(0)
    assert tensor.accelerator.current_device_index() == 0
    tensor.accelerator.synchronize()


def test_backend_flags_are_settable_and_mps_is_absent(monkeypatch):
    for namespace, flag in [
        (tensor.backends.cudnn, "benchmark"),
        (tensor.backends.cudnn, "deterministic"),
        (tensor.backends.cudnn, "enabled"),
        (tensor.backends.cuda.matmul, "allow_tf32"),
    ]:
        monkeypatch.setattr(namespace, flag, not getattr(namespace, flag))
    assert tensor.backends.mps.is_available() is False
    assert tensor.backends.mps.is_built() is False


@pytest.mark.parametrize(
    "dtype, name",
    [(tensor.float32, "torch.FloatTensor"), (tensor.int64, "torch.LongTensor"), (tensor.bool, "torch.BoolTensor")],
)
def test_type_names_and_casts(dtype, name):
    x = tensor.ones(2, dtype=dtype)
    assert x.type() == name
    assert tensor.zeros(2).type(name).dtype == dtype
    assert tensor.zeros(2).type(name.replace("torch.", "tensor.")).dtype == dtype
    assert tensor.zeros(2).type(dtype).dtype == dtype


def test_type_rejects_an_unknown_name():
    with pytest.raises(ValueError, match="invalid type: 'torch.NoSuchTensor'"):
        tensor.zeros(2).type("torch.NoSuchTensor")


def test_device_predicates(device):
    x = tensor.zeros(2, device=device)
    assert x.is_cpu == (device == "cpu")
    assert x.is_cuda == (device == "cuda")
    assert not (x.is_xpu or x.is_mps or x.is_meta or x.is_sparse or x.is_quantized)
    if device == "cuda":
        assert x.type() == "torch.cuda.FloatTensor"
