"""The CuPy stand-in itself (tests/_cupy_standin): it must refuse what CuPy refuses, or it would
hide the bugs it is for. Runs in the stand-in pass only (``DISTRIB_CUPY_STANDIN=1 pytest -m gpu``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import nn
import nn.functional as F
import tensor
from tests.conftest import CUPY_STANDIN

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not CUPY_STANDIN, reason="checks the CuPy stand-in")]


@pytest.fixture
def cupy():
    """The stand-in module."""
    import cupy

    return cupy


def test_implicit_host_conversion_and_numpy_operands_are_refused(cupy):
    x = cupy.arange(3.0)
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(x)
    with pytest.raises(TypeError, match="Unsupported type"):
        cupy.add(x, np.ones(3))
    with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used for fill"):
        x[...] = np.ones(3)
    assert x.get().tolist() == [0.0, 1.0, 2.0] and cupy.asnumpy(x[1:]).tolist() == [1.0, 2.0]


def test_a_kernel_runs_only_on_its_arrays_device_and_threads_start_on_device_0(cupy):
    with cupy.cuda.Device(1):
        x = cupy.ones(2)
    with pytest.raises(ValueError, match=r"resides \(1\) is different from the current device \(0\)"):
        x + 1
    assert x[1:].shape == (1,)  # a view launches no kernel
    seen = []
    with cupy.cuda.Device(1):
        thread = threading.Thread(target=lambda: seen.append(cupy.cuda.Device().id))
        thread.start()
        thread.join()
    assert seen == [0]


def test_the_pool_splits_blocks_and_ipc_names_the_allocation_base(cupy):
    pool = cupy.cuda.MemoryPool()  # a fresh pool: its only free block is the one freed here
    block = pool.malloc(1 << 14)
    base = block.ptr
    del block
    first, second = pool.malloc(1000), pool.malloc(1024)  # 1000 rounds up to 1024
    assert (first.ptr, second.ptr) == (base, base + 1024)
    assert second.mem.ptr == base + 1024  # the chunk's pointer, not the allocation's
    runtime = cupy.cuda.runtime
    assert runtime.ipcGetMemHandle(second.ptr) == runtime.ipcGetMemHandle(base)
    assert (pool.used_bytes(), pool.total_bytes()) == (2048, 1 << 14)


def test_cupy13_dtype_rules(cupy):
    x = cupy.ones(2, dtype=np.uint8)
    assert (x + 300).dtype == np.int16  # typed by value: CuPy's int16 loop, where PyTorch keeps uint8
    assert (x + np.uint8(7)).dtype == np.uint8
    assert not hasattr(cupy, "put_along_axis") and not hasattr(cupy, "concat")
    import cupyx

    with pytest.raises(TypeError, match="cupy.add.at only supports"):
        cupyx.scatter_add(cupy.zeros(3, dtype=np.int64), cupy.array([0, 0]), cupy.ones(2, dtype=np.int64))
    assert cupy.arange(3)[cupy.array([3, -4])].tolist() == [0, 2]  # out-of-range indices wrap


def test_an_event_belongs_to_its_device(cupy):
    with cupy.cuda.Device(1):
        stream = cupy.cuda.Stream(non_blocking=True)
    with pytest.raises(cupy.cuda.runtime.CUDARuntimeError, match="cudaErrorInvalidResourceHandle"):
        cupy.cuda.Event().record(stream)
    with pytest.raises(RuntimeError, match=r"stream is created on \(1\) does not match .* current device \(0\)"):
        stream.use()


def test_a_training_step_on_cuda_does_not_synchronise():
    from cupy import _state

    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).cuda()
    opt = nn.optim.Adam(model.parameters())
    x, y = tensor.randn(5, 8, device="cuda"), tensor.randn(5, 4, device="cuda")
    before = _state.synchronizations()
    for _ in range(2):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    assert _state.synchronizations() == before
    y.cpu()
    assert _state.synchronizations() == before + 1


def test_dlpack_capsules_are_cuda_ones(cupy):
    x = cupy.arange(6.0).reshape(2, 3)[:, 1:]
    shared = cupy.from_dlpack(x)
    shared[0, 0] = 42.0
    assert (x.data.ptr, x.strides, x.get().tolist()) == (shared.data.ptr, shared.strides, [[42.0, 2.0], [4.0, 5.0]])
    assert x.__dlpack_device__() == (2, 0)
    with pytest.raises(RuntimeError, match="Unsupported device"):
        np.from_dlpack(x)
    with pytest.raises(TypeError, match="CPU arrays cannot be directly imported"):
        cupy.from_dlpack(np.ones(2))
    assert tensor.from_dlpack(x).tolist() == [[42.0, 2.0], [4.0, 5.0]]


def test_elementwise_kernels_run_their_c_subset_and_are_counted(cupy):
    from cupy import _state
    kernel = cupy.ElementwiseKernel("T x, float64 scale", "T y", "T t = x * scale; y += sqrt(t) + max(t, y);",
                                    "demo")
    x, y = cupy.asarray([4.0, 9.0], dtype=cupy.float32), cupy.asarray([1.0, 20.0], dtype=cupy.float32)
    before = _state.elementwise_launches()
    assert kernel(x, 1.0, y) is y
    assert _state.elementwise_launches() == before + 1
    assert y.dtype == cupy.float32 and y.get().tolist() == [1.0 + 2.0 + 4.0, 20.0 + 3.0 + 20.0]
    with pytest.raises(ValueError, match="does not model"):
        cupy.ElementwiseKernel("T x", "T y", "y = x > 0 ? x : 0", "ternary")
    with pytest.raises(ValueError, match="different from the current device"):
        with cupy.cuda.Device(1):
            kernel(x, 1.0, y)


def test_copies_read_memory_after_the_streams_pending_work(cupy):
    # A copy is a kernel (or cudaMemcpyAsync) on the current stream: it sees what work queued
    # before it on that stream (an NCCL all_gather, say) writes. The pending work here writes its
    # value only when waited for, so a copy that read without waiting would see the old one.
    from cupy.cuda import stream as _stream

    class WritesWhenWaitedFor(_stream.Work):
        def __init__(self, array) -> None:
            super().__init__()
            self.array = array

        def wait(self) -> None:
            if not self.done:
                self.array._a[...] = 7.0
                self.finish()

    copies = {
        "copy": lambda a: a.copy(),
        "reshape of a strided view": lambda a: a[:, ::2].reshape(-1),
        "ravel of a strided view": lambda a: a[:, ::2].ravel(),
        "astype": lambda a: a.astype(np.float32),
    }
    for name, copy in copies.items():
        a = cupy.zeros((2, 4))
        _stream.enqueue(cupy.cuda.get_current_stream().ptr, WritesWhenWaitedFor(a))
        assert float(copy(a).get().min()) == 7.0, name
        cupy.cuda.get_current_stream().synchronize()
