"""Devices: parsing and interning, the default device (context manager and
set_default_device), the same-device check, and the CUDA API on a machine without a GPU."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tensor
from tensor import _dispatch
from tests.conftest import CUDA_SKIP_REASON

needs_no_gpu = pytest.mark.skipif(CUDA_SKIP_REASON is None, reason="checks the behaviour without a GPU")

# (spec, type, index, str)
PARSE_CASES = [
    (("cpu",), "cpu", None, "cpu"),
    (("cuda",), "cuda", None, "cuda"),
    (("cuda:1",), "cuda", 1, "cuda:1"),
    (("cuda", 2), "cuda", 2, "cuda:2"),
    ((3,), "cuda", 3, "cuda:3"),
]


@pytest.mark.parametrize(("args", "kind", "index", "text"), PARSE_CASES)
def test_device_parsing(args, kind, index, text):
    d = tensor.device(*args)
    assert (d.type, d.index, str(d)) == (kind, index, text)


def test_device_repr_and_interning():
    assert repr(tensor.device("cpu")) == "device(type='cpu')"
    assert repr(tensor.device("cuda:1")) == "device(type='cuda', index=1)"
    assert tensor.device("cuda:1") is tensor.device("cuda", 1)
    assert tensor.device(tensor.device("cpu")) is tensor.device("cpu")
    assert tensor.device("cuda:0") != tensor.device("cuda:1")


@pytest.mark.parametrize("spec", ["tpu", "cuda:x", "CPU", "", "cuda:-1", "gpu:0"])
def test_unknown_device_string_raises_naming_it(spec):
    with pytest.raises(RuntimeError, match=f"device string: {spec!r}"):
        tensor.device(spec)


def test_device_bad_arguments():
    with pytest.raises(TypeError, match="device\\(\\) expects a string"):
        tensor.device(1.5)
    with pytest.raises(RuntimeError, match="already has an index"):
        tensor.device("cuda:1", 2)
    with pytest.raises(RuntimeError, match="device index must be a non-negative int"):
        tensor.device("cuda", -1)


def test_unknown_device_in_creation_raises():
    with pytest.raises(RuntimeError, match="'xla'"):
        tensor.zeros(2, device="xla")


def test_tensor_device_attributes(device):
    t = tensor.ones(2, device=device)
    assert t.device.type == device
    assert t.is_cuda is (device == "cuda")
    assert t.cpu().device is tensor.device("cpu")
    assert t.to("cpu").device.type == "cpu"


def test_to_same_device_returns_self():
    t = tensor.ones(2)
    assert t.to("cpu") is t
    assert t.cpu() is t


def test_to_reads_positional_non_blocking_then_copy_as_torch(torch):
    t, ref = tensor.ones(2), torch.ones(2)
    for args in [(tensor.float32, True), ("cpu", tensor.float32, True), (tensor.float32, False, True),
                 ("cpu", None, True, True), (t, False, True)]:
        torch_args = [torch.float32 if a is tensor.float32 else ref if a is t else a for a in args]
        assert (t.to(*args) is t) is (ref.to(*torch_args) is ref), args
    assert t.to(copy=True) is not t


# ------------------------------------------------------------ default device
def test_device_context_manager_sets_default():
    with tensor.device("cpu") as d:
        assert d is tensor.device("cpu")
        assert tensor.get_default_device() is tensor.device("cpu")
        assert tensor.ones(1).device.type == "cpu"
    assert tensor.get_default_device() is tensor.device("cpu")


def test_device_context_manager_nests_and_restores():
    with tensor.device("cuda:1"):
        assert tensor.get_default_device() is tensor.device("cuda:1")
        with tensor.device("cpu"):
            assert tensor.get_default_device() is tensor.device("cpu")
        assert tensor.get_default_device() is tensor.device("cuda:1")
    assert tensor.get_default_device() is tensor.device("cpu")


def test_device_context_is_thread_local():
    """Threads using the same (interned) device object keep separate stacks."""
    inner_entered, main_exited, done = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def worker():
        with tensor.device("cuda:1"), tensor.device("cpu"):
            inner_entered.set()
            main_exited.wait(timeout=30)
            seen["worker_inside"] = tensor.get_default_device()
        seen["worker_after"] = tensor.get_default_device()
        done.set()

    with tensor.device("cpu"):
        thread = threading.Thread(target=worker)
        thread.start()
        inner_entered.wait(timeout=30)
        assert tensor.get_default_device() is tensor.device("cpu")
    seen["main_after"] = tensor.get_default_device()
    main_exited.set()
    thread.join()
    assert seen == {"worker_inside": tensor.device("cpu"), "worker_after": tensor.device("cpu"),
                    "main_after": tensor.device("cpu")}


def test_set_default_device_is_process_wide_and_resettable():
    try:
        tensor.set_default_device("cuda:1")
        assert tensor.get_default_device() is tensor.device("cuda:1")
        seen = []
        thread = threading.Thread(target=lambda: seen.append(tensor.get_default_device()))
        thread.start()
        thread.join()
        assert seen == [tensor.device("cuda:1")]
        with tensor.device("cpu"):
            assert tensor.ones(1).device.type == "cpu"
    finally:
        tensor.set_default_device(None)
    assert tensor.get_default_device() is tensor.device("cpu")


# ------------------------------------------------------------ mixing devices
def test_mixing_devices_raises_naming_both():
    """Exercised without a GPU by labelling a host array as a CUDA tensor: the check
    runs before any kernel touches the data."""
    cpu = tensor.ones(2)
    fake_cuda = _dispatch.make(np.ones(2, np.float32), tensor.device("cuda:0"))
    message = "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0"
    with pytest.raises(RuntimeError, match=message):
        cpu + fake_cuda
    with pytest.raises(RuntimeError, match=message.replace("cpu and cuda:0", "cuda:0 and cpu")):
        fake_cuda * cpu


@pytest.mark.gpu
@pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")
def test_mixing_real_devices_raises():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        tensor.ones(2) + tensor.ones(2, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        tensor.ones(2, 2) @ tensor.ones(2, 2, device="cuda")


# ------------------------------------------------------------ CUDA API without a GPU
CUDA_ENTRY_POINTS = [
    ("Tensor.cuda()", lambda: tensor.ones(2).cuda()),
    ("Tensor.to('cuda:0')", lambda: tensor.ones(2).to("cuda:0")),
    ("ones(device='cuda')", lambda: tensor.ones(2, device="cuda")),
    ("tensor(device='cuda')", lambda: tensor.tensor([1.0], device="cuda")),
    ("cuda.current_device", lambda: tensor.cuda.current_device()),
    ("cuda.synchronize", lambda: tensor.cuda.synchronize()),
    ("cuda.Stream", lambda: tensor.cuda.Stream()),
]


@needs_no_gpu
@pytest.mark.parametrize(("name", "call"), CUDA_ENTRY_POINTS, ids=[c[0] for c in CUDA_ENTRY_POINTS])
def test_cuda_use_without_gpu_says_how_to_install(name, call):
    with pytest.raises(RuntimeError, match=r"CUDA is not available .*pip install 'distrib\[cuda\]'"):
        call()


@needs_no_gpu
def test_cuda_queries_without_gpu():
    assert tensor.cuda.is_available() is False
    assert tensor.cuda.device_count() == 0
    assert tensor.cuda.memory_allocated() == 0
    assert tensor.cuda.max_memory_allocated() == 0
    assert tensor.cuda.memory_reserved() == 0
    tensor.cuda.reset_peak_memory_stats()  # no-ops, not errors
    tensor.cuda.empty_cache()
