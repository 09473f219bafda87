"""CUDA tensors shared between processes by IPC handle (issue 13, defect 2).

A handle covers a whole ``cudaMalloc`` allocation and opens at its base, while CuPy's pool
carves many tensors out of one allocation: the receiver must add the tensor's offset from the
*allocation's* base, not from its pool chunk. Needs a CUDA device or the CuPy stand-in.
"""

from __future__ import annotations

import pytest

import distrib.multiprocessing as mp
import tensor
from tests.conftest import CUDA_SKIP_REASON

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(CUDA_SKIP_REASON is not None, reason=f"no CUDA device: {CUDA_SKIP_REASON}")]

TIMEOUT = 60


def _read_then_add(requests, replies):
    t = requests.get(timeout=TIMEOUT)
    replies.put((str(t.device), t.cpu().tolist()))
    t.add_(100.0)
    tensor.cuda.synchronize()
    replies.put("written")


def _share(t):
    """Send ``t`` to a spawned child; returns what it read, after it has added 100 in place."""
    ctx = mp.get_context("spawn")
    requests, replies = ctx.Queue(), ctx.Queue()
    process = ctx.Process(target=_read_then_add, args=(requests, replies))
    process.start()
    try:
        requests.put(t)
        seen = replies.get(timeout=TIMEOUT)
        assert replies.get(timeout=TIMEOUT) == "written"
    finally:
        process.join(TIMEOUT)
        if process.is_alive():
            process.kill()
            process.join()
    assert process.exitcode == 0
    return seen


def test_defect2_a_tensor_in_a_split_pool_block_is_shared_with_its_own_memory():
    block = tensor.zeros(1 << 16, device="cuda")
    del block  # back to the pool: the next two tensors are carved out of this one allocation
    first = tensor.full((1000,), 1.0, device="cuda")
    second = tensor.full((1000,), 2.0, device="cuda")
    device, seen = _share(second)
    assert device == str(second.device)
    assert seen == [2.0] * 1000
    assert second.cpu().tolist() == [102.0] * 1000
    assert first.cpu().tolist() == [1.0] * 1000


def test_a_view_on_the_second_device_is_shared_with_its_offset():
    if tensor.cuda.device_count() < 2:
        pytest.skip(f"needs 2 GPUs, found {tensor.cuda.device_count()}")
    base = tensor.arange(10.0, device="cuda:1")
    device, seen = _share(base[3:6])
    assert (device, seen) == ("cuda:1", [3.0, 4.0, 5.0])
    assert base.cpu().tolist() == [0.0, 1.0, 2.0, 103.0, 104.0, 105.0, 6.0, 7.0, 8.0, 9.0]
