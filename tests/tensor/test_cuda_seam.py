"""Regression tests for the CUDA seam (issue 13): each names the defect it pins down.

They need a CUDA device, or the CuPy stand-in (``DISTRIB_CUPY_STANDIN=1``, two emulated
devices); the two-device ones skip, naming the count, where only one exists.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import autograd
import tensor
from tests.conftest import CUDA_SKIP_REASON
from tests.helpers import assert_close

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")]


def _needs_two_devices():
    if tensor.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, found {tensor.cuda.device_count()}")


@contextlib.contextmanager
def _current_device(index: int):
    previous = tensor.cuda.current_device()
    tensor.cuda.set_device(index)
    try:
        yield
    finally:
        tensor.cuda.set_device(previous)


def test_defect1_cuda_means_the_current_device_for_every_creation_op():
    _needs_two_devices()
    with _current_device(1):
        made = {
            "zeros": tensor.zeros(2, device="cuda"), "full": tensor.full((2,), 3.0, device="cuda"),
            "arange": tensor.arange(3, device="cuda"), "tensor": tensor.tensor([1.0], device="cuda"),
            "eye": tensor.eye(2, device="cuda"), "randn": tensor.randn(2, device="cuda"),
            "to": tensor.ones(2).to("cuda"), "cuda()": tensor.ones(2).cuda(),
        }
        tensor.cuda.synchronize()
    assert {name: str(t.device) for name, t in made.items()} == dict.fromkeys(made, "cuda:1")
    assert made["full"].tolist() == [3.0, 3.0]


def test_defect5_index_add_and_accumulating_index_put_take_every_dtype_on_cuda():
    # cupyx.scatter_add has no int8/int16/uint8/bool (nor int64 before CuPy 14.2) kernels.
    index = tensor.tensor([0, 2, 0])
    for name in ("int8", "int16", "uint8", "int32", "int64", "float16", "float64"):
        dtype = getattr(tensor, name)
        base, source = tensor.zeros(3, dtype=dtype), tensor.ones(3, dtype=dtype)
        expected = base.index_add(0, index, source)
        got = base.cuda().index_add(0, index.cuda(), source.cuda())
        assert_close(got, expected)
        assert_close(base.cuda().index_put((index.cuda(),), source.cuda(), accumulate=True), expected)
    flags = tensor.zeros(3, dtype=tensor.bool)
    got = flags.cuda().index_put((index.cuda(),), tensor.ones(3, dtype=tensor.bool).cuda(), accumulate=True)
    assert got.tolist() == [True, False, True]


def test_defect6_a_python_int_never_widens_a_cuda_integer_tensor():
    # CuPy 13 types a Python scalar by its value: uint8 + 300 would run an int16 loop.
    x = tensor.tensor([1, 200], dtype=tensor.uint8, device="cuda")
    assert (x + 300).dtype is tensor.uint8 and (x + 300).tolist() == [45, 244]
    assert (x * -1).dtype is tensor.uint8 and (x * -1).tolist() == [255, 56]
    y = tensor.tensor([1, -100], dtype=tensor.int8, device="cuda")
    assert (y + 200).dtype is tensor.int8 and (y + 200).tolist() == [-55, 100]
    assert (tensor.ones(2, dtype=tensor.float16, device="cuda") * 3.5).dtype is tensor.float16


def test_an_out_of_range_index_raises_on_cuda_instead_of_wrapping():
    # CuPy wraps out-of-range integer-array indices around instead of raising; the device-side
    # assert reports it at the next synchronisation.
    x = tensor.arange(3.0, device="cuda")
    y = x[tensor.tensor([0, 3], device="cuda")]
    with pytest.raises(IndexError, match="device-side assert.*out of bounds for dimension 0 with size 3"):
        y.tolist()
    x.index_put((tensor.tensor([-4], device="cuda"),), tensor.ones(1, device="cuda"), accumulate=True)
    with pytest.raises(IndexError, match="device-side assert.*out of bounds"):
        tensor.cuda.synchronize()
    assert x.tolist() == [0.0, 1.0, 2.0]  # reported once: the error word is cleared
    x.index_select(0, tensor.tensor([7], device="cuda"))
    with pytest.raises(IndexError, match="device-side assert.*index_select"):
        tensor.cuda.current_stream().synchronize()


def test_defect7_gradcheck_and_gradgradcheck_run_on_cuda_tensors():
    x = tensor.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=tensor.float64, device="cuda", requires_grad=True)
    assert autograd.gradcheck(lambda a: (a * a).sum(0), x)
    assert autograd.gradgradcheck(lambda a: (a * a * a).sum(0), x)


def test_defect9_cuda_helpers_accept_a_bare_cuda_device():
    for spec in ("cuda", tensor.device("cuda"), "cuda:0", 0, None):
        tensor.cuda.synchronize(spec)
        assert isinstance(tensor.cuda.get_device_name(spec), str)
    assert tensor.cuda.current_stream("cuda").device == tensor.device("cuda", tensor.cuda.current_device())


def test_defect9_streams_and_memory_statistics_are_per_device():
    _needs_two_devices()
    stream = tensor.cuda.Stream(device=1)
    assert stream.device == tensor.device("cuda", 1)
    assert tensor.cuda.current_stream(1).device == tensor.device("cuda", 1)
    with stream:  # entering a stream of another device makes that device current, as in PyTorch
        assert tensor.cuda.current_device() == 1
        on_1 = tensor.zeros(1 << 16, device="cuda")
    assert tensor.cuda.current_device() == 0 and on_1.device == tensor.device("cuda", 1)
    before = tensor.cuda.memory_allocated(0)
    tensor.cuda.reset_peak_memory_stats(1)
    extra = tensor.zeros(1 << 18, device="cuda:1")
    assert tensor.cuda.memory_allocated(1) >= extra.numel() * 4 + on_1.numel() * 4
    assert tensor.cuda.memory_allocated(0) == before
    assert tensor.cuda.max_memory_allocated(1) >= tensor.cuda.memory_allocated(1)
    assert tensor.cuda.memory_reserved(1) >= tensor.cuda.memory_allocated(1)


def test_defect9_a_stream_priority_is_kept_or_refused_by_name():
    try:
        stream = tensor.cuda.Stream(priority=-1)
    except RuntimeError as exc:
        assert "priority" in str(exc)
    else:
        assert stream.priority == -1


def test_a_waited_stream_orders_work_across_devices():
    _needs_two_devices()
    on_1 = tensor.cuda.Stream(device=1)
    tensor.cuda.current_stream(0).wait_stream(on_1)  # the event is recorded on device 1's stream
    assert on_1.query()


def test_host_copies_of_cuda_tensors_match_numpy():
    x = tensor.tensor(np.arange(6.0).reshape(2, 3), device="cuda")
    assert_close(x.T.contiguous(), np.arange(6.0).reshape(2, 3).T)


def test_ops_run_on_their_tensors_device_whatever_device_is_current():
    _needs_two_devices()
    assert tensor.cuda.current_device() == 0
    x = tensor.arange(4.0, device="cuda:1")
    y = (x * 2 + 1).sum()
    x[1] = 7.0
    x.add_(1.0)
    x[tensor.tensor([0, 2], device="cuda:1")] = tensor.zeros(2, device="cuda:1")
    assert (y.item(), x.tolist(), str(x.max().device)) == (16.0, [0.0, 8.0, 0.0, 4.0], "cuda:1")


def test_memory_statistics_are_kept_without_walking_the_pool(monkeypatch):
    # Issue 13, part 3: CuPy's used_bytes() sums every block in use; it was called per allocation.
    pool = tensor._backend.cuda_backend().pool
    walks = []
    monkeypatch.setattr(pool, "used_bytes", lambda: walks.append(1) or 0)
    start = tensor.cuda.memory_allocated(0)
    tensor.cuda.reset_peak_memory_stats(0)
    big = tensor.zeros(1 << 20, device="cuda:0")
    held = tensor.cuda.memory_allocated(0)
    assert held - start >= big.numel() * 4
    del big
    assert tensor.cuda.memory_allocated(0) == start
    assert tensor.cuda.max_memory_allocated(0) == held
    assert walks == []


def test_record_stream_holds_the_memory_until_the_streams_work_is_done():
    import gc
    import weakref

    import cupy

    side = tensor.cuda.Stream()
    gc.collect()  # earlier tests' garbage, so that what is freed below is ours alone
    t = tensor.ones(1024, device="cuda")
    array = weakref.ref(t._data)
    t.record_stream(side)
    allocated = tensor.cuda.memory_allocated()
    trace = cupy._state.start_trace()
    try:
        del t
        gc.collect()
    finally:
        cupy._state.stop_trace(trace)
    assert [entry[0::2] for entry in trace] == [("record", side._stream.ptr)]  # on the side stream, at the free
    assert array() is not None and tensor.cuda.memory_allocated() == allocated  # still held
    tensor.cuda.synchronize()  # the side stream's work is done: let go
    assert array() is None and tensor.cuda.memory_allocated() < allocated
    with pytest.raises(RuntimeError, match="expects a CUDA tensor"):
        tensor.ones(2).record_stream(side)
    with pytest.raises(TypeError, match="expects a CUDA stream"):
        tensor.ones(2, device="cuda").record_stream("stream")
