"""``distrib.multiprocessing``: tensors, Parameters and Modules cross processes by handle.

Every transfer is checked with both start methods and both sharing strategies where it matters:
the memory really is shared (a consumer's write shows in the producer), views keep offset and
strides, aliasing survives, and what cannot be shared is refused with a clear message.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from multiprocessing.reduction import ForkingPickler

import pytest

import distrib.multiprocessing as mp
import nn
import tensor
from tensor import _backend, _shared

METHODS = ["fork", "spawn"]
STRATEGIES = ["file_descriptor", "file_system"]
TIMEOUT = 60


@pytest.fixture(params=STRATEGIES)
def strategy(request, monkeypatch, tmp_path):
    """Each sharing strategy; named segments go to a private directory, checked empty at the end."""
    monkeypatch.setattr(_shared, "SHM_DIR", str(tmp_path))
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy("file_descriptor")
    gc.collect()
    assert os.listdir(tmp_path) == []


def _run(ctx, target, *args):
    process = ctx.Process(target=target, args=args)
    process.start()
    return process


def _finish(process) -> None:
    process.join(TIMEOUT)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail("the child did not finish in time")
    assert process.exitcode == 0


# ---------------------------------------------------------------- children
def _add_one(requests, replies):
    t = requests.get(timeout=TIMEOUT)
    t += 1
    replies.put((t.is_shared(), t.stride(), tuple(t.shape)))


def _write_through_views(requests, replies):
    whole, view, transposed = (requests.get(timeout=TIMEOUT) for _ in range(3))
    view[0] = 42.0  # the view aliases ``whole`` here too
    replies.put((view.data_ptr() - whole.data_ptr(), view.stride(), transposed.stride(), whole[1, 1].item()))


def _describe_parameters(requests, replies):
    for _ in range(2):
        p = requests.get(timeout=TIMEOUT)
        grad = None if p.grad is None else (p.grad.tolist(), p.grad.is_shared())
        replies.put((type(p).__name__, p.requires_grad, p.is_leaf, p.is_shared(), grad))
        if p.grad is not None:
            p.grad += 1


def _fill_module(requests, replies):
    model = requests.get(timeout=TIMEOUT)
    with tensor.no_grad():
        model.weight.fill_(7.0)
    replies.put(type(model).__name__)


def _receive_by_pipe(conn):
    t = conn.recv()
    t.mul_(2)
    conn.send(t.sum().item())


def _put_and_exit(queue):
    queue.put(tensor.arange(3.0))


def _row_sum(t):
    return t.sum().item()


def _fill_row(t, row):
    t[row] = float(row)


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("method", METHODS)
def test_a_consumers_write_is_seen_by_the_producer(method, strategy):
    ctx = mp.get_context(method)
    requests, replies = ctx.Queue(), ctx.Queue()
    process = _run(ctx, _add_one, requests, replies)
    t = tensor.zeros(4, 3)
    requests.put(t)
    assert replies.get(timeout=TIMEOUT) == (True, (3, 1), (4, 3))
    _finish(process)
    assert t.is_shared()  # moved into shared memory on its way
    assert t.tolist() == [[1.0] * 3] * 4  # the consumer's write, seen here: shared, not copied


@pytest.mark.parametrize("method", METHODS)
def test_views_keep_offset_and_strides_and_stay_aliased_on_the_receiver(method, strategy):
    ctx = mp.get_context(method)
    requests, replies = ctx.Queue(), ctx.Queue()
    process = _run(ctx, _write_through_views, requests, replies)
    whole = tensor.arange(12.0).reshape(3, 4)
    for t in (whole, whole[1, 1:], whole.t()):
        requests.put(t)
    assert replies.get(timeout=TIMEOUT) == (5 * 4, (1,), (1, 4), 42.0)
    _finish(process)
    assert whole[1, 1].item() == 42.0


def test_parameters_come_back_as_parameters_and_grad_is_shared_only_if_it_exists():
    ctx = mp.get_context("fork")
    requests, replies = ctx.Queue(), ctx.Queue()
    process = _run(ctx, _describe_parameters, requests, replies)
    w = nn.Parameter(tensor.ones(2))
    requests.put(w)
    assert replies.get(timeout=TIMEOUT) == ("Parameter", True, True, True, None)
    w.grad = tensor.full((2,), 3.0)
    requests.put(w)
    assert replies.get(timeout=TIMEOUT) == ("Parameter", True, True, True, ([3.0, 3.0], True))
    _finish(process)
    assert w.grad.tolist() == [4.0, 4.0]  # the consumer's write to the shared grad


@pytest.mark.parametrize("method", METHODS)
def test_a_module_travels_by_handle(method):
    ctx = mp.get_context(method)
    requests, replies = ctx.Queue(), ctx.Queue()
    process = _run(ctx, _fill_module, requests, replies)
    model = nn.Linear(2, 3)
    requests.put(model)
    assert replies.get(timeout=TIMEOUT) == "Linear"
    _finish(process)
    assert model.weight.tolist() == [[7.0, 7.0]] * 3


def test_a_pipe_shares_tensors_both_ways():
    ctx = mp.get_context("fork")
    ours, theirs = ctx.Pipe()
    process = _run(ctx, _receive_by_pipe, theirs)
    t = tensor.ones(5)
    ours.send(t)
    assert ours.poll(TIMEOUT) and ours.recv() == 10.0
    _finish(process)
    assert t.tolist() == [2.0] * 5


def test_a_pool_maps_over_tensors_and_writes_into_a_shared_one():
    with mp.get_context("fork").Pool(2) as pool:
        assert pool.map(_row_sum, [tensor.full((3,), float(i)) for i in range(4)]) == [0.0, 3.0, 6.0, 9.0]
        board = tensor.zeros(4, 2)
        pool.starmap(_fill_row, [(board, row) for row in range(4)])
    assert board.tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


def test_an_already_shared_tensor_is_sent_in_o1_and_a_fresh_one_is_moved_once(strategy):
    shared = tensor.zeros(1 << 20).share_memory_()
    pointer = shared.data_ptr()
    payload = ForkingPickler.dumps(shared)
    assert len(payload) < 1000  # a handle, not 4 MB
    assert shared.data_ptr() == pointer  # not copied again
    assert ForkingPickler.loads(payload).data_ptr() == pointer  # same process: the same memory
    fresh = tensor.ones(1 << 20)
    payload = ForkingPickler.dumps(fresh)
    assert len(payload) < 1000
    assert fresh.is_shared()
    pointer = fresh.data_ptr()
    payloads = [payload, ForkingPickler.dumps(fresh)]
    assert fresh.data_ptr() == pointer
    # Each handle keeps the segment alive until it is received (Note [handles]): receive them.
    assert [ForkingPickler.loads(p).data_ptr() for p in payloads] == [pointer, pointer]


def test_a_non_leaf_tensor_that_requires_grad_is_refused_with_the_fix():
    x = tensor.ones(2, requires_grad=True) * 2
    ours, theirs = mp.Pipe()
    with pytest.raises(RuntimeError, match=r"Cowardly refusing to serialize non-leaf tensor which requires_grad.*"
                                           r"call detach\(\) on the tensor"):
        ours.send(x)
    ours.send(x.detach())
    assert theirs.recv().tolist() == [2.0, 2.0]


def test_plain_pickle_still_copies():
    import pickle

    t = tensor.ones(3)
    back = pickle.loads(pickle.dumps(t))
    assert not t.is_shared() and not back.is_shared() and back.tolist() == [1.0] * 3


@pytest.mark.parametrize("method", METHODS)
def test_receiving_after_the_sender_exited_is_a_clear_error_or_the_data(method, strategy):
    ctx = mp.get_context(method)
    queue = ctx.Queue()
    process = _run(ctx, _put_and_exit, queue)
    _finish(process)
    try:
        received = queue.get(timeout=TIMEOUT)
    except RuntimeError as exc:
        assert ("exited before this process received it" in str(exc)
                or "no longer exists" in str(exc)), str(exc)
    else:  # a named segment may outlive its producer until the watchdog removes it
        assert strategy == "file_system" and received.tolist() == [0.0, 1.0, 2.0]
        del received


def test_fork_is_refused_once_cuda_is_initialised(monkeypatch):
    monkeypatch.setattr(_backend, "cuda_initialized", lambda: True)
    message = r"Cannot start a process with the 'fork' start method: CUDA was already initialised.*'spawn'"
    with pytest.raises(RuntimeError, match=message):
        mp.get_context("fork").Process(target=os.getpid).start()
    with pytest.raises(RuntimeError, match=message):
        mp.get_context("fork").Pool(1)
    mp.set_start_method("fork", force=True)
    try:
        with pytest.raises(RuntimeError, match=message):
            mp.Process(target=os.getpid).start()
    finally:
        mp.set_start_method(None, force=True)


def test_it_is_a_drop_in_for_multiprocessing():
    missing = [name for name in multiprocessing.__all__ if not hasattr(mp, name)]
    assert missing == []
    mp.set_start_method("spawn", force=True)
    try:
        assert mp.get_start_method() == "spawn"
        assert mp.get_context().get_start_method() == "spawn"
    finally:
        mp.set_start_method(None, force=True)
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}


def _double_on_gpu(requests, replies):
    t = requests.get(timeout=TIMEOUT)
    t.mul_(2)
    tensor.cuda.synchronize()
    replies.put(t.device.type)


@pytest.mark.gpu
@pytest.mark.skipif(not tensor.cuda.is_available(), reason="CUDA IPC needs a CUDA device")
def test_a_cuda_tensor_goes_by_ipc_handle_and_writes_are_shared():
    ctx = mp.get_context("spawn")
    requests, replies = ctx.Queue(), ctx.Queue()
    process = _run(ctx, _double_on_gpu, requests, replies)
    base = tensor.ones(8, device="cuda")
    requests.put(base[2:6])  # a view: the offset into the allocation travels too
    assert replies.get(timeout=TIMEOUT) == "cuda"
    _finish(process)
    assert base.tolist() == [1.0, 1.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0]
